//! The engine's owned parts: each keeps one kind of state of a run, with its own invariants
//! and tests, and none reaches into another. The engine's step loop holds one of each.
//!
//! - [`played`]: the case and its options, read-only;
//! - [`position`]: where the steps are: the case line, the pattern awaited and its `! arrives`
//!   window ([`arrivals`], which it holds), the captures;
//! - [`opening`]: whether the session's opening completed, and the version agreed;
//! - [`findings`]: what went wrong, each once, bounded;
//! - [`clock`]: how busy the machine is and when things happened;
//! - [`diff`]: the expected side of the case's diff, and what blessing writes back;
//! - [`liveness`]: whether the target can still be talked to;
//! - [`proofs`]: what the target is proven to have read;
//! - [`arrivals`]: `! arrives` windows (held by the position);
//! - [`budget`]: what a case keeps of its transcript;
//! - [`transcript`]: what was exchanged, kept within its budget.

pub mod arrivals;
pub mod budget;
pub mod clock;
pub mod diff;
pub mod findings;
pub mod liveness;
pub mod opening;
pub mod played;
pub mod position;
pub mod proofs;
pub mod transcript;
