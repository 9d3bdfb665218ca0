//! The harness as a client of a scripted server over Streamable HTTP: every message is a
//! POST of its own, arrival order proves nothing (`ordered()` false, a channel per request),
//! and a cancel counts as read a grace after its `202`.

use crate::scripted::support::{ms, serve, server_case, Played};
use conformance::outcome::{Outcome, Severity};
use conformance::transport::scripted::{progress, result, text, Act, LoadScript, Role, Script};
use proptest::prelude::*;
use serde_json::json;
use std::time::Duration;

/// A `sleep` of `ms` cancelled at +51 ms over HTTP (the cancel POSTed, its `202` at once),
/// then the barrier and a watch past the sleep's end.
fn cancelled_sleep(sleep: u64) -> conformance::case::Case {
    server_case(&format!(
        r#"@requirement CAN-05
@level should
@transports http
> {{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"sleep","arguments":{{"ms":{sleep}}}}}}}
! after 50ms
! cancel 1
! barrier
! silent 1 {}ms
"#,
        sleep + 600
    ))
}

/// A server that accepts the cancel's POST and ignores it: the sleep is answered at its end.
fn ignores_cancel_post(sleep: u64) -> Script {
    Script::new()
        .serving(ms(1))
        .on(move |heard| match heard.id() {
            Some(id) if heard.is("tools/call") => {
                vec![(ms(sleep), Act::Send(result(id, text("slept"))))]
            }
            _ => vec![],
        })
}

async fn ignored(sleep: u64, load: LoadScript) -> Played {
    let script = ignores_cancel_post(sleep).load(load);
    serve(
        &cancelled_sleep(sleep),
        "2025-11-25",
        Role::HttpServer,
        script,
    )
    .await
}

/// Proof by time: the cancel counts as read only a grace (500 ms) after its `202` (+51 ms),
/// after the 500 ms sleep could end (+451 ms): its answer at +501 ms may have crossed the
/// cancel, a note. Twins broken_http.rs (`ignores-cancel-post`, `no-response-after-cancel`,
/// CAN-08 note, exactly a pass).
#[tokio::test(start_paused = true)]
async fn http_an_answer_within_the_grace_after_the_202_may_have_crossed_the_cancel() {
    ignored(500, LoadScript::calm())
        .await
        .outcome(Outcome::Pass)
        .cites(Severity::Note, "CAN-08")
        .says("after the tool could have finished");
}

/// Proof by time: a 2 s sleep's answer (+2001 ms) comes long after the cancel counted as
/// read (+551 ms) and before the sleep could end (+1801 ms): CAN-05. Twins broken_http.rs
/// (`ignores-cancel-post`, `http-cancel-accepted`, CAN-05).
#[tokio::test(start_paused = true)]
async fn http_an_answer_after_the_grace_after_the_202_breaks_can_05() {
    ignored(2000, LoadScript::calm())
        .await
        .outcome(Outcome::Warn)
        .cites(Severity::Warn, "CAN-05");
}

/// Proof by time under load: the moment the cancel counts as read moves later by the time the
/// target waited for a CPU since its `202` (400 ms: +951 ms, past the 1 s sleep's end at
/// +901 ms), so its answer at +1001 ms is a note; calm, it is CAN-05. Twins d38b3ec (an HTTP
/// cancel's 202 + T_grace grows by the target's waits).
#[tokio::test(start_paused = true)]
async fn http_the_202s_grace_grows_by_the_targets_waits() {
    ignored(1000, LoadScript::calm())
        .await
        .outcome(Outcome::Warn)
        .cites(Severity::Warn, "CAN-05");
    ignored(1000, LoadScript::calm().target_starved(ms(51), ms(451)))
        .await
        .outcome(Outcome::Pass)
        .cites(Severity::Note, "CAN-08");
}

/// The shipped `http-abort-cycles` against a server that sends a call's head 8 s after the
/// call (past the calm 5 s reply limit), on a machine whose CPU pressure stretches that limit
/// tenfold: the first `! disconnect` waits for the head, and the late head tells the harness
/// that this server holds heads back, so the other four close their streams after the
/// arrival window. Before, each waited 8 s, and the case ran past its 10 s limit (twins the
/// TypeScript SDK 2.x's stateless fallback at a load average of 15 to 27).
#[tokio::test(start_paused = true)]
async fn http_a_head_later_than_the_calm_limit_is_a_held_head() {
    let case = crate::scripted::support::shipped_case("server/http-abort-cycles");
    let script = Script::new()
        .serving(ms(1))
        .heads_after(ms(8000))
        .on(|heard| match (heard.id(), heard.is("tools/call")) {
            (Some(id), true) if heard.at_pointer("/params/name") == Some(&json!("ping")) => {
                vec![(
                    ms(1),
                    Act::Send(result(id, text("Server: still available"))),
                )]
            }
            _ => vec![],
        })
        .load(LoadScript::calm().pressure(ms(0), 90.0));
    let played = serve(&case, "2025-11-25", Role::HttpServer, script).await;
    played.outcome(Outcome::Pass);
    assert!(
        played.report.duration < Duration::from_secs(10),
        "{:?}\n{}",
        played.report.duration,
        played.shown()
    );
}

/// A `work` call reporting progress with token `w`, cancelled at +101 ms, and a watch.
const CANCELLED_WORK: &str = r#"@requirement CAN-05
@level should
@transports http
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"w"}}}
! after 100ms
! cancel 1
! barrier
! silent 1 1500ms
"#;

/// A `work` call's progress at `progress_at`, and the cancel's `202` `accepted_after` its
/// POST, in whichever order they come.
async fn progress_and_202(progress_at: Duration, accepted_after: Duration) -> Played {
    let script = Script::new()
        .serving(ms(1))
        .accepts_after(Some(accepted_after))
        .at(progress_at, Act::Send(progress(&json!("w"), 1)));
    serve(
        &server_case(CANCELLED_WORK),
        "2025-11-25",
        Role::HttpServer,
        script,
    )
    .await
}

/// Two HTTP POSTs in either order, property: a progress on the call's stream and the `202`
/// of the cancel's POST, each anywhere from before the cancel to within its grace, give the
/// findings the progress gives when it comes first of all, whichever arrives first: a pass,
/// nothing charged or excused. Twins b1defd5 (cross-connection proofs: a cancel's 202 + grace
/// vs progress on another stream) and broken_http.rs (`correct`, `http-cancel-accepted`),
/// whose real POSTs arrive in the order the machine's load gives them.
#[test]
fn http_the_order_of_a_cancels_202_and_a_progress_does_not_change_the_verdict() {
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    };
    let first_of_all = runtime().block_on(progress_and_202(ms(2), Duration::ZERO));
    first_of_all.outcome(Outcome::Pass);
    let config = ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    };
    proptest!(config, |(progress_at in 2u64..560, accepted_after in 0u64..60)| {
        let played = runtime().block_on(progress_and_202(ms(progress_at), ms(accepted_after)));
        prop_assert_eq!(played.findings(), first_of_all.findings(), "{}", played.shown());
        prop_assert_eq!(played.report.outcome, Outcome::Pass);
    });
}
