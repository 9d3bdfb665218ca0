//! Playing the steps: the control flow of a case (repeats, sweeps, windows), the variables
//! the steps fill in, and the `! arrives` windows that judge when a message came.

use crate::case::{Step, StepKind};
use crate::outcome::{FindingKind, Severity};
use crate::pattern::{self};
use crate::transport::Transport;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant as Deadline;

use super::parts::arrivals::Late;
use super::{Engine, Side, Stop, Why};

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// Plays steps in order.
    pub(crate) fn steps<'s>(
        &'s mut self,
        steps: &'s [Step],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Stop>> + 's>> {
        Box::pin(async move {
            for (i, step) in steps.iter().enumerate() {
                self.step.at(step.line);
                // A request whose status the next step judges is left to it by the standing
                // rules.
                self.streams
                    .expect_status(match steps.get(i + 1).map(|s| &s.kind) {
                        Some(StepKind::Status(codes)) => Some(codes.clone()),
                        _ => None,
                    });
                if let Some(stop) = self.stopped(Why::Step).await {
                    return Err(stop);
                }
                self.step(step).await?;
            }
            Ok(())
        })
    }

    async fn step(&mut self, step: &Step) -> Result<(), Stop> {
        match &step.kind {
            StepKind::Send(text) => {
                let text = self.fill(text)?;
                let message = serde_json::from_str::<Value>(&text).ok();
                if let Some(reason) = message.and_then(|m| S::unoffered(self, &m)) {
                    return Err(Stop::Skip(reason));
                }
                self.write(text, false).await?;
                S::after_send(self).await;
                Ok(())
            }
            StepKind::Expect(text) => self.expect(step.line, text).await,
            StepKind::Barrier => self.barrier().await,
            StepKind::Cancel { id, reason } => self.cancel(id, reason.as_deref()).await,
            StepKind::After(span) => {
                let until = self.clock.last_send() + span.resolve(self.step.captures());
                self.pump_until(Deadline::from_std(until)).await;
                Ok(())
            }
            StepKind::Wait(span) => {
                let until = Deadline::now() + span.resolve(self.step.captures());
                self.pump_until(until).await;
                Ok(())
            }
            StepKind::Arrives(arrival) => {
                let waited = self.waited();
                self.step.arrives(*arrival, waited);
                Ok(())
            }
            StepKind::Repeat { .. } | StepKind::Sweep { .. } => {
                let (inner, rounds) = step.kind.rounds().expect("a loop has rounds");
                for bindings in &rounds {
                    self.step.captures_mut().extend(bindings.iter().cloned());
                    self.steps(inner).await?;
                }
                for (name, _) in rounds.first().into_iter().flatten() {
                    self.step.captures_mut().remove(name);
                }
                Ok(())
            }
            StepKind::Poll(poll) => self.poll(poll).await,
            StepKind::Status(codes) => self.status_step(codes).await,
            StepKind::Header { name, value } => self.header_step(name, value),
            StepKind::Listen => self.open_step(true).await,
            StepKind::DeleteSession => self.open_step(false).await,
            StepKind::Silent { .. }
            | StepKind::Witness(_)
            | StepKind::Unwitnessed(_)
            | StepKind::Session(_)
            | StepKind::CloseStdin
            | StepKind::Exit(_)
            | StepKind::Alive(_)
            | StepKind::Disconnect(_)
            | StepKind::Cancelled(_)
            | StepKind::ServerExit
            | StepKind::ExpireSession => S::role_step(self, step).await,
        }
    }

    /// A case line with its variables filled in. A reference to a variable that an earlier,
    /// already reported mismatch never captured ends the case quietly; otherwise it is a bug
    /// in the case.
    pub(crate) fn fill(&mut self, text: &str) -> Result<String, Stop> {
        pattern::substitute(text, self.step.captures()).map_err(|name| {
            if !self.findings.any_judged() {
                self.finding(
                    Severity::Fail,
                    FindingKind::CaseBug,
                    format!(
                        "bug in case: `{{${name}}}` is used before anything was captured into it"
                    ),
                );
            }
            Stop::Hung
        })
    }

    /// A request id of a control line, with its variables filled in.
    pub(crate) fn fill_id(&mut self, text: &str) -> Result<Value, Stop> {
        let text = self.fill(text)?;
        serde_json::from_str(&text).map_err(|_| {
            self.finding(
                Severity::Fail,
                FindingKind::CaseBug,
                format!("bug in case: `{text}` is not a request id"),
            );
            Stop::Hung
        })
    }

    /// Notes when an expected message arrived, and judges it against a pending `! arrives`.
    ///
    /// Early is always judged: load only makes things later. Late is judged unless load
    /// explains the overshoot: the target's own processes waited at least that long for a CPU
    /// since the `! arrives` line (the kernel's scheduler statistics; a target whose own timer
    /// is late waits for none), or the harness itself was held up about as long (its own
    /// timers ran late by at least half the overshoot). Then the timing cannot tell the
    /// target's delay from the machine's, and the finding is a note that says so.
    pub(crate) fn arrived(&mut self, line: usize, at: Duration) {
        let waited = self.waited();
        let Some(late) = self.step.arrived(at, waited, self.clock.lateness()) else {
            return;
        };
        self.step.at(line);
        let (severity, message) = match late {
            Late::TargetStarved(complaint, starved) => (
                Severity::Note,
                format!(
                    "{complaint}, but {}'s processes waited {} ms for a CPU meanwhile: the machine was busy and the timing cannot tell",
                    S::WRITER.who,
                    starved.as_millis()
                ),
            ),
            Late::HarnessLate(complaint, lateness) => (
                Severity::Note,
                format!(
                    "{complaint}, but the harness's own timers ran up to {} ms late meanwhile: the machine was busy and the timing cannot tell",
                    lateness.as_millis()
                ),
            ),
            Late::Judged(complaint) => (self.played.severity(), complaint),
        };
        self.finding(severity, FindingKind::Unmet, message);
    }
}
