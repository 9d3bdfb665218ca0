//! The request ledger: every request either side sent in one case, and what became of it.
//!
//! The standing rules need it (one response per request, progress only for live tokens, a
//! cancel only for one's own live request) and so do the steps (waiting for an answer). Ids
//! are keyed by their canonical JSON text, so `7` and `"7"` are different requests. Ids are
//! scoped to a session: over HTTP a case may hold two sessions that both use id `1`, and the
//! ledger keys the other session's as `1 in session NAME`.

mod records;
#[cfg(test)]
mod tests;

pub use records::{
    CancelMark, Closed, Due, LateProgress, ReceivedRequest, SentRequest, TaskRecord,
};

use crate::exchange::Channel;
use crate::pattern::id_key;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

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
    /// The harness's requests the `cancellations` witness listed, each by id key, with its
    /// id and when the witness's answer that first listed it came (since the target
    /// started), in that order.
    witnessed: Vec<(String, Value, Duration)>,
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

    /// The `cancellations` witness's answer that came at `at` (since the target started)
    /// listed the harness's request with this id, in the session the steps are in; the first
    /// such answer is kept.
    pub fn witnessed(&mut self, id: &Value, at: Duration) {
        let key = self.key(id);
        if self.sent.contains_key(&key) && !self.witnessed.iter().any(|(k, _, _)| *k == key) {
            self.witnessed.push((key, id.clone(), at));
        }
    }

    /// The harness's requests the witness listed: (id, when its answer that first listed the
    /// request came, since the target started), in the order they were first listed.
    pub fn witnessed_requests(&self) -> Vec<(Value, Duration)> {
        self.witnessed
            .iter()
            .map(|(_, id, at)| (id.clone(), *at))
            .collect()
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

    /// The target's request `key` was answered with `answer` at `at` (a recorded session's
    /// answer, stamped by the recorder).
    pub fn answered_at(&mut self, key: &str, answer: &Value, at: std::time::Instant) {
        if let Some(request) = self.received.get_mut(key) {
            request.answer_at(answer, at, None);
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
