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
//!
//! [`Shared`] and [`Lent`] hold any [`Transport`] (a pool's are [`Stdio`]), so that the drain
//! that decides whether a process is handed on is tested against a scripted target too.

use crate::case_report::SharedProcess;
use crate::engine::server::{Opening, SharedOpening};
use crate::era::ProtocolVersion;
use crate::error::StartError;
use crate::transport::process::{Launch, Process as Child};
use crate::transport::stdio::Stdio;
use crate::transport::Transport;
use crate::versions::Handed;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

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
    idle: HashMap<ProtocolVersion, Vec<Shared>>,
    /// How many processes are live (idle or lent), by version.
    live: HashMap<ProtocolVersion, usize>,
    started: u32,
    /// Processes ended and yet to be reaped.
    ended: Vec<Stdio>,
}

/// One shared process and its one session, over its transport (a pool's: [`Stdio`]).
pub struct Shared<T = Stdio> {
    pub(super) stdio: T,
    pub(super) process: SharedProcess,
    pub(super) opening: SharedOpening,
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
    pub fn borrow(&self, version: ProtocolVersion) -> Result<Shared, StartError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(shared) = state.idle.get_mut(&version).and_then(Vec::pop) {
                return Ok(shared);
            }
            if state.live.get(&version).copied().unwrap_or(0) < self.most {
                break;
            }
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        *state.live.entry(version).or_default() += 1;
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
        *state.live.entry(handed.version).or_default() += 1;
        let process = SharedProcess {
            ordinal: state.started,
            pid: handed.io.process_group().unwrap_or(0),
        };
        let opening = Opening::of_probe(handed.request, handed.answer, handed.version.to_string());
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
    pub fn give_back(&self, shared: Option<Shared>, clean: bool, version: ProtocolVersion) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match shared {
            Some(shared) if clean && !shared.stdio.finished() && shared.stdio.input_open() => {
                state.idle.entry(version).or_default().push(shared);
            }
            other => {
                if let Some(live) = state.live.get_mut(&version) {
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

impl Pool {
    /// How many processes of `version` wait idle to be lent.
    #[cfg(test)]
    pub(super) fn idle(&self, version: ProtocolVersion) -> usize {
        let state = self.state.lock().unwrap();
        state.idle.get(&version).map_or(0, Vec::len)
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

impl<T: Transport> Shared<T> {
    /// A process reached over `io`, whose session nobody has opened yet (a pool starts its
    /// own; tests hand in a scripted target).
    pub fn new(io: T, process: SharedProcess) -> Shared<T> {
        Shared {
            stdio: io,
            process,
            opening: SharedOpening::default(),
        }
    }

    /// Which process it is.
    pub fn process(&self) -> SharedProcess {
        self.process
    }

    /// Its transport: whether it still serves and reads (what a pool asks before it keeps it).
    pub fn io(&self) -> &T {
        &self.stdio
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
        let probing = crate::versions::probe_handing(io, ProtocolVersion::V2025_11_25, wait);
        let (_, handed) = runtime.block_on(probing);
        let handed = handed.expect("a clean session is handed over");
        let pid = handed.io.process_group();
        pool.adopt(handed);
        let shared = pool.borrow(ProtocolVersion::V2025_11_25).unwrap();
        assert_eq!(shared.process().ordinal, 1);
        assert_eq!(Some(shared.process().pid), pid);
        let opening = shared.opening.lock().unwrap().clone();
        let opening = format!("{:?}", opening.expect("the probe's opening"));
        assert!(opening.contains("the version probe"), "{opening}");
        let started = |pool: &Pool| pool.state.lock().unwrap().started;
        assert_eq!(started(&pool), 1, "no other process was started");
        pool.give_back(Some(shared), true, ProtocolVersion::V2025_11_25);
        // At another version, the next case's process is a new one.
        let other = pool.borrow(ProtocolVersion::V2026_07_28).unwrap();
        assert_eq!(other.process().ordinal, 2);
        pool.give_back(Some(other), false, ProtocolVersion::V2026_07_28);
    }
}
