//! The ledger's own tests: keys by session, settled answers, closed streams, replies.

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
