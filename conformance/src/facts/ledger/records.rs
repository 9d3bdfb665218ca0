//! What the ledger records of one request: the harness's ([`SentRequest`], with its cancel,
//! [`CancelMark`], and when its answer is due, [`Due`]), the target's ([`ReceivedRequest`]),
//! and a task one of the harness's requests created ([`TaskRecord`]). Plain data the rules
//! read; the [`super::Ledger`] keeps them.

use crate::exchange::Channel;
use crate::time as clock;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Where the harness's cancel of one of its requests stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancelMark {
    /// The transcript index of the cancel.
    pub at: usize,
    /// When it was sent, since the target started.
    pub sent: Duration,
    /// Whether something since proved the target had read it, and by when it had certainly
    /// read it: when an answer to a later request arrived on an ordered transport (such as the
    /// barrier's); over HTTP, when the grace after the cancel POST's `202` ends.
    pub read: Option<Duration>,
    /// Over HTTP, the grace that followed the cancel's `202` (the proof is the 202 and the
    /// grace, not a later answer).
    pub accepted: Option<Duration>,
    /// In 2026-07-28 over HTTP, where the cancel is the harness closing the request's stream:
    /// what is known then (nothing on the wire can show the server noticed).
    pub closed: Option<Closed>,
    /// How long the target had waited for a CPU when the proof arrived (see `engine::waited`):
    /// a proof by time is stretched by what it waits from then on.
    pub waited: Option<Duration>,
    /// How long the target had waited for a CPU when the cancel was sent.
    pub sent_waited: Option<Duration>,
}

/// A cancel that closed the request's stream (2026-07-28 over HTTP, CAN-12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed {
    /// The grace the server gets to notice the closed stream; the cancel counts as read once
    /// it has passed.
    pub grace: Duration,
    /// Whether the request had shown it arrived (its response head, or a message on its
    /// stream) when its stream was closed: if not, the server may never have started it.
    pub arrived: bool,
}

impl CancelMark {
    /// Whether the target has certainly read the cancel by `at`.
    pub fn is_read(&self, at: Duration) -> bool {
        self.read.is_some_and(|read| read <= at)
    }

    /// How a finding names the proof that the cancel was read.
    pub fn proof(&self) -> String {
        match (self.accepted, self.closed) {
            (Some(grace), _) => format!(
                "the cancel's 202 plus a {} ms grace proved it read",
                grace.as_millis()
            ),
            (None, Some(closed)) => format!(
                "the harness closed its stream, and a {} ms grace for the server to notice passed",
                closed.grace.as_millis()
            ),
            (None, None) => "an answer to a later request proved it".into(),
        }
    }
}

/// When the answer to a request is due, as far as the harness knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// At once: a protocol method (`ping`, `initialize`, an unknown method) or a tool that
    /// answers at once (`echo`, `ping`); once the target has read it, only a grace is left.
    AtOnce,
    /// Not before this time since the target started (a `sleep` ends on its own then).
    By(Duration),
    /// Unknown (a tool that runs until it is cancelled, or a tool the harness does not know).
    Unknown,
}

/// A request the harness sent.
#[derive(Debug, Clone)]
pub struct SentRequest {
    /// The case line that sent it (0 for the harness's own).
    pub line: usize,
    /// Its transcript index.
    pub index: usize,
    /// When it was sent, since the target started.
    pub sent: Duration,
    /// Its method.
    pub method: String,
    /// The harness's own request (handshake, barrier, witness), not a case's.
    pub internal: bool,
    /// A call of a role that never ends on its own: an answer after its cancel was caused by it.
    pub endless: bool,
    /// An `initialize`: its answer may take as long as a start.
    pub starts: bool,
    /// When (since the target started) the call could have ended on its own at the earliest.
    pub natural_end: Option<Duration>,
    /// For a `ticker`: how often it reports progress (its schedule, so that progress it owed
    /// is told from progress it sends on).
    pub tick: Option<Duration>,
    /// How many progress notifications came for it.
    pub progress_seen: u64,
    /// A call that went to a target's own tool standing in for a role: only the shape of its
    /// result is judged.
    pub mapped: bool,
    /// When its answer is due.
    pub due: Due,
    /// The channel it travelled on.
    pub channel: Channel,
    /// How many responses came for it.
    pub answers: u32,
    /// The transcript index of its first response.
    pub answer: Option<usize>,
    /// The harness's cancel of it, if any.
    pub cancel: Option<CancelMark>,
    /// Whether it had been answered when it was cancelled.
    pub answered_before_cancel: bool,
    /// The last progress value seen for it, and the channel it came on (progress is only
    /// compared within one stream, AMB-07).
    pub last_progress: Option<(f64, Channel)>,
    /// A `! silent` step watched it after its cancel.
    pub watched: bool,
    /// Progress that came after the proof that its cancel was read, judged when the case
    /// has ended (see `rules::server`).
    pub after_proof: Vec<LateProgress>,
}

impl SentRequest {
    /// Request `method`, sent `sent` (since the target started) at `line`, transcript index
    /// `index`, on `channel`, of which nothing else is known yet: not the harness's own, no
    /// known duration or schedule, its answer due when unknown.
    pub fn new(
        line: usize,
        index: usize,
        sent: Duration,
        method: &str,
        channel: Channel,
    ) -> SentRequest {
        SentRequest {
            line,
            index,
            sent,
            method: method.to_string(),
            internal: false,
            endless: false,
            starts: method == "initialize",
            natural_end: None,
            tick: None,
            progress_seen: 0,
            mapped: false,
            due: Due::Unknown,
            channel,
            answers: 0,
            answer: None,
            cancel: None,
            answered_before_cancel: false,
            last_progress: None,
            watched: false,
            after_proof: vec![],
        }
    }
}

/// One progress that came after the proof that its request's cancel was read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LateProgress {
    /// The case line being carried out when it came.
    pub line: usize,
    /// How long after the proof it came.
    pub after: Duration,
    /// Whether load or flight explains it: the first within the grace after the proof (grown
    /// by the target's CPU waits since), a later one within the time the target waited for a
    /// CPU since the proof.
    pub explained: bool,
}

/// A request the target sent.
#[derive(Debug, Clone)]
pub struct ReceivedRequest {
    /// Its method.
    pub method: String,
    /// When the harness answered it.
    pub answered: Option<Instant>,
    /// How long the target had waited for a CPU when the harness answered it.
    pub answered_waited: Option<Duration>,
    /// The harness's answer was a result (not an error).
    pub succeeded: bool,
    /// Whether the target cancelled it.
    pub cancelled: bool,
    /// Its progress token, as an id key.
    pub token: Option<String>,
    /// The channel it arrived on.
    pub channel: Channel,
    /// A request of the stateless era (stamped with its version, or `server/discover`), which
    /// over HTTP is cancelled by closing its stream.
    pub stateless: bool,
    /// The task its answer created (a `tools/call` answered with a `CreateTaskResult`): the
    /// request is complete, and the task is cancelled with `tasks/cancel` (TSK-03).
    pub task: Option<String>,
}

impl ReceivedRequest {
    /// Takes note of the harness's `answer` to it, sent when the target had waited `waited`
    /// for a CPU.
    pub fn answer(&mut self, answer: &Value, waited: Option<Duration>) {
        self.answer_at(answer, clock::now(), waited);
    }

    /// Takes note of an `answer` to it sent at `at` (a recorded one: when the recorder saw
    /// it), when the target had waited `waited` for a CPU.
    pub fn answer_at(&mut self, answer: &Value, at: Instant, waited: Option<Duration>) {
        if self.answered.is_none() {
            self.answered_waited = waited;
        }
        self.answered.get_or_insert(at);
        self.succeeded |= answer.get("result").is_some();
        if self.method == "tools/call" && self.task.is_none() {
            self.task = super::created_task(answer);
        }
    }

    /// Neither answered nor cancelled.
    pub fn outstanding(&self) -> bool {
        self.answered.is_none() && !self.cancelled
    }
}

/// A task one of the harness's `tools/call` requests created (its answer was a
/// `CreateTaskResult`), and what the harness has learned of its status since.
#[derive(Debug, Clone)]
pub struct TaskRecord {
    /// The id key of the `tools/call` that created it: its progress token stays in use for
    /// the task's life (2025-11-25, PRG-10).
    pub request: String,
    /// When (since the target started) an answer first showed the task terminal, the status
    /// it showed, and how long the target had waited for a CPU by then.
    pub terminal: Option<(Duration, String, Option<Duration>)>,
    /// When the first `tasks/cancel` of it was answered with a result, and how long the
    /// target had waited for a CPU by then: the proof that the server read the cancel.
    pub cancel_answered: Option<(Duration, Option<Duration>)>,
}
