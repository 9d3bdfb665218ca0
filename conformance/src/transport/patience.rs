//! How long a write to a target may wait for room before the target counts as no longer
//! reading: the write patience, stretched for a busy machine. One rule for every transport
//! that writes to a pipe (a real target's stdin, a scripted target's), so that a test of the
//! rule is a test of what a real run does.

use crate::load::source::Load;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant as Deadline;

/// Runs `write` until it is done, or until it has waited `patience` for room: then the
/// machine's CPU pressure is read (from `load`), and a write that a busy machine explains
/// waits on until the stretched patience. `Err` with the time it was allowed once it gives
/// up: the target stopped reading.
pub async fn within<F: Future>(
    write: F,
    patience: Duration,
    load: &Load,
) -> Result<F::Output, Duration> {
    let mut write = std::pin::pin!(write);
    let began = Deadline::now();
    let mut allowed = patience;
    loop {
        match tokio::time::timeout_at(began + allowed, write.as_mut()).await {
            Ok(done) => return Ok(done),
            Err(_) => {
                // The machine's pressure is read only once a write has waited that long.
                let stretched = load.stretched(patience);
                if stretched > allowed {
                    allowed = stretched;
                    continue;
                }
                return Err(allowed);
            }
        }
    }
}
