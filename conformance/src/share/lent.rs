//! A shared stdio process lent to one case: the case's transport while it runs, and the drain
//! that decides, when it ends, whether the process is handed on to the next case or ended.
//! The drain asks the era's `ping` after the case and reads on until its answer (see [`Lent`]).

use super::stdio::Shared;
use crate::case_report::Placement;
use crate::engine::server::ServerTarget;
use crate::era::ProtocolVersion;
use crate::time as clock;
use crate::transport::process::{Process as Child, TargetLog};
use crate::transport::stdio::Stdio;
use crate::transport::{Channel, Event, SendError, Transport};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

impl<T: Transport> Shared<T> {
    /// The transport and side a case runs with on it; `back` gets the process when the case
    /// ends.
    pub fn lend(
        self,
        version: ProtocolVersion,
        back: Returned<T>,
    ) -> (Lent<T>, ServerTarget, Placement) {
        let side = ServerTarget::sharing(self.opening.clone());
        let placement = Placement::Shared(self.process);
        let probe = Some(version.probe(DRAIN_ID));
        let lent = Lent {
            shared: Some(self),
            back,
            since: clock::now(),
            probe,
            draining: false,
            drained: false,
            unjudged: false,
        };
        (lent, side, placement)
    }
}

/// Where a [`Lent`] process goes back when its case ends.
pub type Returned<T = Stdio> = Arc<Mutex<Option<Shared<T>>>>;

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
pub struct Lent<T: Transport = Stdio> {
    shared: Option<Shared<T>>,
    back: Returned<T>,
    since: Instant,
    probe: Option<Value>,
    draining: bool,
    drained: bool,
    /// The drain runs after the case ended, judged by nothing: it ends with its answer.
    unjudged: bool,
}

impl<T: Transport> Lent<T> {
    fn stdio(&self) -> &T {
        &self.shared.as_ref().expect("lent until shut down").stdio
    }

    fn stdio_mut(&mut self) -> &mut T {
        &mut self.shared.as_mut().expect("lent until shut down").stdio
    }

    /// Whether a message is the answer to the drain's request.
    fn ends_drain(&self, bytes: &[u8]) -> bool {
        self.draining
            && serde_json::from_slice::<Value>(bytes)
                .is_ok_and(|m| m.get("method").is_none() && m["id"] == DRAIN_ID)
    }
}

impl<T: Transport> Transport for Lent<T> {
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

    fn load(&self) -> crate::load::source::Load {
        self.stdio().load()
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

impl<T: Transport> Drop for Lent<T> {
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
    use crate::share::stdio::Pool;
    use crate::transport::process::Launch;

    #[test]
    fn a_case_that_ended_without_its_drain_is_drained_until_the_answer_only() {
        // A server that answers the drain's `ping` at once, and then says nothing.
        let pong = format!(r#"{{"jsonrpc":"2.0","id":"{DRAIN_ID}","result":{{}}}}"#);
        let script = format!("read l; echo '{pong}'; cat >/dev/null");
        let launch = Launch::argv(vec!["sh".into(), "-c".into(), script]);
        let pool = Pool::new(&launch, Duration::from_secs(5), 1).unwrap();
        let shared = pool.borrow(ProtocolVersion::V2025_11_25).unwrap();
        let back = Returned::default();
        let (mut lent, _, _) = shared.lend(ProtocolVersion::V2025_11_25, back.clone());
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
        pool.give_back(Some(returned), true, ProtocolVersion::V2025_11_25);
        assert_eq!(pool.idle(ProtocolVersion::V2025_11_25), 1);
    }
}
