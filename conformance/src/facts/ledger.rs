//! The request ledger: every request either side sent in one case, and what became of it.
//!
//! The standing rules need it (one response per request, progress only for live tokens, a
//! cancel only for one's own live request) and so do the steps (waiting for an answer). Ids
//! are keyed by their canonical JSON text, so `7` and `"7"` are different requests. Ids are
//! scoped to a session: over HTTP a case may hold two sessions that both use id `1`, and the
//! ledger keys the other session's as `1 in session NAME`.

use crate::exchange::Channel;
use crate::pattern::id_key;
use serde_json::Value;
use std::collections::HashMap;
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
        if self.answered.is_none() {
            self.answered_waited = waited;
        }
        self.answered.get_or_insert_with(Instant::now);
        self.succeeded |= answer.get("result").is_some();
        if self.method == "tools/call" && self.task.is_none() {
            self.task = created_task(answer);
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

/// Every request of one case, both ways. The engine tells it what was sent and what came
/// (intent by intent: a request sent, its answer settled, a cancel, a task learned); the rules
/// read its records ([`SentRequest`], [`ReceivedRequest`], [`TaskRecord`]) through it.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Tasks the harness's requests created, by task id.
    tasks: HashMap<String, TaskRecord>,
    /// Requests the harness sent, by id key.
    sent: HashMap<String, SentRequest>,
    /// Progress tokens of the harness's requests → the request's id key.
    tokens: HashMap<String, String>,
    /// Requests the target sent, by id key.
    received: HashMap<String, ReceivedRequest>,
    /// The session the steps are in (`None`: the first, whose keys are the bare ids).
    scope: Option<String>,
}

impl Ledger {
    /// The key of a request id or progress token in the session the steps are in.
    pub fn key(&self, id: &Value) -> String {
        key_in(self.scope.as_deref(), id)
    }

    /// The steps go on in session `scope` (`None`: the first): the ids they name are its.
    pub fn enter(&mut self, scope: Option<String>) {
        self.scope = scope;
    }

    /// The harness sent `request` (keyed `key`), with progress token `token` (a key) if it
    /// carries one.
    pub fn request_sent(&mut self, key: String, request: SentRequest, token: Option<String>) {
        if let Some(token) = token {
            self.tokens.insert(token, key.clone());
        }
        self.sent.insert(key, request);
    }

    /// The harness's request `key` travelled on `channel`.
    pub fn travelled(&mut self, key: &str, channel: Channel) {
        if let Some(request) = self.sent.get_mut(key) {
            request.channel = channel;
        }
    }

    /// The harness's request with this id, in the session the steps are in.
    pub fn sent(&self, id: &Value) -> Option<&SentRequest> {
        self.sent.get(&self.key(id))
    }

    /// The harness's request with key `key`.
    pub fn request(&self, key: &str) -> Option<&SentRequest> {
        self.sent.get(key)
    }

    /// Every request the harness sent, by key, for the rules to read.
    pub fn sent_requests(&self) -> &HashMap<String, SentRequest> {
        &self.sent
    }

    /// The key of the harness's request that carries progress token `token`, in the session
    /// the steps are in.
    pub fn token(&self, token: &Value) -> Option<&String> {
        self.tokens.get(&self.key(token))
    }

    /// The harness's request with this id in session `scope` (`None`: the first).
    pub fn sent_in(&self, scope: Option<&str>, id: &Value) -> Option<&SentRequest> {
        self.sent.get(&key_in(scope, id))
    }

    /// The key of the harness's request that carries progress token `token` in session
    /// `scope`.
    pub fn token_in(&self, scope: Option<&str>, token: &Value) -> Option<&String> {
        self.tokens.get(&key_in(scope, token))
    }

    /// A response to the harness's request `key` came at transcript index `index`: one more
    /// answer, the first one noted. The request, unless the harness never sent it.
    pub fn settle(&mut self, key: &str, index: usize) -> Option<&SentRequest> {
        let request = self.sent.get_mut(key)?;
        request.answers += 1;
        request.answer.get_or_insert(index);
        Some(request)
    }

    /// A `! silent` step watched the harness's request `key`.
    pub fn watched(&mut self, key: &str) {
        if let Some(request) = self.sent.get_mut(key) {
            request.watched = true;
        }
    }

    /// Progress for the harness's request `key` came: `counted` toward what it owed, `late`
    /// when after the proof that its cancel was read, and its value and channel.
    pub fn progress(
        &mut self,
        key: &str,
        counted: bool,
        late: Option<LateProgress>,
        value: Option<(f64, Channel)>,
    ) {
        let Some(request) = self.sent.get_mut(key) else {
            return;
        };
        if counted {
            request.progress_seen += 1;
        }
        request.after_proof.extend(late);
        if let Some(value) = value {
            request.last_progress = Some(value);
        }
    }

    /// The harness's request `key` created task `task` (the first such answer counts).
    pub fn task_created(&mut self, task: String, key: String) {
        self.tasks.entry(task).or_insert(TaskRecord {
            request: key,
            terminal: None,
            cancel_answered: None,
        });
    }

    /// A `tasks/cancel` of `task` was answered with a result `at` (since the target started),
    /// when it had waited `waited` for a CPU; the first counts.
    pub fn task_cancel_answered(&mut self, task: &str, at: Duration, waited: Option<Duration>) {
        if let Some(record) = self.tasks.get_mut(task) {
            record.cancel_answered.get_or_insert((at, waited));
        }
    }

    /// An answer `at` showed `task` terminal with `status`; the first counts.
    pub fn task_terminal(
        &mut self,
        task: &str,
        at: Duration,
        status: String,
        waited: Option<Duration>,
    ) {
        if let Some(record) = self.tasks.get_mut(task) {
            record.terminal.get_or_insert((at, status, waited));
        }
    }

    /// The target sent `request`, keyed `key`.
    pub fn request_received(&mut self, key: String, request: ReceivedRequest) {
        self.received.insert(key, request);
    }

    /// The target's request `key`.
    pub fn received(&self, key: &str) -> Option<&ReceivedRequest> {
        self.received.get(key)
    }

    /// Every request the target sent (in its current session), by key, for the rules.
    pub fn received_requests(&self) -> &HashMap<String, ReceivedRequest> {
        &self.received
    }

    /// The harness answered the target's request `key` with `answer`, when the target had
    /// waited `waited` for a CPU.
    pub fn answered(&mut self, key: &str, answer: &Value, waited: Option<Duration>) {
        if let Some(request) = self.received.get_mut(key) {
            request.answer(answer, waited);
        }
    }

    /// The target cancelled its request `key`.
    pub fn cancelled(&mut self, key: &str) {
        if let Some(request) = self.received.get_mut(key) {
            request.cancelled = true;
        }
    }

    /// The target closed `channel`, which carried one of its requests not yet answered: the
    /// request's key, and whether the close cancelled it (a request of the stateless era).
    pub fn stream_closed(&mut self, channel: Channel) -> Option<(String, bool)> {
        let (key, request) = self
            .received
            .iter_mut()
            .find(|(_, r)| r.channel == channel && r.answered.is_none())?;
        request.cancelled |= request.stateless;
        Some((key.clone(), request.stateless))
    }

    /// The target began a new session: ids are unique only within one.
    pub fn new_session(&mut self) {
        self.received.clear();
    }

    /// The channel a message of the harness's about one of the target's requests belongs on:
    /// the request's own for its answer and for progress on it; `None` for anything else.
    pub fn reply_channel(&self, message: &Value) -> Option<Channel> {
        if message.get("method").and_then(Value::as_str) == Some("notifications/progress") {
            let token = self.key(message.pointer("/params/progressToken")?);
            return self
                .received
                .values()
                .find(|r| r.token.as_ref() == Some(&token))
                .map(|r| r.channel);
        }
        if message.get("method").is_some() {
            return None;
        }
        let id = message.get("id")?;
        self.received.get(&self.key(id)).map(|r| r.channel)
    }

    /// Records the harness's cancel of request `id`, sent at transcript index `at`, `sent`
    /// after the target started (when it had waited `waited` for a CPU). The first cancel
    /// counts.
    pub fn cancel_sent(&mut self, id: &Value, at: usize, sent: Duration, waited: Option<Duration>) {
        let key = self.key(id);
        if let Some(request) = self.sent.get_mut(&key) {
            request.answered_before_cancel = request.answers > 0;
            request.cancel.get_or_insert(CancelMark {
                at,
                sent,
                read: None,
                accepted: None,
                closed: None,
                waited: None,
                sent_waited: waited,
            });
        }
    }

    /// The cancel sent at transcript index `at`, `closed` after the target started, was the
    /// harness closing the request's stream: it counts as read once the grace has passed, and
    /// later by as long as the target and the harness wait for a CPU from `waited` on.
    pub fn cancel_closed(
        &mut self,
        at: usize,
        closed: Duration,
        how: Closed,
        waited: Option<Duration>,
    ) {
        for request in self.sent.values_mut() {
            if let Some(mark) = request.cancel.as_mut().filter(|m| m.at == at) {
                if mark.read.is_none() {
                    mark.read = Some(closed + how.grace);
                    mark.closed = Some(how);
                    mark.waited = waited;
                }
            }
        }
    }

    /// Over HTTP: the cancel sent at transcript index `at` was accepted with `202`; it counts
    /// as read `grace` after `accepted` (since the target started), and later by as long as
    /// the target and the harness wait for a CPU from `waited` on.
    pub fn cancel_accepted(
        &mut self,
        at: usize,
        accepted: Duration,
        grace: Duration,
        waited: Option<Duration>,
    ) {
        for request in self.sent.values_mut() {
            if let Some(mark) = request.cancel.as_mut().filter(|m| m.at == at) {
                if mark.read.is_none() {
                    mark.read = Some(accepted + grace);
                    mark.accepted = Some(grace);
                    mark.waited = waited;
                }
            }
        }
    }

    /// Marks every cancel sent before transcript index `before` as read by the target, as
    /// proved by something that arrived `now` after the target started (when the target and
    /// the harness had waited `waited` for a CPU).
    pub fn prove_read(&mut self, before: usize, now: Duration, waited: Option<Duration>) {
        for request in self.sent.values_mut() {
            if let Some(mark) = request.cancel.as_mut() {
                if mark.at < before && mark.read.is_none() {
                    mark.read = Some(now);
                    mark.waited = waited;
                }
            }
        }
    }

    /// The task a witness id names, if it names one of the case's tasks.
    pub fn task_named(&self, id: &Value) -> Option<&TaskRecord> {
        id.as_str().and_then(|id| self.tasks.get(id))
    }

    /// The task request `request` (an id key) created, if it created one.
    pub fn task_of(&self, request: &str) -> Option<&TaskRecord> {
        self.tasks.values().find(|t| t.request == request)
    }

    /// The first response to the harness's request `id`, as a transcript index.
    pub fn answer_of(&self, id: &Value) -> Option<usize> {
        self.sent(id).and_then(|r| r.answer)
    }
}

/// The key of a request id or progress token in the scope of session `scope` (`None`: the
/// first).
pub fn key_in(scope: Option<&str>, id: &Value) -> String {
    match scope {
        None => id_key(id),
        Some(session) => format!("{} in session {session}", id_key(id)),
    }
}

/// The task id a `tools/call` answer created, if it is a `CreateTaskResult` of either era.
pub fn created_task(answer: &Value) -> Option<String> {
    let result = answer.get("result")?;
    let core = result.pointer("/task/taskId");
    let extension = (result.get("resultType").and_then(Value::as_str) == Some("task"))
        .then(|| result.get("taskId"))
        .flatten();
    core.or(extension)
        .and_then(Value::as_str)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn received(channel: Channel, stateless: bool) -> ReceivedRequest {
        ReceivedRequest {
            method: "tools/call".into(),
            answered: None,
            answered_waited: None,
            succeeded: false,
            cancelled: false,
            token: Some("\"t\"".into()),
            channel,
            stateless,
            task: None,
        }
    }

    #[test]
    fn ids_are_keyed_by_the_session_they_belong_to() {
        let mut ledger = Ledger::default();
        assert_eq!(ledger.key(&json!(1)), "1");
        ledger.enter(Some("b".into()));
        assert_eq!(ledger.key(&json!(1)), "1 in session b");
        assert_eq!(key_in(None, &json!("1")), "\"1\"");
    }

    #[test]
    fn a_settled_answer_counts_and_the_first_is_kept() {
        let mut ledger = Ledger::default();
        let request = crate::rules::testing::call();
        ledger.request_sent("1".into(), request, Some("\"p\"".into()));
        assert_eq!(ledger.token(&json!("p")).map(String::as_str), Some("1"));
        assert_eq!(ledger.settle("1", 4).map(|r| r.answers), Some(1));
        let again = ledger.settle("1", 9).expect("sent");
        assert_eq!((again.answers, again.answer), (2, Some(4)));
        assert!(ledger.settle("2", 5).is_none(), "never sent");
        assert_eq!(ledger.answer_of(&json!(1)), Some(4));
    }

    #[test]
    fn a_closed_stream_cancels_only_a_stateless_request() {
        let mut ledger = Ledger::default();
        ledger.request_received("1".into(), received(Channel::Post(1), false));
        ledger.request_received("2".into(), received(Channel::Post(2), true));
        assert_eq!(
            ledger.stream_closed(Channel::Post(1)),
            Some(("1".into(), false))
        );
        assert!(!ledger.received("1").unwrap().cancelled);
        assert_eq!(
            ledger.stream_closed(Channel::Post(2)),
            Some(("2".into(), true))
        );
        assert!(ledger.received("2").unwrap().cancelled);
        assert_eq!(ledger.stream_closed(Channel::Post(3)), None);
    }

    #[test]
    fn replies_go_on_the_channel_of_the_request_they_are_about() {
        let mut ledger = Ledger::default();
        ledger.request_received("1".into(), received(Channel::Post(1), false));
        let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
        assert_eq!(ledger.reply_channel(&answer), Some(Channel::Post(1)));
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t"}});
        assert_eq!(ledger.reply_channel(&progress), Some(Channel::Post(1)));
        let other = json!({"jsonrpc": "2.0", "method": "notifications/message"});
        assert_eq!(ledger.reply_channel(&other), None);
        ledger.answered("1", &answer, None);
        assert!(ledger.received("1").unwrap().succeeded);
        ledger.new_session();
        assert_eq!(ledger.reply_channel(&answer), None);
    }
}
