//! The server's side of a checked trace. The client's requests and cancels go into a ledger
//! as the harness's own do in a live run; every message the server wrote is judged by the
//! live rules: `rules::response` (one answer per request, its shape), `rules::server`
//! (progress, answers after a cancel, requests it may not send), `rules::tasks`. On stdio a
//! first answer proves the server had read everything the client wrote before its request
//! (the live barrier's proof, `Ledger::prove_read`), which is what makes progress after a
//! cancel late. The server's exit while requests were in flight is judged as a live run
//! judges a target that stopped serving.

use super::{Msg, Session};
use crate::engine::parts::findings::Findings;
use crate::engine::parts::proofs::Proofs;
use crate::engine::server::tasks::learn_task;
use crate::era::ProtocolVersion;
use crate::facts::ledger::{key_in, Closed, Ledger, SentRequest};
use crate::facts::waits::Waits;
use crate::outcome::{Finding, FindingKind, Severity};
use crate::requirement::Req;
use crate::rules::envelope::Problem;
use crate::rules::server::{self, Arrived, ServerRequest};
use crate::rules::{response, tasks};
use crate::transcript::Entry;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

/// Who the findings about the server name.
const WHO: &str = "the server";

/// What the server's side has learned.
#[derive(Debug, Default)]
pub(crate) struct ServerSide {
    /// The client's requests, as the harness's are in a live run.
    ledger: Ledger,
    findings: Findings,
    /// On stdio: what the server is proven to have read, and the shortest round trip.
    proofs: Proofs,
    /// Over HTTP: every round trip, whose median sets the grace (as live).
    round_trips: Vec<Duration>,
    /// The version each of the client's requests was sent in, by key.
    versions: HashMap<String, Option<ProtocolVersion>>,
    /// The transcript indexes of the client's cancels no answer has proven read yet (a proof
    /// asks the ledger only when one is older than it: a long trace stays linear).
    unproven: BTreeSet<usize>,
    /// The client closed the server's stdin: an exit after that is the shutdown.
    input_closed: bool,
    /// The server stopped serving (said once).
    stopped: bool,
}

impl ServerSide {
    /// Findings at trace line `line`.
    pub fn add(&mut self, line: usize, problems: impl IntoIterator<Item = Problem>) {
        add(&mut self.findings, line, problems);
    }

    /// The client sent request `id` (`method`, the whole message `value`).
    pub fn request(&mut self, m: &Msg, method: &str, id: &Value, value: &Value, session: &Session) {
        let key = key_in(m.scope, id);
        self.versions.insert(key.clone(), session.version);
        let token = value
            .pointer("/params/_meta/progressToken")
            .map(|t| key_in(m.scope, t));
        // What the tool does and how long it takes is not in a recording.
        let request = SentRequest::new(m.line, m.index, m.at, method, m.channel);
        self.ledger.request_sent(key, request, token);
    }

    /// The client cancelled a request (`params` of its `notifications/cancelled`).
    pub fn cancel(&mut self, m: &Msg, params: Option<&Value>) {
        let Some(id) = params.and_then(|p| p.get("requestId")) else {
            return;
        };
        self.ledger.enter(m.scope.map(str::to_string));
        self.ledger.cancel_sent(id, m.index, m.at, None);
        self.ledger.enter(None);
        self.unproven.insert(m.index);
    }

    /// Over HTTP up to 2025-11-25: the cancel at transcript index `cancel` was answered
    /// `202` at `at`; it counts as read once the grace has passed.
    pub fn cancel_accepted(&mut self, cancel: usize, at: Duration, session: &Session) {
        let grace = self.waits(session).calm;
        self.ledger.cancel_accepted(cancel, at, grace, None);
    }

    /// In 2026-07-28 over HTTP: the client closed the stream of its request `id` (in session
    /// `scope`), recorded at transcript index `index` at `at` (`arrived`: the server had
    /// answered the request's head by then); it counts as read once the grace has passed.
    pub fn cancel_closed(
        &mut self,
        id: &Value,
        scope: Option<String>,
        (index, at, arrived): (usize, Duration, bool),
        session: &Session,
    ) {
        self.ledger.enter(scope);
        self.ledger.cancel_sent(id, index, at, None);
        self.ledger.enter(None);
        let how = Closed {
            grace: self.waits(session).calm,
            arrived,
        };
        self.ledger.cancel_closed(index, at, how, None);
    }

    /// The server sent a request of its own.
    pub fn server_request(&mut self, m: &Msg, method: &str, id: &Value, session: &Session) {
        let version = session.version;
        let agreed = version.map(|v| v.as_str());
        if let ServerRequest::Refused(problem) = server::request(method, id, version, agreed) {
            self.add(m.line, [problem]);
        }
    }

    /// Progress the server sent.
    pub fn progress(&mut self, m: &Msg, value: &Value, session: &Session) {
        let arrived = Arrived {
            params: value.get("params"),
            channel: m.channel,
            at: m.at,
            line: m.line,
            core: session.version.is_some_and(|v| v.has_core_tasks()),
        };
        let waits = self.waits(session);
        let judged = server::progress_in(&self.ledger, m.scope, &arrived, |_| waits);
        if let Some(key) = judged.key {
            let verdict = judged.verdict;
            let value = verdict.value.map(|value| (value, m.channel));
            self.ledger
                .progress(&key, verdict.counted, verdict.late, value);
        }
        self.add(m.line, judged.problems);
    }

    /// A response the server sent (to one of the client's requests, or not).
    pub fn response(&mut self, m: &Msg, value: &Value, session: &Session, transcript: &[Entry]) {
        self.add(m.line, response::shape(value));
        let Some(key) = value
            .get("id")
            .filter(|id| !id.is_null())
            .map(|id| key_in(m.scope, id))
        else {
            return;
        };
        let Some(request) = self.ledger.settle(&key, m.index) else {
            self.add(m.line, [response::unknown_id(WHO, &key)]);
            return;
        };
        let (first, line, subject, sent) = (
            request.answers == 1,
            request.line,
            request.index,
            request.sent,
        );
        let method = request.method.clone();
        let typed = response::result_type(value, session.stateless(), &method);
        self.add(m.line, typed);
        if !first {
            self.add(m.line, [response::second_answer(WHO, &key, line)]);
            return;
        }
        self.proof(subject, sent, m.at, session);
        let waits = self.waits(session);
        if let Some(request) = self.ledger.request(&key) {
            let found = server::after_cancel(&key, request, value, m.at, &waits, session.version);
            add(&mut self.findings, m.line, found);
        }
        if let Some(asked) = transcript[subject].value.as_ref() {
            let learned = tasks::learn(&method, asked, value);
            learn_task(&mut self.ledger, learned, key, m.at, None);
        }
    }

    /// The first answer to the request at transcript index `subject` (sent `sent`) came
    /// `now`: a round trip, and on stdio the proof that the server had read everything the
    /// client wrote before that request.
    fn proof(&mut self, subject: usize, sent: Duration, now: Duration, session: &Session) {
        // Only once the server was running: the first answer of a slow start measures the start.
        if session.first_heard.is_some_and(|heard| heard <= sent) {
            let took = now.saturating_sub(sent);
            self.proofs.round_trip(took);
            self.round_trips.push(took);
        }
        if !session.ordered || subject < self.proofs.proven() {
            return;
        }
        self.proofs.proved(subject + 1, now, None);
        if self.unproven.range(..=subject).next().is_some() {
            self.ledger.prove_read(subject + 1, now, None);
            self.unproven = self.unproven.split_off(&(subject + 1));
        }
    }

    /// The clock as a recording has it: no CPU waits known, no stretch, and the live calm
    /// grace (on stdio four of the shortest round trips, at least 250 ms; over HTTP four of
    /// the median one, at least 500 ms).
    fn waits(&self, session: &Session) -> Waits {
        let calm = if session.ordered {
            self.proofs.calm_grace()
        } else {
            let mut trips = self.round_trips.clone();
            trips.sort_unstable();
            let median = trips.get(trips.len() / 2).copied().unwrap_or_default();
            crate::engine::http::MIN_GRACE.max(median * 4)
        };
        Waits {
            now: None,
            calm,
            stretch: 1.0,
        }
    }

    /// The client closed the server's stdin.
    pub fn input_closed(&mut self) {
        self.input_closed = true;
    }

    /// The server stopped serving (`how`: it exited, closed its stdout) at trace line
    /// `line`: a failure while the client still had requests in flight and had not closed
    /// the server's input.
    pub fn stopped(&mut self, line: usize, how: &str) {
        if self.stopped || self.input_closed {
            return;
        }
        self.stopped = true;
        let mut waiting: Vec<&str> = self
            .ledger
            .sent_requests()
            .iter()
            .filter(|(_, r)| r.answers == 0 && r.cancel.is_none())
            .map(|(key, _)| key.as_str())
            .collect();
        if waiting.is_empty() {
            return;
        }
        waiting.sort_unstable();
        let still = format!(
            "the client's request{} {} {} in flight (neither answered nor cancelled)",
            if waiting.len() == 1 { "" } else { "s" },
            waiting.join(", "),
            if waiting.len() == 1 { "was" } else { "were" }
        );
        let problem = server::stopped_serving(Req::Std01, how, &still);
        self.add(line, [problem]);
    }

    /// What is judged once nothing more will come: progress after the proof that its cancel
    /// was read (whether it stopped), and for every cancelled request that got no answer, the
    /// note that a recording cannot show whether its handler stopped.
    pub fn finish(mut self, session: &Session) -> Vec<Finding> {
        let waits = self.waits(session);
        let versions = &self.versions;
        let version_of = |key: &str| versions.get(key).copied().flatten();
        for (line, problem) in server::late_progress_in(&self.ledger, &waits, version_of) {
            self.add(line, [problem]);
        }
        let mut silent: Vec<(usize, String, Duration)> = self
            .ledger
            .sent_requests()
            .iter()
            .filter_map(|(key, r)| {
                let mark = r.cancel.filter(|_| r.answers == 0)?;
                Some((r.line, key.clone(), mark.sent))
            })
            .collect();
        silent.sort();
        for (line, key, sent) in silent {
            let message = format!(
                "request {key} was cancelled at +{} ms and got no response after it, as it should; whether the server's handler stopped working a recording cannot show (a live run with the `cancellations` witness can)",
                sent.as_millis()
            );
            self.findings
                .add(Severity::Note, FindingKind::Rule(Req::Can05), line, message);
        }
        self.findings.into_list()
    }
}

/// Records `problems` in `findings` at trace line `line`.
pub(super) fn add(
    findings: &mut Findings,
    line: usize,
    problems: impl IntoIterator<Item = Problem>,
) {
    for p in problems {
        let kind = FindingKind::Rule(p.requirement);
        findings.add_doubting(p.severity, kind, line, p.message, p.doubt);
    }
}
