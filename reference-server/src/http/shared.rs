//! What every HTTP handler shares: the sessions, the one stateless session
//! and how answers are delivered.
//!
//! Apart from `mod.rs`, which builds it and routes requests to the handlers
//! (`post.rs`, `stateless.rs`), so that the handlers use it without
//! importing their router back.

use super::sessions::Sessions;
use super::stream::Delivery;
use crate::registry::Registry;
use crate::session::Session;
use crate::version::Transport;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

/// What every handler shares.
pub(crate) struct Shared {
    pub delivery: Delivery,
    pub sessions: Sessions,
    pub verbose: bool,
    /// The session every stateless-era request runs on, and its registry
    /// (whose witness is therefore per process).
    stateless: Mutex<Session>,
    pub stateless_registry: Arc<Registry>,
    /// Serial numbers of stateless-era response streams.
    pub next_stream: AtomicU64,
}

impl Shared {
    /// The shared state of a new server, with a fresh stateless session.
    pub(crate) fn new(delivery: Delivery, sessions: Sessions, verbose: bool) -> Self {
        let stateless_registry = Arc::new(Registry::new(verbose));
        let stateless = Session::new(
            Arc::clone(&stateless_registry),
            Transport::StreamableHttp,
            verbose,
        );
        Self {
            delivery,
            sessions,
            verbose,
            stateless: Mutex::new(stateless),
            stateless_registry,
            next_stream: AtomicU64::new(0),
        }
    }

    /// The stateless session, for one request.
    pub(crate) fn stateless_session(&self) -> MutexGuard<'_, Session> {
        self.stateless
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
