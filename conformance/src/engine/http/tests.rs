//! The HTTP bookkeeping's own tests: status words, what a message opens, the grace, sessions.

use super::*;
use serde_json::json;

#[test]
fn statuses_match_codes_and_classes() {
    let codes = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(status_matches(&codes(&["202"]), 202));
    assert!(!status_matches(&codes(&["202"]), 200));
    assert!(status_matches(&codes(&["202", "4xx"]), 404));
    assert!(!status_matches(&codes(&["4xx"]), 500));
}

#[test]
fn what_a_message_opens() {
    let key = |id: &Value| crate::pattern::id_key(id);
    let request = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
    assert_eq!(opened_by(Some(&request), key), Opened::Request("1".into()));
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}});
    assert_eq!(
        opened_by(Some(&cancel), key),
        Opened::Notification {
            method: "notifications/cancelled".into(),
            cancels: Some("\"a\"".into())
        }
    );
    let malformed =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}});
    assert!(matches!(
        opened_by(Some(&malformed), key),
        Opened::Notification { cancels: None, .. }
    ));
    assert_eq!(
        opened_by(Some(&json!({"jsonrpc":"2.0","id":3,"result":{}})), key),
        Opened::Response
    );
    assert_eq!(opened_by(None, key), Opened::Other);
}

#[test]
fn grace_grows_with_the_round_trip() {
    let mut streams = Streams::default();
    assert_eq!(streams.grace(), MIN_GRACE);
    assert_eq!(streams.arrival(), MIN_ARRIVAL);
    for ms in [10, 300, 200] {
        streams.sample(Duration::from_millis(ms));
    }
    assert_eq!(streams.grace(), Duration::from_millis(800));
    assert_eq!(streams.arrival(), Duration::from_millis(800));
}

#[test]
fn sessions_are_scoped_by_name_but_the_first() {
    let mut streams = Streams::default();
    assert_eq!((streams.session(), streams.scope(0)), (0, None));
    assert!(streams.knows("main") && !streams.knows("b"));
    assert_eq!(streams.enter("b"), 1);
    assert_eq!(streams.scope(1), Some("b"));
    assert_eq!(streams.enter("main"), 0);
    assert_eq!(streams.enter("b"), 1, "a known session keeps its index");
    streams.deleted();
    assert!(streams.is_deleted());
    streams.enter("main");
    assert!(!streams.is_deleted());
}

#[test]
fn a_case_line_takes_the_status_its_next_line_expects() {
    let mut streams = Streams::default();
    streams.expect_status(Some(vec!["404".into()]));
    assert!(streams.status_judged());
    let shown = streams.open(Channel::Post(1), 0, Opened::Other, true, String::new());
    assert_eq!(shown, None, "the harness's own line leaves it");
    assert_eq!(streams.last(), None);
    let shown = streams.open(Channel::Post(2), 1, Opened::Other, false, String::new());
    assert_eq!(shown.as_deref(), Some("404"));
    assert_eq!(streams.last(), Some(Channel::Post(2)));
    assert!(!streams.status_judged());
}
