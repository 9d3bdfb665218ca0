//! The harness's one source of time. Every instant the engine, the facts it keeps, the load
//! it reads and the scripted targets stamp or compare comes from [`now`], so a test that
//! pauses tokio's clock drives all of them at once.

use std::time::{Duration, Instant};

/// Now, as the harness reads it: tokio's clock. On a running clock that is the instant
/// `std::time::Instant::now()` gives; a test that pauses tokio's time
/// (`#[tokio::test(start_paused = true)]`) drives the engine's time with it, so a scripted
/// target's "at +120 ms" is exact and a two-second wait takes no real time (see
/// `transport::scripted`). Every instant the harness stamps or compares comes from here.
pub fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// How long ago `then` was, on the engine's clock ([`now`]).
pub fn since(then: Instant) -> Duration {
    now().saturating_duration_since(then)
}
