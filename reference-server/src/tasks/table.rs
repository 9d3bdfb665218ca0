//! The tasks of one registry: their state, their limits, and every change
//! of state.
//!
//! Plain data, kept under the registry's lock (`registry.rs`): whoever
//! holds [`Locked`](crate::registry::Locked) decides, so a task's progress,
//! its cancel and the end of its work never cross. Nothing here grows
//! without bound: at most [`MAX_TASKS`] tasks, each kept until its `ttl`
//! from creation has passed, and the oldest finished task makes room for a
//! new one when the table is full.

use crate::ids;
use crate::outbox::Route;
use crate::request::Key;
use crate::witness::Witness;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// At most this many tasks are kept per registry (per stdio process, per
/// HTTP session, and once for the stateless HTTP era of a process).
pub(crate) const MAX_TASKS: usize = 1_000;
/// The `ttl` of a task whose request named none (2025-11-25), and of every
/// task of the extension (2026-07-28), whose requests cannot name one.
pub(crate) const DEFAULT_TTL_MS: u64 = 60_000;
/// Requested `ttl` values are raised to this…
pub(crate) const MIN_TTL_MS: u64 = 1_000;
/// …and lowered to this (tasks.mdx: receivers MAY override the `ttl`).
pub(crate) const MAX_TTL_MS: u64 = 600_000;
/// The `pollInterval` suggested in every task.
pub(crate) const POLL_INTERVAL_MS: u64 = 100;
/// `tasks/list` returns at most this many tasks per page.
pub(crate) const PAGE_SIZE: usize = 50;

/// Where a task's work stands.
pub(crate) enum State {
    Working,
    /// The work ended with this tool result (`isError` included).
    Done(Value),
    /// `tasks/cancel` arrived while it was working; it stays cancelled.
    Cancelled,
}

/// One task.
pub(crate) struct Task {
    /// 32 hex digits from the OS's CSPRNG (`ids.rs`).
    pub id: String,
    pub state: State,
    /// ISO 8601, UTC, milliseconds.
    pub created_at: String,
    pub last_updated_at: String,
    pub ttl_ms: u64,
    expires: Instant,
    /// Fired by `tasks/cancel` and by removal: the work stops.
    token: CancellationToken,
    /// `tasks/cancel` fired the token and the work has not yet recorded in
    /// the witness that it observed it.
    observation_due: bool,
    /// Whether the work stops when the token fires (`LongTool::stops_on_cancel`).
    stops_on_cancel: bool,
    /// Where the work's progress goes, if anywhere.
    progress: Option<ProgressRoute>,
}

/// A route for a task's progress: stdout (no owner), or the response stream
/// of a `tasks/result` request (its owner) while that request is in flight.
pub(crate) struct ProgressRoute {
    pub route: Route,
    pub owner: Option<Key>,
}

impl Task {
    pub(crate) fn is_working(&self) -> bool {
        matches!(self.state, State::Working)
    }

    /// When the task's `ttl` runs out.
    pub(crate) fn expires(&self) -> Instant {
        self.expires
    }

    /// Whether the work stops when the task is cancelled.
    pub(crate) fn stops_on_cancel(&self) -> bool {
        self.stops_on_cancel
    }

    pub(crate) fn progress(&self) -> Option<&ProgressRoute> {
        self.progress.as_ref()
    }

    /// Sends the work's progress to `route` from now on.
    pub(crate) fn set_progress(&mut self, route: ProgressRoute) {
        self.progress = Some(route);
    }

    fn touch(&mut self) {
        self.last_updated_at = now();
    }
}

/// The table is full of working tasks.
pub(crate) struct Full;

/// Why `tasks/cancel` changed nothing.
pub(crate) enum NotCancelled {
    Unknown,
    /// Already completed or cancelled.
    Terminal,
}

/// A `tasks/list` cursor that this table never gave out.
pub(crate) struct BadCursor;

/// Tasks in creation order, each under a serial number (which is also what
/// a `tasks/list` cursor names).
#[derive(Default)]
pub(crate) struct Table {
    tasks: BTreeMap<u64, Task>,
    serials: HashMap<String, u64>,
    next: u64,
}

impl Table {
    /// Creates a working task kept for `ttl_ms` from now, whose progress
    /// goes to `progress`; returns it and the token its work runs under.
    pub(crate) fn create(
        &mut self,
        ttl_ms: u64,
        progress: Option<ProgressRoute>,
        stops_on_cancel: bool,
        witness: &mut Witness,
    ) -> Result<(&Task, CancellationToken), Full> {
        self.sweep(witness);
        if self.tasks.len() >= MAX_TASKS {
            let oldest_finished = self
                .tasks
                .iter()
                .find(|(_, task)| !task.is_working())
                .map(|(serial, _)| *serial);
            let serial = oldest_finished.ok_or(Full)?;
            self.remove_serial(serial, witness);
        }
        let created_at = now();
        let token = CancellationToken::new();
        let task = Task {
            id: ids::mint(),
            state: State::Working,
            last_updated_at: created_at.clone(),
            created_at,
            ttl_ms,
            expires: Instant::now() + Duration::from_millis(ttl_ms),
            token: token.clone(),
            observation_due: false,
            stops_on_cancel,
            progress,
        };
        let serial = self.next;
        self.next += 1;
        self.serials.insert(task.id.clone(), serial);
        let task = self.tasks.entry(serial).or_insert(task);
        Ok((task, token))
    }

    pub(crate) fn get(&self, id: &str) -> Option<&Task> {
        self.tasks.get(self.serials.get(id)?)
    }

    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut Task> {
        self.tasks.get_mut(self.serials.get(id)?)
    }

    /// `tasks/cancel`: a working task becomes cancelled for good and its
    /// work's token fires; the witness expects the work to observe it.
    pub(crate) fn cancel(
        &mut self,
        id: &str,
        witness: &mut Witness,
    ) -> Result<&Task, NotCancelled> {
        self.sweep(witness);
        let task = self.get_mut(id).ok_or(NotCancelled::Unknown)?;
        if !task.is_working() {
            return Err(NotCancelled::Terminal);
        }
        task.state = State::Cancelled;
        task.touch();
        task.token.cancel();
        // Work that cannot be stopped will never observe it: nothing to
        // wait for, nothing to list.
        if task.stops_on_cancel {
            task.observation_due = true;
            witness.expect();
        }
        Ok(task)
    }

    /// The work ended with `result`: a working task is done. Returns whether
    /// its state changed (a cancelled one stays cancelled).
    pub(crate) fn finish(&mut self, id: &str, result: Value, witness: &mut Witness) -> bool {
        let Some(task) = self.get_mut(id) else {
            return false;
        };
        match task.state {
            State::Working => {
                task.state = State::Done(result);
                task.touch();
                true
            }
            // The cancel came first: the task stays cancelled (TSK-04). Work
            // that stops on cancel and ends after it counts as observing it,
            // as a request's handler does (`Registry::finish`); work that
            // cannot be stopped was never expected to.
            State::Cancelled | State::Done(_) => {
                Self::observed(task, witness);
                false
            }
        }
    }

    /// The work stopped on its token: if `tasks/cancel` fired it, the
    /// witness records the task id.
    pub(crate) fn stopped(&mut self, id: &str, witness: &mut Witness) {
        if let Some(task) = self.get_mut(id) {
            Self::observed(task, witness);
        }
    }

    fn observed(task: &mut Task, witness: &mut Witness) {
        if std::mem::take(&mut task.observation_due) {
            witness.record(Value::String(task.id.clone()));
        }
    }

    /// Removes the task (its `ttl` ran out); returns whether it was there.
    pub(crate) fn remove(&mut self, id: &str, witness: &mut Witness) -> bool {
        match self.serials.get(id).copied() {
            Some(serial) => {
                self.remove_serial(serial, witness);
                true
            }
            None => false,
        }
    }

    /// Removes every task whose `ttl` has run out.
    pub(crate) fn sweep(&mut self, witness: &mut Witness) {
        let now = Instant::now();
        let expired: Vec<u64> = self
            .tasks
            .iter()
            .filter(|(_, task)| task.expires <= now)
            .map(|(serial, _)| *serial)
            .collect();
        for serial in expired {
            self.remove_serial(serial, witness);
        }
    }

    /// Drops every task and stops all work (the session is over).
    pub(crate) fn clear(&mut self, witness: &mut Witness) {
        let serials: Vec<u64> = self.tasks.keys().copied().collect();
        for serial in serials {
            self.remove_serial(serial, witness);
        }
    }

    /// A removed task's work stops (work that cannot be stopped ends with
    /// its `ttl`). A cancel it had yet to observe is recorded now: its token
    /// has fired, so it stops whatever happens.
    fn remove_serial(&mut self, serial: u64, witness: &mut Witness) {
        if let Some(mut task) = self.tasks.remove(&serial) {
            self.serials.remove(&task.id);
            task.token.cancel();
            Self::observed(&mut task, witness);
        }
    }

    /// One page of `tasks/list` after `cursor`, and the cursor of the next
    /// page if there is one.
    pub(crate) fn page(
        &mut self,
        cursor: Option<&str>,
        witness: &mut Witness,
    ) -> Result<(Vec<&Task>, Option<String>), BadCursor> {
        self.sweep(witness);
        let start = match cursor {
            None => 0,
            Some(cursor) => cursor
                .parse::<u64>()
                .ok()
                .filter(|serial| *serial <= self.next)
                .ok_or(BadCursor)?,
        };
        let mut tasks = self.tasks.range(start..);
        let page: Vec<&Task> = tasks.by_ref().take(PAGE_SIZE).map(|(_, t)| t).collect();
        let next = tasks.next().map(|(serial, _)| serial.to_string());
        Ok((page, next))
    }
}

/// The current time as ISO 8601 (UTC, milliseconds), as `createdAt` and
/// `lastUpdatedAt` need it.
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Clamps a requested `ttl` (milliseconds) to what this server keeps.
pub(crate) fn clamp_ttl(requested: Option<f64>) -> u64 {
    match requested {
        None => DEFAULT_TTL_MS,
        // Saturating: NaN is 0, and huge values are u64::MAX, both clamped.
        Some(ms) => (ms as u64).clamp(MIN_TTL_MS, MAX_TTL_MS),
    }
}
