//! The request ledger: every request either side sent in one case, and what became of it.
//!
//! The standing rules need it (one response per request, progress only for live tokens, a
//! cancel only for one's own live request) and so do the steps (waiting for an answer). Ids
//! are keyed by their canonical JSON text, so `7` and `"7"` are different requests. Ids are
//! scoped to a session: over HTTP a case may hold two sessions that both use id `1`, and the
//! ledger keys the other session's as `1 in session NAME`.

use crate::pattern::id_key;
use crate::transport::Channel;
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What proved that the target had read a cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadProof {
    /// An answered barrier on an ordered transport (stdio): the target read everything sent
    /// before it.
    Barrier,
    /// Over HTTP: the cancel's POST was accepted (202), and a grace window passed for what
    /// was already in flight.
    Accepted {
        /// The grace window.
        grace: Duration,
    },
}

impl ReadProof {
    /// How a finding names the proof.
    pub fn describe(self) -> String {
        match self {
            ReadProof::Barrier => "the barrier proved the cancel had been read".into(),
            ReadProof::Accepted { grace } => format!(
                "the cancel's 202 plus a {} ms grace proved it read",
                grace.as_millis()
            ),
        }
    }
}

/// Where the harness's cancel of one of its requests stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancelMark {
    /// The transcript index of the cancel.
    pub at: usize,
    /// What proved the target had read it, once something did.
    pub read: Option<ReadProof>,
}

/// A request the harness sent.
#[derive(Debug, Clone)]
pub struct SentRequest {
    /// The case line that sent it (0 for the harness's own).
    pub line: usize,
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
    /// A call that went to a target's own tool standing in for a role: only the shape of its
    /// result is judged.
    pub mapped: bool,
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
}

/// A request the target sent.
#[derive(Debug, Clone)]
pub struct ReceivedRequest {
    /// Its method.
    pub method: String,
    /// When the harness answered it.
    pub answered: Option<Instant>,
    /// Whether the target cancelled it.
    pub cancelled: bool,
    /// Its progress token, as an id key.
    pub token: Option<String>,
    /// The channel it arrived on.
    pub channel: Channel,
}

impl ReceivedRequest {
    /// Neither answered nor cancelled.
    pub fn outstanding(&self) -> bool {
        self.answered.is_none() && !self.cancelled
    }
}

/// Every request of one case, both ways.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Requests the harness sent, by id key.
    pub sent: HashMap<String, SentRequest>,
    /// Progress tokens of the harness's requests → the request's id key.
    pub tokens: HashMap<String, String>,
    /// Requests the target sent, by id key.
    pub received: HashMap<String, ReceivedRequest>,
    /// The session ids are scoped to right now (`None`: the first, whose keys are the bare
    /// ids).
    pub scope: Option<String>,
}

impl Ledger {
    /// The key of a request id or progress token in the current scope.
    pub fn key(&self, id: &Value) -> String {
        match &self.scope {
            None => id_key(id),
            Some(session) => format!("{} in session {session}", id_key(id)),
        }
    }

    /// Records the harness's cancel of request `id`, sent at transcript index `at`. The first
    /// cancel counts.
    pub fn cancel_sent(&mut self, id: &Value, at: usize) {
        let key = self.key(id);
        if let Some(request) = self.sent.get_mut(&key) {
            request.answered_before_cancel = request.answers > 0;
            request.cancel.get_or_insert(CancelMark { at, read: None });
        }
    }

    /// Marks every cancel sent before transcript index `before` as read by the target, by
    /// `proof`.
    pub fn prove_read(&mut self, before: usize, proof: ReadProof) {
        self.prove_read_where(proof, |mark| mark.at < before);
    }

    /// Marks the cancels `proven` picks as read by the target, by `proof`.
    pub fn prove_read_where(&mut self, proof: ReadProof, proven: impl Fn(&CancelMark) -> bool) {
        for request in self.sent.values_mut() {
            if let Some(mark) = request.cancel.as_mut() {
                if mark.read.is_none() && proven(mark) {
                    mark.read = Some(proof);
                }
            }
        }
    }

    /// The harness's request with this id.
    pub fn sent(&self, id: &Value) -> Option<&SentRequest> {
        self.sent.get(&self.key(id))
    }

    /// The first response to the harness's request `id`, as a transcript index.
    pub fn answer_of(&self, id: &Value) -> Option<usize> {
        self.sent(id).and_then(|r| r.answer)
    }
}
