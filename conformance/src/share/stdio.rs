//! Sharing over stdio: a stdio server has one session, opened once, and the cases that share
//! it take turns on it. Its first case opens it (`initialize` and `initialized`, or the
//! 2026-07-28 era's `server/discover`) as a case of its own would; the later cases adopt that
//! opening (see [`crate::engine::server::Opening`]) and go on in the session.
//!
//! A [`Pool`] keeps the shared processes, one session each, for each protocol version the run
//! asks for: a case borrows an idle one (or one is started, up to [`Pool::most`] of a version
//! at a time)
//! and has it to itself until it ends ([`Lent`]). A process whose case did not pass cleanly,
//! or that stopped serving, is ended, and the next case gets a new one: what one case did to
//! the server is never the next case's problem. The processes run on a runtime of the pool's
//! own, so their output is read whichever worker borrows them, and between cases.

use crate::case_report::{Placement, SharedProcess};
use crate::engine::server::{Opening, ServerTarget, SharedOpening};
use crate::era::ProtocolVersion;
use crate::error::StartError;
use crate::transport::process::{Launch, Process as Child, TargetLog};
use crate::transport::stdio::Stdio;
use crate::transport::{Channel, Event, SendError, Transport};
use crate::versions::Handed;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// The shared stdio processes of one run.
pub struct Pool {
    launch: Launch,
    patience: Duration,
    /// Reads the processes' output, whichever worker has them.
    runtime: tokio::runtime::Runtime,
    most: usize,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Default)]
struct State {
    /// Idle processes by the protocol version their session was opened at.
    idle: HashMap<String, Vec<Shared>>,
    /// How many processes are live (idle or lent), by version.
    live: HashMap<String, usize>,
    started: u32,
    /// Processes ended and yet to be reaped.
    ended: Vec<Stdio>,
}

/// One shared process and its one session.
pub struct Shared {
    stdio: Stdio,
    process: SharedProcess,
    opening: SharedOpening,
}

impl Pool {
    /// A pool for `launch` that keeps at most `most` processes at a time.
    pub fn new(launch: &Launch, patience: Duration, most: usize) -> Result<Pool, StartError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("shared-stdio")
            .enable_all()
            .build()
            .map_err(StartError::Runtime)?;
        Ok(Pool {
            launch: launch.clone(),
            patience,
            runtime,
            most: most.max(1),
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
        })
    }

    /// How many processes of one version may be live at a time.
    pub fn most(&self) -> usize {
        self.most
    }

    /// A process whose session is (or is to be) opened at `version`, for one case: an idle
    /// one, a new one, or, when [`Pool::most`] are lent, the first given back.
    pub fn borrow(&self, version: &str) -> Result<Shared, StartError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(shared) = state.idle.get_mut(version).and_then(Vec::pop) {
                return Ok(shared);
            }
            if state.live.get(version).copied().unwrap_or(0) < self.most {
                break;
            }
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        *state.live.entry(version.into()).or_default() += 1;
        state.started += 1;
        let ordinal = state.started;
        drop(state);
        match self.spawn() {
            Ok(stdio) => {
                let pid = stdio.process_group().unwrap_or(0);
                Ok(Shared {
                    stdio,
                    process: SharedProcess { ordinal, pid },
                    opening: SharedOpening::default(),
                })
            }
            Err(e) => {
                self.give_back(None, false, version);
                Err(StartError::Spawn {
                    target: crate::transport::process::display_argv(&self.launch.argv),
                    source: e,
                })
            }
        }
    }

    /// Starts a process on the pool's runtime, whose output is read whoever has it: the
    /// version probe starts its own this way, so it can hand them over ([`Pool::adopt`]).
    pub fn spawn(&self) -> std::io::Result<Stdio> {
        let _inside = self.runtime.enter();
        Stdio::spawn(&self.launch, self.patience)
    }

    /// Takes a process whose session the version probe opened (see [`Handed`]): it serves
    /// the cases at its version as a process whose session a case opened does, its start
    /// paid once.
    pub fn adopt(&self, handed: Handed<Stdio>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.started += 1;
        *state.live.entry(handed.version.clone()).or_default() += 1;
        let process = SharedProcess {
            ordinal: state.started,
            pid: handed.io.process_group().unwrap_or(0),
        };
        let opening = Opening::of_probe(handed.request, handed.answer, handed.version.clone());
        let shared = Shared {
            stdio: handed.io,
            process,
            opening: Arc::new(Mutex::new(Some(opening))),
        };
        state.idle.entry(handed.version).or_default().push(shared);
        drop(state);
        self.freed.notify_all();
    }

    /// Takes a process back after a case: kept for the next case at `version` when the case
    /// left it clean (`clean`, and it still serves), ended otherwise.
    pub fn give_back(&self, shared: Option<Shared>, clean: bool, version: &str) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match shared {
            Some(shared) if clean && !shared.stdio.finished() && shared.stdio.input_open() => {
                state.idle.entry(version.into()).or_default().push(shared);
            }
            other => {
                if let Some(live) = state.live.get_mut(version) {
                    *live -= 1;
                }
                if let Some(shared) = other {
                    shared.stdio.process().map(Child::kill_group);
                    state.ended.push(shared.stdio);
                }
            }
        }
        drop(state);
        self.freed.notify_all();
    }
}

impl Drop for Pool {
    /// Ends every process, and waits until each is reaped.
    fn drop(&mut self) {
        let state = std::mem::take(self.state.get_mut().unwrap_or_else(|e| e.into_inner()));
        let mut all = state.ended;
        all.extend(state.idle.into_values().flatten().map(|s| s.stdio));
        self.runtime.block_on(async {
            for mut stdio in all {
                stdio.shutdown(Duration::ZERO).await;
            }
        });
    }
}

impl Shared {
    /// Which process it is.
    pub fn process(&self) -> SharedProcess {
        self.process
    }

    /// The transport and side a case runs with on it; `back` gets the process when the case
    /// ends.
    pub fn lend(self, version: &str, back: Returned) -> (Lent, ServerTarget, Placement) {
        let side = ServerTarget::sharing(self.opening.clone());
        let placement = Placement::Shared(self.process);
        let probe = ProtocolVersion::parse(version).map(|v| v.probe(DRAIN_ID));
        let lent = Lent {
            shared: Some(self),
            back,
            since: Instant::now(),
            probe,
            draining: false,
            drained: false,
            unjudged: false,
        };
        (lent, side, placement)
    }
}

/// Where a [`Lent`] process goes back when its case ends.
pub type Returned = Arc<Mutex<Option<Shared>>>;

/// The id of the harness's last request to a lent process, whose answer ends the case's
/// drain. It carries the mark of no run, so a late answer is left out of every later case.
const DRAIN_ID: &str = "drained~0";

/// How long a case that ended without its drain waits for the drain's answer, after which
/// the process is not kept.
const LAST_DRAIN: Duration = Duration::from_secs(2);

/// A shared process lent to one case: its stdin stays open when the case ends, and the
/// process goes back to the pool. In the case's drain the harness asks the era's `ping`
/// (`server/discover` in 2026-07-28): its answer shows that the server read everything
/// before it and leaves the session clean for the next case; the drain still lasts as long
/// as on a target of its own, so a late message of the case is seen in the case.
pub struct Lent {
    shared: Option<Shared>,
    back: Returned,
    since: Instant,
    probe: Option<Value>,
    draining: bool,
    drained: bool,
    /// The drain runs after the case ended, judged by nothing: it ends with its answer.
    unjudged: bool,
}

impl Lent {
    fn stdio(&self) -> &Stdio {
        &self.shared.as_ref().expect("lent until shut down").stdio
    }

    fn stdio_mut(&mut self) -> &mut Stdio {
        &mut self.shared.as_mut().expect("lent until shut down").stdio
    }

    /// Whether a message is the answer to the drain's request.
    fn ends_drain(&self, bytes: &[u8]) -> bool {
        self.draining
            && serde_json::from_slice::<Value>(bytes)
                .is_ok_and(|m| m.get("method").is_none() && m["id"] == DRAIN_ID)
    }
}

impl Transport for Lent {
    async fn send(
        &mut self,
        bytes: &[u8],
        reply_to: Option<Channel>,
    ) -> Result<Channel, SendError> {
        self.stdio_mut().send(bytes, reply_to).await
    }

    async fn next(&mut self, deadline: Deadline) -> Option<(Instant, Event)> {
        // Past the deadline nothing more is read, however fast the target writes (a target
        // that floods and never answers the drain's request ends the drain here).
        if Deadline::now() >= deadline {
            return None;
        }
        if let Some(probe) = self.draining.then(|| self.probe.take()).flatten() {
            // A request that cannot be written ends the drain; the process is not kept.
            if self
                .stdio_mut()
                .send(probe.to_string().as_bytes(), None)
                .await
                .is_err()
            {
                self.drained = true;
                self.stdio_mut().close_input();
                return None;
            }
        }
        loop {
            let (at, event) = self.stdio_mut().next(deadline).await?;
            match &event {
                // The answer proves the session clean; what still comes before the deadline
                // is the case's as much as on a target of its own, which gets as long to exit.
                Event::Message { bytes, .. } if self.ends_drain(bytes) => {
                    self.drained = true;
                    // A drain after the case is over ends with the answer: nothing after it
                    // is judged.
                    if self.unjudged {
                        return None;
                    }
                }
                _ => return Some((at, event)),
            }
            if Deadline::now() >= deadline {
                return None;
            }
        }
    }

    fn finished(&self) -> bool {
        self.stdio().finished()
    }

    fn ordered(&self) -> bool {
        true
    }

    fn abort(&mut self, _: Channel) -> bool {
        false
    }

    /// The case is over: instead of closing stdin, the drain's request (sent by the next
    /// [`Transport::next`]).
    fn close_input(&mut self) {
        self.draining = true;
    }

    fn input_open(&self) -> bool {
        !self.draining && self.stdio().input_open()
    }

    fn started(&self) -> Instant {
        self.since
    }

    fn process(&self) -> Option<&Child> {
        self.stdio().process()
    }

    fn fresh(&self) -> bool {
        false
    }

    async fn shutdown(&mut self, _grace: Duration) -> TargetLog {
        if self.shared.is_none() {
            return TargetLog::default();
        }
        if !self.drained {
            // A case that ended without its drain (a skip) is drained here, unjudged, as a
            // target of its own would be ended unjudged.
            self.draining = true;
            self.unjudged = true;
            let until = Deadline::now() + LAST_DRAIN;
            while !self.drained && self.next(until).await.is_some() {}
        }
        let mut shared = self.shared.take().expect("checked above");
        if !self.drained {
            // The drain's answer did not come: the session is not clean for another case.
            shared.stdio.close_input();
        }
        let log = shared
            .stdio
            .process()
            .map(Child::take_log)
            .unwrap_or_default();
        *self.back.lock().unwrap_or_else(|e| e.into_inner()) = Some(shared);
        log
    }
}

impl Drop for Lent {
    /// A case that unwinds leaves its process to be ended, not kept.
    fn drop(&mut self) {
        if let Some(mut shared) = self.shared.take() {
            shared.stdio.close_input();
            *self.back.lock().unwrap_or_else(|e| e.into_inner()) = Some(shared);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probes_process_serves_the_first_case_at_its_version() {
        let launch = crate::versions::handover::tests::server("2025-11-25", "");
        let pool = Pool::new(&launch, Duration::from_secs(5), 3).unwrap();
        let io = pool.spawn().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let wait = Duration::from_secs(10);
        let probing = crate::versions::probe_handing(io, "2025-11-25", wait);
        let (_, handed) = runtime.block_on(probing);
        let handed = handed.expect("a clean session is handed over");
        let pid = handed.io.process_group();
        pool.adopt(handed);
        let shared = pool.borrow("2025-11-25").unwrap();
        assert_eq!(shared.process().ordinal, 1);
        assert_eq!(Some(shared.process().pid), pid);
        let opening = shared.opening.lock().unwrap().clone();
        let opening = format!("{:?}", opening.expect("the probe's opening"));
        assert!(opening.contains("the version probe"), "{opening}");
        let started = |pool: &Pool| pool.state.lock().unwrap().started;
        assert_eq!(started(&pool), 1, "no other process was started");
        pool.give_back(Some(shared), true, "2025-11-25");
        // At another version, the next case's process is a new one.
        let other = pool.borrow("2026-07-28").unwrap();
        assert_eq!(other.process().ordinal, 2);
        pool.give_back(Some(other), false, "2026-07-28");
    }

    #[test]
    fn a_case_that_ended_without_its_drain_is_drained_until_the_answer_only() {
        // A server that answers the drain's `ping` at once, and then says nothing.
        let pong = format!(r#"{{"jsonrpc":"2.0","id":"{DRAIN_ID}","result":{{}}}}"#);
        let script = format!("read l; echo '{pong}'; cat >/dev/null");
        let launch = Launch::argv(vec!["sh".into(), "-c".into(), script]);
        let pool = Pool::new(&launch, Duration::from_secs(5), 1).unwrap();
        let shared = pool.borrow("2025-11-25").unwrap();
        let back = Returned::default();
        let (mut lent, _, _) = shared.lend("2025-11-25", back.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let began = Instant::now();
        runtime.block_on(lent.shutdown(Duration::ZERO));
        assert!(
            began.elapsed() < LAST_DRAIN,
            "the drain ended with its answer, not {:?} later",
            began.elapsed()
        );
        let returned = back.lock().unwrap().take().expect("given back");
        assert!(returned.stdio.input_open(), "drained clean: kept");
        pool.give_back(Some(returned), true, "2025-11-25");
        assert_eq!(pool.state.lock().unwrap().idle["2025-11-25"].len(), 1);
    }
}
