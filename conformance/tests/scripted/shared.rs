//! A shared server process (`share::stdio`) handed from case to case: a case lent it ends
//! with a drain (the era's `ping`, whose answer shows the session clean), and the process is
//! handed on only once that answer came. Played against a scripted server over stdio.

use crate::scripted::support::{ms, options, server_case, Played};
use conformance::case_report::SharedProcess as Process;
use conformance::engine::Engine;
use conformance::era::ProtocolVersion;
use conformance::outcome::{Outcome, Severity};
use conformance::share::lent::Returned;
use conformance::share::stdio::Shared;
use conformance::transport::scripted::{result, text, Act, Role, Script, Scripted};
use conformance::transport::Transport;
use serde_json::json;

/// What a case lent a shared process gave, and the process as it came back.
struct Lent {
    played: Played,
    back: Option<Shared<Scripted>>,
}

async fn lent(case_text: &str, script: Script) -> Lent {
    let case = server_case(case_text);
    let options = options("2025-11-25");
    let target = Scripted::new(Role::StdioServer, script);
    let heard = target.heard();
    let back = Returned::<Scripted>::default();
    let process = Process { ordinal: 1, pid: 0 };
    let (io, side, _) =
        Shared::new(target, process).lend(ProtocolVersion::V2025_11_25, back.clone());
    let report = Engine::new(&case, &options, io, side)
        .run("scripted".into())
        .await;
    let heard = heard.lock().unwrap().clone();
    let back = back.lock().unwrap().take();
    Lent {
        played: Played { report, heard },
        back,
    }
}

/// Whether the pool would keep the process for the next case (`Pool::give_back`, given a
/// clean pass): it still serves and its input is open.
fn kept(back: &Option<Shared<Scripted>>) -> bool {
    back.as_ref()
        .is_some_and(|s| !s.io().finished() && s.io().input_open())
}

const ONE_PING: &str = r#"@requirement PING-01
@level must
> {"jsonrpc":"2.0","id":1,"method":"ping"}
< {"jsonrpc":"2.0","id":1,"result":{}}
"#;

/// Handed on after a drain: the case passes, the drain's ping is answered, and the process
/// comes back with its input open, never closed, for the next case. Twins f8d794d (a process
/// is kept only after a clean pass and a drain) and the shared rows of the broken tables
/// (tests/support/shared_rows.rs).
#[tokio::test(start_paused = true)]
async fn a_shared_process_is_handed_on_once_its_drain_is_answered() {
    let lent = lent(ONE_PING, Script::new().serving(ms(1))).await;
    lent.played.outcome(Outcome::Pass);
    assert!(kept(&lent.back), "not kept:\n{}", lent.played.shown());
    let drain = json!("drained~0");
    assert!(lent.played.heard.iter().any(|h| h.id() == Some(&drain)));
    assert!(!lent.played.heard.iter().any(|h| h.input_ended()));
}

/// A process whose drain goes unanswered (it answers the case's pings, not the drain's) is
/// not handed on: its input is closed, and the pool ends it. Twins f8d794d.
#[tokio::test(start_paused = true)]
async fn a_shared_process_whose_drain_goes_unanswered_is_not_handed_on() {
    let deaf = Script::new().on(|heard| {
        let answer = conformance::transport::scripted::server_answer(heard);
        match (heard.id(), answer) {
            (Some(id), Some(answer)) if *id != json!("drained~0") => {
                vec![(ms(1), Act::Send(result(id, answer)))]
            }
            _ => vec![],
        }
    });
    let lent = lent(ONE_PING, deaf).await;
    lent.played.outcome(Outcome::Pass);
    assert!(lent.back.is_some(), "the process came back");
    assert!(!kept(&lent.back), "kept:\n{}", lent.played.shown());
    assert!(lent.played.heard.iter().any(|h| h.input_ended()));
}

/// A late message of a case lent the process, arriving during its drain (the answer to a
/// cancelled sleep at its end, after the last barrier and the drain's ping), is judged in
/// that case, not handed to the next: CAN-05 here. Twins f8d794d (the drain lasts as long as
/// on a target of its own, so a late message of the case is seen in the case).
#[tokio::test(start_paused = true)]
async fn a_late_message_during_the_drain_is_judged_in_its_own_case() {
    let case = r#"@requirement CAN-05
@level should
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":200}}}
! after 50ms
! cancel 1
! barrier
"#;
    let ignores = Script::new().serving(ms(1)).on(|heard| match heard.id() {
        Some(id) if heard.is("tools/call") => vec![(ms(200), Act::Send(result(id, text("slept"))))],
        _ => vec![],
    });
    let lent = lent(case, ignores).await;
    lent.played
        .outcome(Outcome::Warn)
        .cites(Severity::Warn, "CAN-05");
    // The drain's ping was read before the late answer came.
    let drain = lent
        .played
        .heard
        .iter()
        .find(|h| h.id() == Some(&json!("drained~0")));
    assert!(
        drain.is_some_and(|d| d.at < ms(201)),
        "{}",
        lent.played.shown()
    );
}
