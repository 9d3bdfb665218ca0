//! In-flight requests, their cancellation tokens, and the cancellation witness.
//!
//! This is where the ordering guarantee lives. Every decision that could
//! write a message for a request (its progress, its response) is taken under
//! the same lock that a cancellation takes to fire the token, and the message
//! is pushed to the request's route while the lock is held. So once a cancel
//! has been handled, nothing for that request is queued any more; whatever
//! was queued before sits ahead of any later reply the reader queues (such as
//! a `ping` answer on stdio).
//!
//! Pushing to a route never blocks (see `outbox.rs`), so the lock is only
//! ever held for a check and a push: a writer stuck on a full pipe or a
//! silent HTTP client cannot keep a cancel waiting.
//!
//! Tasks live under the same lock (their table is in `tasks/`, reached
//! through [`Registry::locked`]): a task's progress, its `tasks/cancel` and
//! the end of its work are decided here too, so once a `tasks/cancel` has
//! been answered nothing more is queued for that task's progress token.

use crate::outbox::Route;
use crate::request::Key;
use crate::tasks::table::Table;
use crate::witness::Witness;
use reference_wire::{error_response, response, RequestId, RpcError};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// At most this many requests run at once per registry; more long-running
/// calls are refused with a tool error until some finish.
pub(crate) const MAX_IN_FLIGHT: usize = 10_000;

/// Why a request could not be registered.
pub(crate) enum Refused {
    /// A request with the same id is still in flight.
    Duplicate,
    /// [`MAX_IN_FLIGHT`] requests are running.
    Busy,
}

pub(crate) struct Registry {
    inner: Mutex<Inner>,
    /// Signalled whenever a cancelled handler has finished observing.
    observed: Notify,
    /// Signalled whenever a task became terminal or went away.
    settled: Notify,
    verbose: bool,
}

#[derive(Default)]
struct Inner {
    in_flight: HashMap<Key, Entry>,
    witness: Witness,
    tasks: Table,
}

/// The state under the lock that task code may use (see `tasks/`).
pub(crate) struct Locked<'a> {
    pub tasks: &'a mut Table,
    pub witness: &'a mut Witness,
    in_flight: &'a HashMap<Key, Entry>,
    /// Set when a task became terminal or went away: wakes the `tasks/result`
    /// requests waiting for one once the lock is released.
    settled: bool,
}

impl Locked<'_> {
    /// Whether a request is still in flight: neither answered nor cancelled.
    pub(crate) fn is_in_flight(&self, key: &Key) -> bool {
        self.in_flight.contains_key(key)
    }

    /// Wakes the waiting `tasks/result` requests once the lock is released.
    pub(crate) fn settled(&mut self) {
        self.settled = true;
    }
}

struct Entry {
    token: CancellationToken,
    route: Route,
}

impl Registry {
    pub(crate) fn new(verbose: bool) -> Self {
        Self {
            inner: Mutex::default(),
            observed: Notify::new(),
            settled: Notify::new(),
            verbose,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere must not turn every later request into a panic.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn is_in_flight(&self, key: &Key) -> bool {
        self.lock().in_flight.contains_key(key)
    }

    /// Runs `f` under the lock, with the task table, the witness and a view
    /// of the in-flight requests. What `f` records wakes the waiters it
    /// concerns after the lock is released.
    pub(crate) fn locked<R>(&self, f: impl FnOnce(&mut Locked<'_>) -> R) -> R {
        let mut inner = self.lock();
        let recorded = inner.witness.recorded();
        let Inner {
            in_flight,
            witness,
            tasks,
        } = &mut *inner;
        let mut locked = Locked {
            tasks,
            witness,
            in_flight,
            settled: false,
        };
        let result = f(&mut locked);
        let tasks_settled = locked.settled;
        let observed = inner.witness.recorded() != recorded;
        drop(inner);
        if observed {
            self.observed.notify_waiters();
        }
        if tasks_settled {
            self.settled.notify_waiters();
        }
        result
    }

    /// Signalled whenever a task became terminal or went away; re-check
    /// under [`Registry::locked`] after enabling it.
    pub(crate) fn task_settled(&self) -> &Notify {
        &self.settled
    }

    /// Whether to log cancellations and ignored messages.
    pub(crate) fn verbose(&self) -> bool {
        self.verbose
    }

    /// Registers a new in-flight request whose output goes to `route`.
    pub(crate) fn register(&self, key: Key, route: Route) -> Result<CancellationToken, Refused> {
        let mut inner = self.lock();
        if inner.in_flight.contains_key(&key) {
            return Err(Refused::Duplicate);
        }
        if inner.in_flight.len() >= MAX_IN_FLIGHT {
            return Err(Refused::Busy);
        }
        let token = CancellationToken::new();
        let entry = Entry {
            token: token.clone(),
            route,
        };
        inner.in_flight.insert(key, entry);
        Ok(token)
    }

    /// Fires the token of an in-flight request and ends its own stream, if
    /// it has one. Unknown or finished requests are ignored; the entry is
    /// released at once so the id may be reused.
    pub(crate) fn cancel(&self, key: &Key, reason: Option<&str>) {
        let mut inner = self.lock();
        match inner.in_flight.remove(key) {
            Some(entry) => {
                entry.token.cancel();
                entry.route.close();
                inner.witness.expect();
                if self.verbose {
                    eprintln!(
                        "reference-server: cancelled request {} (reason: {})",
                        describe(key),
                        reason.unwrap_or("none given")
                    );
                }
            }
            None if self.verbose => eprintln!(
                "reference-server: ignored cancellation of request {}: not in flight (unknown or already answered)",
                describe(key)
            ),
            None => {}
        }
    }

    /// Fires every in-flight token and drops every task (shutdown, or the
    /// end of an HTTP session).
    pub(crate) fn cancel_all(&self, reason: &str) {
        let mut inner = self.lock();
        let Inner { tasks, witness, .. } = &mut *inner;
        tasks.clear(witness);
        let drained: Vec<_> = inner.in_flight.drain().collect();
        for _ in &drained {
            inner.witness.expect();
        }
        for (key, entry) in drained {
            entry.token.cancel();
            entry.route.close();
            if self.verbose {
                eprintln!(
                    "reference-server: cancelled request {} (reason: {reason})",
                    describe(&key)
                );
            }
        }
        drop(inner);
        self.observed.notify_waiters();
        self.settled.notify_waiters();
    }

    /// Queues a progress notification only while the request is not cancelled.
    pub(crate) fn progress(&self, token: &CancellationToken, route: &Route, line: String) {
        let _inner = self.lock();
        if !token.is_cancelled() {
            route.notify(line);
        }
    }

    /// Ends a handler: if it was cancelled, records that it observed the
    /// cancellation (under `id`) and writes nothing; otherwise releases the
    /// request and queues its response.
    pub(crate) fn finish(
        &self,
        key: &Key,
        id: &RequestId,
        token: &CancellationToken,
        result: Value,
    ) {
        self.finish_with(key, id, token, Ok(result));
    }

    /// [`Registry::finish`] for a handler whose answer may be an error.
    pub(crate) fn finish_with(
        &self,
        key: &Key,
        id: &RequestId,
        token: &CancellationToken,
        outcome: Result<Value, RpcError>,
    ) {
        let mut inner = self.lock();
        if token.is_cancelled() {
            inner.witness.record(id.to_value());
            drop(inner);
            self.observed.notify_waiters();
        } else if let Some(entry) = inner.in_flight.remove(key) {
            entry.route.answer(match outcome {
                Ok(result) => response(id, result),
                Err(error) => error_response(Some(id), &error),
            });
        }
    }

    /// The witness list, once every cancelled handler has observed its cancel.
    pub(crate) async fn witness(&self) -> Vec<Value> {
        loop {
            let notified = self.observed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let inner = self.lock();
                if let Some(ids) = inner.witness.list() {
                    return ids;
                }
            }
            notified.await;
        }
    }
}

fn describe(key: &Key) -> String {
    match key {
        Key::Id(id) => id.to_string(),
        Key::Stream(serial) => format!("on response stream #{serial}"),
    }
}
