//! Request ids that cannot meet: cases that share a server each write ids 1, 2, 3, and a
//! server's `cancellations` witness lists every cancel the process saw, so one case could
//! take another's cancelled request 1 for its own. At the seam between the engine and the
//! transport, [`Renumbered`] gives each shared run's ids a mark of their own on the wire
//! (an integer `n` becomes `run × SPAN + n`, a string `s` becomes `s~run`), for request ids,
//! the `requestId` of a cancel and progress tokens, and takes the mark off what comes back
//! (answers, progress, the target's cancels, a subscription's id in its notifications):
//! the engine, its ledger and the transcript see the case's ids as written. The witness's
//! answer keeps only this run's ids (and what no run marked, such as task ids); the ids of
//! other runs are left out. On a stdio session that cases take turns on, what an earlier run
//! left behind (a late answer, progress on its token) may still come:
//! [`Renumbered::taking_turns`] leaves such messages out. Cases whose ids are the point (id `0`, an id's type, one id in
//! two sessions) say `@fresh` and never come here.

use crate::transport::process::{Process, TargetLog};
use crate::transport::{Channel, Event, HttpSteps, SendError, Transport};
use serde_json::Value;
use std::collections::HashSet;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// How many integer ids one run may use from 0 before they would meet another run's.
const SPAN: i64 = 10_000_000;

/// A transport whose outgoing ids carry this run's mark, and whose incoming ones lose it.
pub struct Renumbered<T> {
    inner: T,
    run: i64,
    /// The tool that plays the `cancellations` witness on this target.
    witness_tool: String,
    /// The wire ids of the calls to the witness, whose answers are filtered.
    witness_calls: HashSet<String>,
    /// Whether answers to other runs' ids and progress on their tokens are left out (a
    /// stream the runs take turns on).
    others_out: bool,
}

impl<T> Renumbered<T> {
    /// `inner` with a mark no other run of this process has.
    pub fn new(inner: T, witness_tool: String) -> Self {
        static RUNS: AtomicU64 = AtomicU64::new(1);
        Renumbered {
            inner,
            run: RUNS.fetch_add(1, Ordering::Relaxed) as i64,
            witness_tool,
            witness_calls: HashSet::new(),
            others_out: false,
        }
    }

    /// `inner`, a stream other runs used before this one: what they left behind is not
    /// this run's to see.
    pub fn taking_turns(inner: T, witness_tool: String) -> Self {
        Renumbered {
            others_out: true,
            ..Self::new(inner, witness_tool)
        }
    }

    /// Whether a message the target sent belongs to another run: an answer to its id, or
    /// progress on its token.
    fn others(&self, message: &Value) -> bool {
        let method = message.get("method").and_then(Value::as_str);
        if method.is_none() {
            return message.get("id").is_some_and(|id| self.unmark(id).is_err());
        }
        ids_named(method)
            .iter()
            .filter_map(|pointer| message.pointer(pointer))
            .any(|id| self.unmark(id).is_err())
    }

    fn mark(&self, id: &Value) -> Option<Value> {
        if let Some(n) = id.as_i64().filter(|n| (0..SPAN).contains(n)) {
            return Some(Value::from(self.run * SPAN + n));
        }
        id.as_str()
            .map(|s| Value::from(format!("{s}~{}", self.run)))
    }

    /// The case's id for a wire id: `Ok(Some)` for this run's, `Ok(None)` for one no run
    /// marked, `Err` for another run's.
    fn unmark(&self, id: &Value) -> Result<Option<Value>, ()> {
        if let Some(n) = id.as_i64().filter(|n| *n >= SPAN) {
            return if n / SPAN == self.run {
                Ok(Some(Value::from(n % SPAN)))
            } else {
                Err(())
            };
        }
        if let Some((s, run)) = id.as_str().and_then(|s| s.rsplit_once('~')) {
            if let Ok(run) = run.parse::<i64>() {
                return if run == self.run {
                    Ok(Some(Value::from(s)))
                } else {
                    Err(())
                };
            }
        }
        Ok(None)
    }

    /// Marks a message the harness sends; whether anything in it changed.
    fn outgoing(&mut self, message: &mut Value) -> bool {
        let mut changed = false;
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(String::from);
        let Some(method) = method else {
            return false;
        };
        let renumber = |this: &Self, slot: Option<&mut Value>, changed: &mut bool| {
            if let Some(slot) = slot {
                if let Some(marked) = this.mark(slot) {
                    *slot = marked;
                    *changed = true;
                }
            }
        };
        renumber(self, message.get_mut("id"), &mut changed);
        if method == "notifications/cancelled" {
            renumber(self, message.pointer_mut("/params/requestId"), &mut changed);
        }
        renumber(
            self,
            message.pointer_mut("/params/_meta/progressToken"),
            &mut changed,
        );
        let tool = message.pointer("/params/name").and_then(Value::as_str);
        if method == "tools/call" && tool == Some(self.witness_tool.as_str()) {
            if let Some(id) = message.get("id") {
                self.witness_calls.insert(id.to_string());
            }
        }
        changed
    }

    /// Takes this run's mark off a message the target sent; whether anything changed.
    fn incoming(&mut self, message: &mut Value) -> bool {
        let mut changed = false;
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(String::from);
        if method.is_none() {
            let Some(id) = message.get("id").cloned() else {
                return false;
            };
            if self.witness_calls.contains(&id.to_string()) {
                changed |= self.only_own_witness(message);
            }
            if let Ok(Some(own)) = self.unmark(&id) {
                message["id"] = own;
                changed = true;
            }
        } else {
            for pointer in ids_named(method.as_deref()) {
                if let Some(slot) = message.pointer_mut(pointer) {
                    if let Ok(Some(own)) = self.unmark(slot) {
                        *slot = own;
                        changed = true;
                    }
                }
            }
        }
        changed
    }

    /// The witness's list with this run's ids as the case wrote them, without other runs'.
    fn only_own_witness(&self, answer: &mut Value) -> bool {
        let Some(list) = crate::fixtures::witness_list(answer) else {
            return false;
        };
        let own: Vec<Value> = list
            .into_iter()
            .filter_map(|id| match self.unmark(&id) {
                Ok(Some(own)) => Some(own),
                Ok(None) => Some(id),
                Err(()) => None,
            })
            .collect();
        match answer.pointer_mut("/result/content/0/text") {
            Some(text) => {
                *text = Value::from(Value::from(own).to_string());
                true
            }
            None => false,
        }
    }
}

/// Where a notification from the target names one of the harness's requests or tokens: the
/// progress token, the request a cancel is about, the subscription (a `subscriptions/listen`
/// request's id) a notification belongs to.
fn ids_named(method: Option<&str>) -> &'static [&'static str] {
    const SUBSCRIPTION: &str = "/params/_meta/io.modelcontextprotocol~1subscriptionId";
    match method {
        Some("notifications/progress") => &["/params/progressToken", SUBSCRIPTION],
        Some("notifications/cancelled") => &["/params/requestId", SUBSCRIPTION],
        Some(_) => &[SUBSCRIPTION],
        None => &[],
    }
}

impl<T: Transport> Transport for Renumbered<T> {
    async fn send(
        &mut self,
        bytes: &[u8],
        reply_to: Option<Channel>,
    ) -> Result<Channel, SendError> {
        if let Ok(mut message) = serde_json::from_slice::<Value>(bytes) {
            if self.outgoing(&mut message) {
                let text = message.to_string();
                return self.inner.send(text.as_bytes(), reply_to).await;
            }
        }
        self.inner.send(bytes, reply_to).await
    }

    async fn next(&mut self, deadline: Deadline) -> Option<(Instant, Event)> {
        loop {
            let (at, event) = self.inner.next(deadline).await?;
            let event = match event {
                Event::Message { channel, bytes } => {
                    let mut bytes = bytes;
                    if let Ok(mut message) = serde_json::from_slice::<Value>(&bytes) {
                        if self.others_out && self.others(&message) {
                            self.inner.note(format!(
                                "[harness] left out, another case's: {}",
                                String::from_utf8_lossy(&bytes)
                            ));
                            continue;
                        }
                        if self.incoming(&mut message) {
                            bytes = message.to_string().into_bytes();
                        }
                    }
                    Event::Message { channel, bytes }
                }
                other => other,
            };
            return Some((at, event));
        }
    }

    fn finished(&self) -> bool {
        self.inner.finished()
    }

    fn ordered(&self) -> bool {
        self.inner.ordered()
    }

    fn channel_per_request(&self) -> bool {
        self.inner.channel_per_request()
    }

    fn abort(&mut self, channel: Channel) -> bool {
        self.inner.abort(channel)
    }

    fn agreed(&mut self, version: &str) {
        self.inner.agreed(version)
    }

    fn http_steps(&mut self) -> Option<&mut dyn HttpSteps> {
        self.inner.http_steps()
    }

    fn close_input(&mut self) {
        self.inner.close_input()
    }

    fn expire_session(&mut self) -> bool {
        self.inner.expire_session()
    }

    fn input_open(&self) -> bool {
        self.inner.input_open()
    }

    fn started(&self) -> Instant {
        self.inner.started()
    }

    fn process(&self) -> Option<&Process> {
        self.inner.process()
    }

    fn load(&self) -> crate::load::source::Load {
        self.inner.load()
    }

    fn exit_status(&self) -> Option<ExitStatus> {
        self.inner.exit_status()
    }

    fn process_group(&self) -> Option<i32> {
        self.inner.process_group()
    }

    fn fresh(&self) -> bool {
        self.inner.fresh()
    }

    fn note(&self, text: String) {
        self.inner.note(text)
    }

    async fn shutdown(&mut self, grace: Duration) -> TargetLog {
        self.inner.shutdown(grace).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pair() -> (Renumbered<()>, Renumbered<()>) {
        (
            Renumbered::new((), "cancellations".into()),
            Renumbered::new((), "cancellations".into()),
        )
    }

    #[test]
    fn ids_and_tokens_carry_the_run_and_come_back_as_written() {
        let (mut a, b) = pair();
        let mut call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","_meta":{"progressToken":"p"}}});
        assert!(a.outgoing(&mut call));
        let (wire, token) = (
            call["id"].clone(),
            call["params"]["_meta"]["progressToken"].clone(),
        );
        assert_ne!(wire, json!(1));
        assert!(token.as_str().is_some_and(|t| t.starts_with("p~")));
        assert_eq!(b.unmark(&wire), Err(()), "another run's id is not b's");
        let mut cancel =
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
        a.outgoing(&mut cancel);
        assert_eq!(cancel["params"]["requestId"], wire);
        let mut response = json!({"jsonrpc":"2.0","id":wire,"result":{}});
        assert!(a.incoming(&mut response));
        assert_eq!(response["id"], json!(1));
        let mut progress = json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":token,"progress":1}});
        a.incoming(&mut progress);
        assert_eq!(progress["params"]["progressToken"], json!("p"));
        // A request of the target keeps its id; an answer of the harness is not marked.
        let mut answer = json!({"jsonrpc":"2.0","id":5,"result":{}});
        assert!(!a.outgoing(&mut answer));
        let mut request = json!({"jsonrpc":"2.0","id":5,"method":"roots/list"});
        assert!(!a.incoming(&mut request));
    }

    #[test]
    fn taking_turns_leaves_out_what_other_runs_left_behind() {
        let (mut a, _) = pair();
        let b = Renumbered::taking_turns((), "cancellations".into());
        let mut call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","_meta":{"progressToken":7}}});
        a.outgoing(&mut call);
        let token = call["params"]["_meta"]["progressToken"].clone();
        let late = json!({"jsonrpc":"2.0","id":call["id"],"result":{}});
        let progress = json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":token,"progress":2}});
        assert!(b.others(&late) && b.others(&progress));
        assert!(!a.others(&late), "a's own answer is a's");
        let log = json!({"jsonrpc":"2.0","method":"notifications/message","params":{}});
        let request = json!({"jsonrpc":"2.0","id":3,"method":"roots/list"});
        let unmarked = json!({"jsonrpc":"2.0","id":"x","result":{}});
        assert!(!b.others(&log) && !b.others(&request) && !b.others(&unmarked));
    }

    #[test]
    fn a_subscriptions_id_and_the_targets_cancel_come_back_as_written() {
        let (mut a, b) = pair();
        let mut listen =
            json!({"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{}});
        a.outgoing(&mut listen);
        let meta = json!({"io.modelcontextprotocol/subscriptionId": listen["id"]});
        let mut ack = json!({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":meta}});
        let mut cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":listen["id"]}});
        assert!(b.others(&ack) && b.others(&cancel));
        assert!(a.incoming(&mut ack) && a.incoming(&mut cancel));
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            json!("listen-1")
        );
        assert_eq!(cancel["params"]["requestId"], json!("listen-1"));
    }

    #[test]
    fn the_witness_lists_only_this_runs_ids_and_unmarked_ones() {
        let (mut a, mut b) = pair();
        let mut mine =
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work"}});
        let mut theirs = mine.clone();
        a.outgoing(&mut mine);
        b.outgoing(&mut theirs);
        let mut ask = json!({"jsonrpc":"2.0","id":"witness-1","method":"tools/call","params":{"name":"cancellations"}});
        a.outgoing(&mut ask);
        let list = json!([theirs["id"], mine["id"], "task-7"]).to_string();
        let mut answer = json!({"jsonrpc":"2.0","id":ask["id"],"result":{"content":[{"type":"text","text":list}]}});
        assert!(a.incoming(&mut answer));
        assert_eq!(answer["id"], json!("witness-1"));
        assert_eq!(
            crate::fixtures::witness_list(&answer),
            Some(vec![json!(1), json!("task-7")])
        );
    }
}
