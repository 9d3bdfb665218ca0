//! The harness's own requests, and the proofs that let a wait end early without guessing.
//!
//! On an ordered transport (stdio), an answer to a request proves the target read everything
//! sent before that request: the barrier is built on this, and so is every wait for an answer
//! that is due at once (a `ping`, `initialize`, an error for an unreadable line). Once such a
//! wait's subject is proven read, only a grace is left (`T_grace`: the larger of 250 ms and
//! four round trips), however long `--reply-timeout` is; if no proof has come after a moment,
//! the harness sends a probe to get one. The startup allowance (`--startup-timeout`) lasts
//! only until the target has written anything at all.
//!
//! A proof says the target *read* something, not that its handler got a CPU since: a server
//! that reads on one task and works on another can be starved between the two. So the grace
//! grows by the time the target lost waiting for a CPU since the proof (see
//! `waited.rs`), and a finding that rests on it says by how much.

use super::{Engine, Side, Stop, Why};
use crate::engine::parts::clock;
use crate::era::ProtocolVersion;
use crate::facts::ledger::Due;
use crate::outcome::Severity;
use crate::pattern::canonical;
use crate::requirement::Req;
use crate::rules::envelope::short;
use crate::transport::Transport;
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

use super::parts::proofs::MIN_GRACE;
/// How long a wait for an answer due at once goes without proof before a probe is sent.
const PROBE_AFTER: Duration = Duration::from_millis(250);

/// Why a wait ended without what it waited for.
pub(crate) enum Ran {
    /// The allowance ran out.
    Out(Duration),
    /// The subject was proven read and the grace after that ran out: the grace, and what it
    /// would have been on a calm machine.
    Proven(Duration, Duration),
    /// One of the above, and then the target went on writing other messages at its own pace
    /// for this long past the deadline without the one waited for.
    Talking(Box<Ran>, Duration),
}

impl Ran {
    /// Says why, for a finding.
    pub(crate) fn explain(&self) -> String {
        match self {
            Ran::Out(wait) => format!("within {wait:?}"),
            Ran::Proven(grace, calm) => format!(
                "within a grace of {} ms{} after the target had certainly read what should have caused it (it answered a later request)",
                grace.as_millis(),
                stretched_from(*grace, *calm)
            ),
            Ran::Talking(ran, talked) => format!(
                "{}, nor in the {talked:?} after that during which the target kept writing other messages (a target that keeps talking extends a wait only so long)",
                ran.explain()
            ),
        }
    }
}

/// How a finding says that a grace grew on a busy machine ("" when it did not).
pub(crate) fn stretched_from(grace: Duration, calm: Duration) -> String {
    if grace > calm {
        format!(
            " (the calm {} ms and {} ms the target waited for a CPU)",
            calm.as_millis(),
            grace.saturating_sub(calm).as_millis()
        )
    } else {
        String::new()
    }
}

/// Where a wait stands once its deadline is near.
pub(crate) enum Wait {
    /// It goes on.
    On,
    /// The deadline passed and the target has been quiet for a grace.
    Quiet,
    /// The deadline passed, and the target kept talking past it for this long without what
    /// was waited for.
    Talking(Duration),
}

/// How long a wait may go on, read at one moment: the grace after the last proof (the calm
/// grace, grown by the target's waits for a CPU since, see `waited.rs`), how long a target
/// that talks at its own pace may keep a wait open past its deadline (as long as a reply may
/// take; time the harness spends reading what is already written does not count), and what
/// the clock said of the target's talk.
pub(crate) struct Patience {
    grace: Duration,
    talk: Duration,
    /// When the target last wrote anything.
    last_event: Option<Instant>,
    /// How long the harness has waited for the target so far (see `Clock::idle`).
    idle: Duration,
}

impl Patience {
    /// Where a wait with this deadline stands. Once the deadline has passed, the wait is over
    /// when the target has been quiet for a grace: a target that is still talking is not
    /// judged silent, however long the harness takes to read what it says. But the time the
    /// harness spends *waiting* for a target that talks on at its own pace counts: once it
    /// passes the talk allowance, the wait is over too. `past` is the wait's own record of
    /// when it first found its deadline passed (start it at `None`).
    pub(crate) fn state(&self, deadline: Deadline, past: &mut Option<Duration>) -> Wait {
        let now = Deadline::now();
        if now < deadline {
            return Wait::On;
        }
        let idle_then = *past.get_or_insert(self.idle);
        // Quiet means the target had a CPU and wrote nothing for a grace: a target kept from
        // running (a flood of its own requests on a busy machine) is not quiet, so the grace
        // grows by its waits for a CPU, as after a proof.
        if now >= self.quiet_from(deadline) {
            return Wait::Quiet;
        }
        let talked = self.idle.saturating_sub(idle_then);
        if talked >= self.talk {
            return Wait::Talking(talked);
        }
        Wait::On
    }

    /// When a wait with this deadline looks again at the latest (`every` from now): at its
    /// deadline, or once past it, when the target will have been quiet for a grace. Never in
    /// the past while the wait goes on, so a wait past its deadline sleeps until the next
    /// message instead of spinning.
    pub(crate) fn tick(&self, deadline: Deadline, every: Duration) -> Deadline {
        deadline
            .max(self.quiet_from(deadline))
            .min(Deadline::now() + every)
    }

    /// When the target will have been quiet for a grace (the deadline before it wrote
    /// anything).
    fn quiet_from(&self, deadline: Deadline) -> Deadline {
        self.last_event
            .map_or(deadline, |at| Deadline::from_std(at) + self.grace)
    }
}

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// The grace a message may still take after the last proof: the calm grace and the time
    /// lost to load since (see `waited.rs`).
    pub(crate) fn grace(&self) -> Duration {
        self.waits().grace_after(self.proofs.waited())
    }

    /// How long a wait may go on, as read now (see [`Patience`]).
    pub(crate) fn patience(&self) -> Patience {
        let talk = self.played.options().reply_timeout;
        Patience {
            grace: self.grace(),
            talk: self.clock.stretched(talk).max(MIN_GRACE),
            last_event: self.clock.last_event(),
            idle: self.clock.idle(),
        }
    }

    /// The grace on a calm machine: the larger of 250 ms and four round trips (over HTTP,
    /// `T_grace`).
    pub(crate) fn calm_grace(&self) -> Duration {
        if self.io.channel_per_request() {
            return self.streams.grace();
        }
        self.proofs.calm_grace()
    }

    /// The deadline of a wait that began at `began` for a message caused by the harness's
    /// message at transcript index `subject`, due as `due` says; and whether it was shortened
    /// by a proof.
    ///
    /// The wait lasts `--reply-timeout` once the target has written anything, the startup
    /// allowance until then; on a busy machine both are stretched in proportion to the CPU
    /// pressure (see [`crate::load`]): a slow answer there is not a missing one.
    pub(crate) fn answer_deadline(
        &self,
        began: Deadline,
        subject: Option<usize>,
        due: Due,
    ) -> (Deadline, Ran) {
        let reply = self.clock.stretched(self.played.options().reply_timeout);
        let (deadline, allowance) = match self.liveness.first_heard() {
            Some(at) => {
                let heard = Deadline::from_std(self.io.started() + at);
                (began.max(heard) + reply, reply)
            }
            None => {
                let startup = self.clock.stretched(self.played.options().startup_timeout);
                (began + startup, startup)
            }
        };
        let proven = subject.and_then(|s| self.proofs.read_at(s));
        let due_at = match due {
            Due::AtOnce => Some(Duration::ZERO),
            Due::By(end) => Some(end),
            Due::Unknown => None,
        };
        match (proven, due_at) {
            (Some(proof), Some(due_at)) => {
                let grace = self.grace();
                let after = Deadline::from_std(self.io.started() + proof.max(due_at)) + grace;
                if after < deadline {
                    return (after, Ran::Proven(grace, self.calm_grace()));
                }
                (deadline, Ran::Out(allowance))
            }
            _ => (deadline, Ran::Out(allowance)),
        }
    }

    /// Sends a probe when a wait for an answer due at once has gone on for a moment without
    /// proof: its answer proves the subject was read (on an ordered transport).
    pub(crate) async fn probe_if_due(&mut self, began: Deadline, subject: Option<usize>, due: Due) {
        let Some(subject) = subject else { return };
        let due_at = match due {
            Due::AtOnce => Duration::ZERO,
            Due::By(end) => end,
            Due::Unknown => return,
        };
        let now = self.now();
        let waited = Deadline::now().saturating_duration_since(began);
        if !S::PROBES
            || !self.io.ordered()
            || self.proofs.read_at(subject).is_some()
            || self.proofs.probing_after(subject)
            || waited < PROBE_AFTER
            || now < due_at
            || self.liveness.cut_off()
            || self.liveness.has_exited()
        {
            return;
        }
        let id = self.proofs.next_id("probe");
        let probe = self
            .protocol()
            .unwrap_or(ProtocolVersion::V2025_11_25)
            .probe(&id);
        self.proofs.probe_sent(self.transcript.len());
        let _ = self.write(probe.to_string(), true).await;
    }

    /// Sends a request of the harness's own and waits for its answer; returns the answer's
    /// transcript index (the first answer to a request is always kept). `requirement` is what
    /// a missing answer breaks.
    pub(crate) async fn request_internal(
        &mut self,
        message: &Value,
        requirement: Req,
    ) -> Result<usize, Stop> {
        let id = &message["id"];
        let method = message["method"].as_str().unwrap_or("");
        self.write(message.to_string(), true).await?;
        let subject = self.ledger.sent(id).map(|r| r.index);
        let began = Deadline::now();
        let mut past = None;
        loop {
            if let Some(index) = self.ledger.answer_of(id) {
                return Ok(index);
            }
            // Over HTTP, an answer whose stream was refused or ended will never come.
            let unanswerable = self
                .ledger
                .sent(id)
                .and_then(|r| self.streams.unanswerable(r));
            if let Some(why) = unanswerable {
                if let Some(stop) = self.stopped(Why::Unanswered).await {
                    return Err(stop);
                }
                self.rule(
                    Severity::Fail,
                    requirement,
                    format!(
                        "no answer to the harness's `{method}` (id {}): {why}",
                        canonical(id)
                    ),
                );
                return Err(Stop::Hung);
            }
            let (deadline, ran) = self.answer_deadline(began, subject, Due::AtOnce);
            let tick = self.patience().tick(deadline, PROBE_AFTER);
            // A wait ends only once the harness has caught up with what the target wrote: a
            // target that talks a lot is not blamed for the time the harness takes to read it.
            let got = self.next(tick).await;
            if !got {
                if let Some(stop) = self.stopped(Why::Unanswered).await {
                    return Err(stop);
                }
            }
            let ran = match self.patience().state(deadline, &mut past) {
                Wait::On => None,
                Wait::Quiet => Some(ran),
                Wait::Talking(talked) => Some(Ran::Talking(Box::new(ran), talked)),
            };
            if let Some(ran) = ran {
                let message = if method == "initialize" {
                    format!(
                        "no answer to `initialize` {}; {}",
                        ran.explain(),
                        self.liveness.what_was_heard()
                    )
                } else {
                    format!(
                        "no answer to the harness's `{method}` (id {}) {}; {} stopped serving",
                        canonical(id),
                        ran.explain(),
                        S::WRITER.who
                    )
                };
                self.rule(Severity::Fail, requirement, message);
                return Err(Stop::Hung);
            }
            self.probe_if_due(began, subject, Due::AtOnce).await;
        }
    }

    /// Whether the steps stop now that `why` happened, and how. A target the harness stopped
    /// talking with (it stopped reading, or garbled its output) stops them as [`Stop::Hung`]
    /// (already reported), after the role's own reasons before a step; otherwise the role
    /// says (see [`Side::stop`]).
    pub(crate) async fn stopped(&mut self, why: Why) -> Option<Stop> {
        let cut_off = self.liveness.cut_off().then_some(Stop::Hung);
        match why {
            Why::Step => S::stop(self, why).await.or(cut_off),
            Why::Unsent => S::stop(self, why).await,
            Why::Silence | Why::Unanswered => match cut_off {
                Some(stop) => Some(stop),
                None => S::stop(self, why).await,
            },
        }
    }

    /// `! barrier`: a request whose answer proves the target has read everything sent before
    /// it (stdin is a FIFO and stdout one ordered stream), so every cancel sent before it is
    /// known to have been read. Over HTTP the answer proves nothing about other POSTs: the
    /// barrier first waits for every earlier POST's status and the grace after the last
    /// accepted cancel (see `http.rs`), and the probe then checks liveness.
    pub(crate) async fn barrier(&mut self) -> Result<(), Stop> {
        if self.liveness.is_done() {
            return Ok(());
        }
        if self.io.channel_per_request() {
            self.settle().await;
        }
        let id = self.proofs.next_id("barrier");
        let probe = self
            .protocol()
            .unwrap_or(ProtocolVersion::V2025_11_25)
            .probe(&id);
        // `ping`, or `server/discover` where `ping` no longer exists (LIF-11).
        let method = probe["method"].as_str().unwrap_or("ping").to_string();
        let requirement = if method == "ping" {
            Req::Ping01
        } else {
            Req::Lif11
        };
        let asked = clock::now();
        let answer = self.request_internal(&probe, requirement).await?;
        if self.io.channel_per_request() {
            self.streams.sample(clock::since(asked));
        }
        let answer = self.transcript.message(answer);
        if answer.get("result").is_none_or(|r| !r.is_object()) {
            let wanted = if method == "ping" {
                "an empty result"
            } else {
                "a result"
            };
            let got = short(answer);
            self.rule(
                Severity::Fail,
                requirement,
                format!(
                    "{} must answer {method} with {wanted}, got {got}",
                    S::WRITER.who,
                ),
            );
        }
        Ok(())
    }

    /// An answer to the harness's request sent at transcript index `index` arrived: on an
    /// ordered transport, everything sent before it has certainly been read.
    /// `now` is when the answer arrived (its transcript time), so that what arrived after it
    /// in the same stream is judged against the proof and what arrived before is not.
    pub(crate) fn proof_arrived(&mut self, index: usize, sent: Duration, now: Duration) {
        // A round trip counts only once the target was running: the first answer of a slow
        // start says how long the start took, not how long a round trip takes.
        let running = self
            .liveness
            .first_heard()
            .is_some_and(|heard| heard <= sent);
        if let Some(rtt) = now.checked_sub(sent).filter(|_| running) {
            self.proofs.round_trip(rtt);
        }
        if !self.io.ordered() || index < self.proofs.proven() {
            return;
        }
        let waited = self.waited();
        self.proofs.proved(index + 1, now, waited);
        self.ledger.prove_read(index + 1, now, waited);
    }
}
