//! One version probe: a fresh start of the target asked `initialize` (handshake era) or
//! `server/discover` (2026-07-28), and how long the harness waits for the answer.
//!
//! The wait is the engine's, from its parts: the startup allowance is a [`Limit`] (it grows
//! while the target waits for a CPU, at most so far), the `ping` sent after `server/discover`
//! is a proof kept in [`Proofs`], and the grace after that proof is what [`Waits`] gives, the
//! target's waits read by a [`Clock`]. Nothing here keeps a grace or a CPU-wait count of its
//! own.

use super::handover::{Handed, Watched};
use super::{Identity, Probe};
use crate::engine::limit::Limit;
use crate::engine::parts::clock::Clock;
use crate::engine::parts::proofs::Proofs;
use crate::era::ProtocolVersion;
use crate::exchange::TargetLog;
use crate::facts::waits::Waits;
use crate::transport::{Channel, Event, Transport};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// How long each page of `tools/list` may take once the opening was answered.
const LIST_WAIT: Duration = Duration::from_secs(5);

/// The id of the probe's question, and of the `ping` that proves it was read.
const ASK: &str = "versions";
const PROOF: &str = "versions-proof";

/// What one probe at `version` found on a fresh connection to the target: the versions it
/// shows the target speaks, and what it saw. A line on stdout that is not JSON ends the probe
/// at once: stdout carries only MCP messages (STD-03), so no case could get further.
///
/// A target that answered lists its tools too, with a target file as without one: cases use
/// only the roles its tools play ([`crate::discovery`]), and call a mapped tool only the way
/// its listing at the case's version allows ([`crate::fixtures`]).
pub async fn probe<T: Transport>(io: T, version: ProtocolVersion, wait: Duration) -> Probe {
    let (mut io, heard) = ask_and_list(io, version, wait).await;
    let log = io.shutdown(Duration::ZERO).await;
    heard.probe(log)
}

/// A probe as [`probe`], which hands the target over with its session open instead of ending
/// it, when that session is as clean as a case's own opening would be ([`Watched::handed`]).
pub async fn probe_handing<T: Transport>(
    io: T,
    version: ProtocolVersion,
    wait: Duration,
) -> (Probe, Option<Handed<T>>) {
    let (io, heard) = ask_and_list(Watched::new(io), version, wait).await;
    let kept = match &heard.found {
        Ok(answer) => {
            let request = question(version, heard.stateless);
            io.handed(version, request, answer)
        }
        _ => Err(io.into_inner()),
    };
    match kept {
        // Its stderr stays with the process, for the case that goes on in its session.
        Ok(handed) => (heard.probe(TargetLog::default()), Some(handed)),
        Err(mut io) => {
            let log = io.shutdown(Duration::ZERO).await;
            (heard.probe(log), None)
        }
    }
}

/// What a probe asked and heard, before its target is ended or handed over.
struct Heard {
    version: ProtocolVersion,
    stateless: bool,
    found: Result<Value, String>,
    tools: Option<Result<Vec<crate::discovery::Tool>, crate::discovery::ListError>>,
    /// From the target's start to the answer of its opening, when that was a result.
    start: Option<Duration>,
    took: Duration,
}

/// Asks the probe's question and, when it was answered with a result, lists the tools.
async fn ask_and_list<T: Transport>(
    mut io: T,
    version: ProtocolVersion,
    wait: Duration,
) -> (T, Heard) {
    let started = Instant::now();
    let stateless = version.is_stateless();
    let found = ask(&mut io, version, stateless, wait).await;
    let answered_with_result = found.as_ref().is_ok_and(|a| a.get("result").is_some());
    let start = answered_with_result.then(|| io.started().elapsed());
    let declares_tools = found.as_ref().is_ok_and(crate::discovery::declares_tools);
    let tools = if answered_with_result && !declares_tools {
        Some(Err(crate::discovery::ListError::Undeclared))
    } else if answered_with_result {
        let stamp = |request: &mut Value| {
            version.stamp(request);
        };
        let wait = crate::load::stretched(LIST_WAIT, io.load().stretch().min(2.0));
        Some(crate::discovery::list_tools(&mut io, !stateless, stamp, wait).await)
    } else {
        None
    };
    let heard = Heard {
        version,
        stateless,
        found,
        tools,
        start,
        took: started.elapsed(),
    };
    (io, heard)
}

impl Heard {
    /// The probe's findings, with what the target logged meanwhile.
    fn probe(self, log: TargetLog) -> Probe {
        let found = self.found;
        let answered = found.is_ok();
        let identity = found.as_ref().ok().and_then(Identity::of_answer);
        let opening = found
            .as_ref()
            .ok()
            .filter(|a| a.get("result").is_some())
            .map(|a| (self.version, a.clone()));
        let (versions, evidence) = conclude(found, self.version, self.stateless, self.took);
        Probe {
            versions,
            evidence,
            answered,
            identity,
            tools: self.tools,
            opening,
            start: self.start,
            log,
        }
    }
}

/// The question of a probe at `version`.
fn question(version: ProtocolVersion, stateless: bool) -> Value {
    if stateless {
        ProtocolVersion::V2026_07_28.probe(ASK)
    } else {
        json!({"jsonrpc": "2.0", "id": ASK, "method": "initialize", "params": {
            "protocolVersion": version.as_str(),
            "capabilities": {},
            "clientInfo": {"name": "conformance", "version": env!("CARGO_PKG_VERSION")}
        }})
    }
}

/// Sends the question and waits for its answer: `Err` says what came instead.
async fn ask<T: Transport>(
    io: &mut T,
    version: ProtocolVersion,
    stateless: bool,
    wait: Duration,
) -> Result<Value, String> {
    // A start is slow on a busy machine, as in the cases: the allowance lasts as much longer
    // as the target waits for a CPU meanwhile (within a `Limit`'s bounds), and no longer for
    // a target that is merely silent, however busy the machine (see `Limit::start_up`).
    let allowance = Limit::start_up(wait, &io.load(), io.process_group());
    let request = question(version, stateless);
    let Ok(channel) = io.send(request.to_string().as_bytes(), None).await else {
        // A target that cannot be written to has most likely exited: say how.
        let until = Deadline::now() + Duration::from_millis(500);
        while !io.finished() && io.next(until).await.is_some() {}
        return Err(match io.exit_status() {
            Some(status) => format!("it exited ({status}) before answering"),
            None => "it did not read the probe (its input was closed)".to_string(),
        });
    };
    // After `server/discover`, a `ping`: a server of the handshake era answers it (with a
    // result or an error) after it has read the discover, so its answer proves the discover
    // was read and, soon after, that no answer is coming. A stateless server answers both in
    // order.
    if stateless && io.ordered() {
        let proof = json!({"jsonrpc": "2.0", "id": PROOF, "method": "ping"});
        let _ = io.send(proof.to_string().as_bytes(), None).await;
    }
    let clock = Clock::new(io.load());
    let mut waiting = Waiting {
        io,
        allowance,
        channel,
        started: Instant::now(),
        clock,
        proofs: Proofs::default(),
        status: None,
        said: None,
    };
    waiting.answer().await
}

/// A probe waiting for its answer.
struct Waiting<'a, T> {
    io: &'a mut T,
    /// The startup allowance.
    allowance: Limit,
    /// Where the question went.
    channel: Channel,
    /// When the wait began: proofs are kept as times since then.
    started: Instant,
    clock: Clock,
    /// The `ping` answered after the question: the question was read.
    proofs: Proofs,
    /// Over HTTP, the status of the question's response, for when no answer comes on it.
    status: Option<String>,
    /// Over HTTP, what the question's response said, likewise.
    said: Option<String>,
}

impl<T: Transport> Waiting<'_, T> {
    /// Waits for the answer, event by event.
    async fn answer(&mut self) -> Result<Value, String> {
        loop {
            match self.io.next(self.until()).await {
                None if self.io.finished() => {
                    return Err(match self.io.exit_status() {
                        Some(status) => format!("it exited ({status}) before answering"),
                        None => "its output ended before it answered".to_string(),
                    })
                }
                // Both deadlines move later while the target waits for a CPU: look again.
                None if Deadline::now() < self.until() => continue,
                None => return Err(self.timed_out()),
                Some((_, event)) => {
                    if let Some(done) = self.on(event) {
                        return done;
                    }
                }
            }
        }
    }

    /// The clock read now: the grace after the proof grows by the target's waits for a CPU.
    fn waits(&self) -> Waits {
        Waits {
            now: self.clock.target_waits(|| self.io.process_group()),
            calm: self.proofs.calm_grace(),
            stretch: self.clock.stretch(),
        }
    }

    /// When the wait ends, as far as is known now: the allowance, or once the question is
    /// proven read a grace after that (at most the allowance).
    fn until(&self) -> Deadline {
        let deadline = self.allowance.deadline();
        match self.proofs.read_at(0) {
            Some(at) => {
                let grace = self.waits().grace_after(self.proofs.waited());
                deadline.min(Deadline::from_std(self.started + at + grace))
            }
            None => deadline,
        }
    }

    /// Why no answer came in time.
    fn timed_out(&self) -> String {
        if self.proofs.read_at(0).is_none() {
            return format!(
                "no answer within {} (the startup allowance, longer on a busy machine)",
                crate::transcript::span(self.allowance.elapsed())
            );
        }
        let waits = self.waits();
        let before = self.proofs.waited();
        format!(
            "no answer within {} ms after it answered the ping sent after it ({} ms of them waiting for a CPU)",
            waits.grace_after(before).as_millis(),
            waits.lost_since(before).unwrap_or_default().as_millis()
        )
    }

    /// Takes one event: `Some` when the probe is over.
    fn on(&mut self, event: Event) -> Option<Result<Value, String>> {
        match event {
            Event::Message { bytes, channel } => self.message(&bytes, channel),
            Event::Status { channel, head } if channel == self.channel => {
                self.status = Some(head.summary());
                None
            }
            Event::Body { channel, text } if channel == self.channel => {
                self.said = Some(text.chars().take(200).collect());
                None
            }
            Event::Closed { channel, end, .. } if channel == self.channel => {
                let got = match self.status.take() {
                    Some(status) => format!("HTTP {status}"),
                    None => format!("its POST {end}"),
                };
                let body = self
                    .said
                    .take()
                    .map(|b| format!(": {b}"))
                    .unwrap_or_default();
                Some(Err(format!("no answer; got {got}{body}")))
            }
            _ => None,
        }
    }

    /// Takes one message: the answer ends the probe, the ping's answer proves the question
    /// read, a line that is not JSON on stdout ends it too.
    fn message(&mut self, bytes: &[u8], on: Channel) -> Option<Result<Value, String>> {
        let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
            if on == Channel::Stdio && !bytes.trim_ascii().is_empty() {
                let line = String::from_utf8_lossy(bytes);
                let shown: String = line.chars().take(200).collect();
                return Some(Err(format!(
                    "it wrote a line to stdout that is not JSON (STD-03: stdout carries only MCP messages; logs go to stderr): `{shown}`"
                )));
            }
            return None;
        };
        if on == self.channel && self.channel != Channel::Stdio {
            self.said = Some(crate::rules::envelope::short(&value));
        }
        if value.get("method").is_some() {
            return None;
        }
        match value.get("id").and_then(Value::as_str) {
            Some(ASK) => return Some(Ok(value)),
            Some(PROOF) => {
                let waited = self.waits().now;
                self.proofs.proved(1, self.started.elapsed(), waited);
            }
            _ => {}
        }
        None
    }
}

/// What a probe's answer (or the lack of one) says: the versions, and one sentence.
fn conclude(
    found: Result<Value, String>,
    version: ProtocolVersion,
    stateless: bool,
    took: Duration,
) -> (Vec<ProtocolVersion>, String) {
    let took = took.as_millis();
    match (found, stateless) {
        (Err(why), _) => {
            let method = if stateless {
                "server/discover"
            } else {
                "initialize"
            };
            (vec![], format!("{method} at {version}: {why}"))
        }
        (Ok(answer), true) => match answer
            .pointer("/result/supportedVersions")
            .and_then(Value::as_array)
        {
            Some(listed) => {
                let listed: Vec<ProtocolVersion> = listed
                    .iter()
                    .filter_map(Value::as_str)
                    .filter_map(ProtocolVersion::parse)
                    .filter(|v| v.is_stateless())
                    .collect();
                let shown = answer["result"]["supportedVersions"].to_string();
                (
                    listed,
                    format!("server/discover listed {shown} ({took} ms)"),
                )
            }
            None => (
                vec![],
                match answer.get("error") {
                    Some(error) => format!(
                        "server/discover at {version} was refused with error {}",
                        crate::rules::envelope::short(error)
                    ),
                    None => format!(
                        "server/discover was answered without supportedVersions: {}",
                        crate::rules::envelope::short(&answer)
                    ),
                },
            ),
        },
        (Ok(answer), false) => match answer
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
        {
            Some(agreed) if ProtocolVersion::parse(agreed).is_some_and(|v| v.has_handshake()) => (
                ProtocolVersion::parse(agreed).into_iter().collect(),
                format!("initialize at {version} agreed to {agreed} ({took} ms)"),
            ),
            other => (
                vec![],
                format!(
                    "initialize at {version} was answered with {}",
                    other.map_or_else(|| crate::rules::envelope::short(&answer), str::to_string)
                ),
            ),
        },
    }
}
