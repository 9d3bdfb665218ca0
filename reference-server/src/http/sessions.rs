//! HTTP sessions of the handshake era (2025-03-26 … 2025-11-25).
//!
//! `initialize` mints a session id; every later request names it in
//! `Mcp-Session-Id` (HTTP-16). A session is the same [`Session`] the stdio
//! transport runs, with its own registry, so request ids, cancels and the
//! `cancellations` witness are all scoped to it. The table is bounded:
//! at most `max` sessions, and a session nobody has used for `idle` and
//! that has no open response stream is ended, so clients that vanish
//! without DELETE cannot fill it.

use crate::ids;
use crate::registry::Registry;
use crate::session::Session;
use crate::version::Transport;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One client's session.
pub(crate) struct HttpSession {
    /// The value of `Mcp-Session-Id`: 32 hex digits from the OS's CSPRNG.
    pub id: String,
    pub registry: Arc<Registry>,
    session: Mutex<Session>,
    last_used: Mutex<Instant>,
    open_streams: AtomicUsize,
}

impl HttpSession {
    /// The session, for one message; the lock is held only while it is handled.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Session> {
        self.session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Notes that the client used the session just now.
    pub(crate) fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// Counts a response stream as open until the returned guard is dropped.
    pub(crate) fn stream_opened(self: &Arc<Self>) -> OpenStream {
        self.open_streams.fetch_add(1, Ordering::AcqRel);
        OpenStream(Arc::clone(self))
    }

    fn is_idle(&self, idle: Duration) -> bool {
        self.open_streams.load(Ordering::Acquire) == 0 && lock(&self.last_used).elapsed() >= idle
    }
}

/// Keeps a session from being reaped while one of its streams is open.
pub(crate) struct OpenStream(Arc<HttpSession>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::AcqRel);
        self.0.touch();
    }
}

/// The table is full of sessions in use.
pub(crate) struct Full;

pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Arc<HttpSession>>>,
    max: usize,
    idle: Duration,
    verbose: bool,
}

impl Sessions {
    pub(crate) fn new(max: usize, idle: Duration, verbose: bool) -> Self {
        Self {
            map: Mutex::default(),
            max,
            idle,
            verbose,
        }
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    pub(crate) fn idle(&self) -> Duration {
        self.idle
    }

    /// Starts a session with a fresh id, ending idle ones first if the table is full.
    pub(crate) fn create(&self) -> Result<Arc<HttpSession>, Full> {
        if lock(&self.map).len() >= self.max {
            self.reap_idle();
        }
        let mut map = lock(&self.map);
        if map.len() >= self.max {
            return Err(Full);
        }
        let registry = Arc::new(Registry::new(self.verbose));
        let session = Session::new(
            Arc::clone(&registry),
            Transport::StreamableHttp,
            self.verbose,
        );
        let session = Arc::new(HttpSession {
            id: ids::mint(),
            registry,
            session: Mutex::new(session),
            last_used: Mutex::new(Instant::now()),
            open_streams: AtomicUsize::new(0),
        });
        map.insert(session.id.clone(), Arc::clone(&session));
        Ok(session)
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        lock(&self.map).get(id).cloned()
    }

    /// Ends a session: its in-flight requests are cancelled and its id is
    /// answered 404 from now on. `false` if there was no such session.
    pub(crate) fn end(&self, id: &str, reason: &str) -> bool {
        let ended = lock(&self.map).remove(id);
        match ended {
            Some(session) => {
                session.registry.cancel_all(reason);
                if self.verbose {
                    eprintln!("reference-server: session {id} ended ({reason})");
                }
                true
            }
            None => false,
        }
    }

    /// Ends every session (server shutdown).
    pub(crate) fn end_all(&self, reason: &str) {
        let ids: Vec<String> = lock(&self.map).keys().cloned().collect();
        for id in ids {
            self.end(&id, reason);
        }
    }

    /// Ends the sessions unused for `idle` that have no open stream.
    pub(crate) fn reap_idle(&self) {
        let idle: Vec<String> = lock(&self.map)
            .values()
            .filter(|s| s.is_idle(self.idle))
            .map(|s| s.id.clone())
            .collect();
        for id in idle {
            self.end(&id, "idle");
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
