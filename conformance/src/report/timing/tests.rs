//! The timings' tests: each measured from a transcript built by hand.

use super::*;
use crate::report::timeline::cancels;
use crate::report::timeline::tests::transcript;
use serde_json::json;
use Direction::{Received as R, Sent as S};

fn request(id: serde_json::Value, method: &str) -> serde_json::Value {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":{"_meta":{"progressToken":"t"}}})
}

fn answer(id: serde_json::Value) -> serde_json::Value {
    json!({"jsonrpc":"2.0","id":id,"result":{}})
}

fn progress(n: u64) -> serde_json::Value {
    json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":n}})
}

#[test]
fn cancel_to_quiet_runs_to_the_last_message_about_the_request() {
    let t = transcript(&[
        (100, S, request(json!(2), "tools/call")),
        (110, R, progress(1)),
        (
            120,
            S,
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}),
        ),
        (125, R, progress(2)),
        (126, S, request(json!("barrier-1"), "ping")),
        (130, R, answer(json!("barrier-1"))),
        (157, R, progress(3)),
    ]);
    let found = cancels(&t);
    let timing = cancel_timing(&t, &found[0]);
    assert_eq!(timing.at_ms, 120.0);
    assert_eq!(timing.proof_ms, Some(130.0));
    assert_eq!(timing.quiet_ms, 37.0);
    assert_eq!((timing.after, timing.late), (2, 1));
    assert!(!timing.answered);
    assert!(timing.in_flight);
    // Nothing after the cancel: quiet at once.
    let quiet = cancel_timing(&t[..3], &cancels(&t[..3])[0]);
    assert_eq!(quiet.quiet_ms, 0.0);
}

#[test]
fn cancel_to_witness_is_the_first_listing_after_the_cancel() {
    let t = transcript(&[
        (100, S, request(json!(2), "tools/call")),
        (
            120,
            S,
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}),
        ),
        (130, S, request(json!(3), "tools/call")),
    ]);
    let found = cancels(&t);
    let at = Duration::from_millis;
    // A listing of the same id before the cancel is an earlier request's; another id is not
    // this cancel's; the first listing after it is.
    let witnessed = [
        (json!(2), at(90)),
        (json!(3), at(140)),
        (json!(2), at(163)),
        (json!(2), at(300)),
    ];
    let timings = of_case(&t, &found, &witnessed);
    assert_eq!(timings.cancels[0].witness_ms, Some(163.0));
    assert_eq!(of_case(&t, &found, &[]).cancels[0].witness_ms, None);
    assert_eq!(
        of_case(&t, &found, &[(json!("2"), at(150))]).cancels[0].witness_ms,
        None,
        "the string \"2\" is not the id 2"
    );
}

#[test]
fn startup_is_the_answer_to_the_opening() {
    let t = transcript(&[
        (0, S, request(json!("init"), "initialize")),
        (
            5,
            R,
            json!({"jsonrpc":"2.0","method":"notifications/message","params":{}}),
        ),
        (812, R, answer(json!("init"))),
    ]);
    assert_eq!(startup(&t), Some(Duration::from_millis(812)));
    // A server that never answered has none; a client's is its first message.
    assert_eq!(startup(&t[..2]), None);
    let client = transcript(&[
        (0, S, json!("[relay]")),
        (40, R, request(json!(0), "initialize")),
    ]);
    assert_eq!(startup(&client), Some(Duration::from_millis(40)));
}

#[test]
fn round_trips_leave_out_the_opening_long_calls_and_cancelled_requests() {
    let mut t = transcript(&[
        (0, S, request(json!("init"), "initialize")),
        (900, R, answer(json!("init"))),
        (901, S, request(json!(1), "tools/call")),
        (902, S, request(json!("barrier-1"), "ping")),
        (905, R, answer(json!("barrier-1"))),
        (1900, R, answer(json!(1))),
        (1901, S, request(json!(7), "ping")),
        (
            1903,
            S,
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}),
        ),
        (1950, R, answer(json!(7))),
    ]);
    t[0].internal = true;
    t[3].internal = true;
    let trips = round_trips(&t, &cancels(&t));
    assert_eq!(trips, vec![Duration::from_millis(3)]);
    // A probe sent while the target was still starting waited for the start.
    let mut slow = transcript(&[
        (0, S, request(json!("init"), "initialize")),
        (300, S, request(json!("probe-1"), "ping")),
        (9000, R, answer(json!("init"))),
        (9001, R, answer(json!("probe-1"))),
    ]);
    slow[1].internal = true;
    assert!(round_trips(&slow, &[]).is_empty());
}

#[test]
fn stats_by_nearest_rank() {
    let values: Vec<f64> = (1..=20).map(f64::from).collect();
    let s = stats(&values);
    assert_eq!(s.count, 20);
    assert_eq!(s.median_ms, Some(10.0));
    assert_eq!(s.p95_ms, Some(19.0));
    assert_eq!(s.max_ms, Some(20.0));
    assert_eq!(stats(&[]), Stats::default());
    assert_eq!(stats(&[4.0]).p95_ms, Some(4.0));
}

#[test]
fn a_run_counts_only_cancels_of_requests_in_flight() {
    let cancel = |quiet_ms: f64, in_flight, method: &str| CancelTiming {
        request_id: json!(1),
        method: Some(method.into()),
        at_ms: 0.0,
        entry: 0,
        quiet_entry: None,
        proof_ms: None,
        witness_ms: None,
        quiet_ms,
        after: usize::from(quiet_ms > 0.0),
        late: 0,
        answered: quiet_ms > 100.0,
        in_flight,
    };
    let cases = [CaseTimings {
        startup_ms: Some(30.0),
        round_trips_ms: vec![1.0, 2.0],
        cancels: vec![
            CancelTiming {
                at_ms: 10.0,
                witness_ms: Some(52.5),
                ..cancel(5.0, true, "tools/call")
            },
            CancelTiming {
                witness_ms: Some(7.0),
                ..cancel(900.0, false, "tools/call")
            },
            cancel(800.0, true, "initialize"),
        ],
    }];
    let run = of_run(&cases);
    assert_eq!(run.cancel_to_quiet.count, 1);
    assert_eq!(run.cancel_to_quiet.max_ms, Some(5.0));
    assert_eq!(run.talked_after_cancel, 1);
    assert_eq!(run.answered_after_cancel, 0);
    // Witnessed: only the counted cancel, from its cancel (10 ms) to the listing.
    assert_eq!(run.cancel_to_witness.count, 1);
    assert_eq!(run.cancel_to_witness.median_ms, Some(42.5));
    assert_eq!(run.startup.median_ms, Some(30.0));
    assert_eq!(run.round_trip.count, 2);
}
