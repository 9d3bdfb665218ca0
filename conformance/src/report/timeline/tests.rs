//! The transcript readings' tests, and the transcript builder other tests of the report use
//! (a transcript from (ms, direction, message) triples).

use super::*;
use serde_json::json;

/// A transcript from (ms, direction, message) triples; a string message is a marker.
pub(crate) fn transcript(lines: &[(u64, Direction, Value)]) -> Vec<Entry> {
    lines
        .iter()
        .map(|(ms, direction, message)| {
            let at = Duration::from_millis(*ms);
            let (text, value) = match message {
                Value::String(text) => (text.clone(), None),
                other => (other.to_string(), Some(other.clone())),
            };
            match direction {
                Direction::Sent => Entry::sent(at, text, value, false),
                Direction::Received => Entry::received(at, Channel::Stdio, text, value),
                Direction::Transport => Entry::event(at, Channel::Stdio, text),
            }
        })
        .collect()
}

fn call(id: u64, token: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"ticker","_meta":{"progressToken":token}}})
}

fn progress(token: &str, n: u64) -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":token,"progress":n}})
}

fn cancel(id: u64) -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id}})
}

fn ping(id: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"ping"})
}

fn answer(id: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"result":{}})
}

use Direction::{Received as R, Sent as S};

#[test]
fn a_cancel_its_proof_and_what_came_after() {
    let t = transcript(&[
        (0, S, call(2, "t")),
        (10, R, progress("t", 1)),
        (20, S, cancel(2)),
        (21, R, progress("t", 2)),
        (22, S, ping("barrier-1")),
        (25, R, answer(json!("barrier-1"))),
        (30, R, progress("t", 3)),
        (31, R, progress("other", 1)),
    ]);
    let found = cancels(&t);
    assert_eq!(found.len(), 1);
    let c = &found[0];
    assert_eq!((c.index, c.request, c.proof), (2, Some(0), Some(5)));
    assert_eq!(c.method.as_deref(), Some("tools/call"));
    assert!(!c.answered_before);
    assert_eq!(c.after, vec![3, 6]);
    let marks = marks(&t, &found);
    assert_eq!(marks[&2], Mark::Cancel);
    assert_eq!(marks[&3], Mark::AfterCancel);
    assert_eq!(marks[&5], Mark::Proof);
    assert_eq!(marks[&6], Mark::Late);
    assert!(
        !marks.contains_key(&7),
        "progress of another token is not about it"
    );
}

#[test]
fn what_was_read_before_the_cancel_was_written_is_not_after_it() {
    // The progress was read at 19 ms and recorded after the cancel written at 20 ms.
    let t = transcript(&[
        (0, S, call(2, "t")),
        (20, S, cancel(2)),
        (19, R, progress("t", 1)),
        (19, R, answer(json!(2))),
    ]);
    let found = cancels(&t);
    assert!(found[0].after.is_empty());
    assert!(found[0].answered_before);
}

#[test]
fn a_cancel_of_an_answered_request_or_an_unknown_id() {
    let t = transcript(&[
        (0, S, call(1, "t")),
        (5, R, answer(json!(1))),
        (6, S, cancel(1)),
        (7, S, cancel(9)),
    ]);
    let found = cancels(&t);
    assert!(found[0].answered_before);
    assert_eq!(found[1].request, None);
    assert!(found[1].after.is_empty());
}

#[test]
fn an_id_of_another_type_names_no_request() {
    let t = transcript(&[
        (0, S, call(1, "t")),
        (
            1,
            S,
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"1"}}),
        ),
    ]);
    assert_eq!(cancels(&t)[0].request, None);
}

#[test]
fn closing_a_stream_cancels_the_request_that_opened_it() {
    let mut t = transcript(&[
        (0, S, call(3, "t")),
        (4, R, progress("t", 1)),
        (5, S, json!("[cancel 3: closed the stream of POST 2]")),
        (600, S, ping("barrier-1")),
        (610, R, answer(json!("barrier-1"))),
    ]);
    for e in &mut t[..3] {
        e.channel = Channel::Post(2);
    }
    t[3].channel = Channel::Post(3);
    t[4].channel = Channel::Post(3);
    let found = cancels(&t);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].request, Some(0));
    assert_eq!(found[0].request_id, json!(3));
    assert_eq!(found[0].proof, Some(4));
}

#[test]
fn a_client_that_cancels_has_no_proof() {
    let t = transcript(&[
        (0, R, call(1, "t")),
        (5, R, cancel(1)),
        (6, S, answer(json!(1))),
    ]);
    let found = cancels(&t);
    assert_eq!(found[0].by, R);
    assert_eq!(found[0].proof, None);
    assert_eq!(found[0].after, vec![2]);
    assert_eq!(marks(&t, &found)[&2], Mark::AfterCancel);
}
