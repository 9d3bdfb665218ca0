//! Scripted servers the tests share: one that works through its requests one at a time and
//! answers in order, as a single-threaded server on a busy machine does.

use conformance::transport::scripted::{result, server_answer, Act, Heard, Script};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a tool call costs the server and what it answers (`None`: it never answers).
pub type Tool = Box<dyn Fn(&Heard) -> (Duration, Option<Value>) + Send>;

/// A server with one worker: every request waits for the ones before it, takes its cost
/// (1 ms for the opening and pings, what `tool` says for a tool call) and is answered in
/// order. Notifications cost nothing.
pub fn one_worker(tool: Tool) -> Script {
    let busy_until = Arc::new(Mutex::new(Duration::ZERO));
    Script::new().on(move |heard| {
        let Some(id) = heard.id().cloned().filter(|_| heard.method().is_some()) else {
            return vec![];
        };
        let (cost, answer) = if heard.is("tools/call") {
            tool(heard)
        } else {
            (Duration::from_millis(1), server_answer(heard))
        };
        let mut busy = busy_until.lock().unwrap();
        let done = (*busy).max(heard.at) + cost;
        *busy = done;
        let Some(answer) = answer else { return vec![] };
        vec![(
            done.saturating_sub(heard.at),
            Act::Send(result(&id, answer)),
        )]
    })
}
