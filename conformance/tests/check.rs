//! `conformance check`: every fixture trace (tests/fixtures/traces/README.md) judged as its
//! README says, one test per finding kind, the races that must not be findings, and what a
//! person sees (exit codes, the reports, the error for a trace that cannot be read).

#[path = "support/findings.rs"]
mod findings;

use assert_cmd::Command;
use conformance::check::{check, Checked};
use conformance::outcome::{Finding, Severity};
use conformance::trace::Trace;
use findings::judged;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces")
        .join(name)
}

fn checked(name: &str) -> Checked {
    let trace = Trace::read(&fixture(name)).expect("the fixture reads");
    check(&trace)
}

/// The notes: (requirement, trace line).
fn notes(findings: &[Finding]) -> Vec<(&'static str, usize)> {
    findings
        .iter()
        .filter(|f| f.severity == Severity::Note)
        .map(|f| (f.requirement(), f.line))
        .collect()
}

#[test]
fn a_clean_session_has_nothing_against_either_side() {
    let c = checked("clean.jsonl");
    assert_eq!(judged(&c.server), []);
    assert_eq!(judged(&c.client), []);
    assert_eq!(c.version().as_deref(), Some("2025-11-25"));
    assert_eq!(c.transcript.len(), 11, "every event is an entry");
}

#[test]
fn progress_after_a_proven_cancel_breaks_can_05_but_the_first_may_have_crossed() {
    let c = checked("progress-after-cancel.jsonl");
    assert_eq!(
        judged(&c.server),
        [
            (Severity::Warn, "CAN-05", 12),
            (Severity::Warn, "CAN-05", 13)
        ]
    );
    // The first, 38 ms after the proof, may have been written before the cancel was read.
    assert_eq!(notes(&c.server), [("CAN-08", 11), ("CAN-05", 5)]);
    let late = c.server.iter().find(|f| f.line == 12).unwrap();
    assert!(
        late.message.contains(
            "after the target had read its cancel (an answer to a later request proved it)"
        ),
        "{}",
        late.message
    );
    assert_eq!(judged(&c.client), []);
}

#[test]
fn an_answer_the_cancel_caused_breaks_can_05() {
    let c = checked("answer-after-cancel.jsonl");
    assert_eq!(judged(&c.server), [(Severity::Warn, "CAN-05", 7)]);
    assert!(c.server[0]
        .message
        .contains("its error -32800 says the cancel caused it"));
}

#[test]
fn an_answer_that_crossed_its_cancel_and_progress_just_after_a_proof_are_no_faults() {
    let c = checked("crossed-cancel.jsonl");
    assert_eq!(judged(&c.server), []);
    assert_eq!(judged(&c.client), []);
    let crossed = c
        .server
        .iter()
        .find(|f| f.line == 8)
        .expect("a note on the answer");
    assert_eq!(
        crossed.message,
        "the response to request 1 crossed its cancel (allowed)"
    );
    assert!(notes(&c.server).contains(&("CAN-08", 14)), "{:?}", c.server);
}

#[test]
fn a_second_answer_breaks_rpc_04() {
    let c = checked("answered-twice.jsonl");
    assert_eq!(judged(&c.server), [(Severity::Fail, "RPC-04", 7)]);
    assert!(c.server[0].message.contains("sent at line 5"));
}

#[test]
fn a_log_line_on_stdout_breaks_std_03() {
    let c = checked("not-json.jsonl");
    assert_eq!(judged(&c.server), [(Severity::Fail, "STD-03", 2)]);
    assert!(c.server[0].message.contains("`Server listening on stdio`"));
}

#[test]
fn progress_that_goes_down_breaks_prg_03() {
    let c = checked("progress-down.jsonl");
    assert_eq!(judged(&c.server), [(Severity::Fail, "PRG-03", 7)]);
}

#[test]
fn an_exit_with_a_call_in_flight_breaks_std_01_once() {
    let c = checked("exit-in-flight.jsonl");
    assert_eq!(judged(&c.server), [(Severity::Fail, "STD-01", 7)]);
    assert!(
        c.server[0]
            .message
            .contains("(it closed its stdout) while the client's request 1 was in flight"),
        "{}",
        c.server[0].message
    );
    assert_eq!(c.log.total, 1, "stderr is the server's log");
}

#[test]
fn a_clean_shutdown_with_nothing_in_flight_is_no_exit_fault() {
    for name in [
        "clean.jsonl",
        "answered-twice.jsonl",
        "cancel-answered.jsonl",
    ] {
        let c = checked(name);
        assert!(
            !c.server.iter().any(|f| f.requirement() == "STD-01"),
            "{name}"
        );
    }
}

#[test]
fn cancelling_initialize_breaks_can_04() {
    let c = checked("cancel-initialize.jsonl");
    assert_eq!(judged(&c.client), [(Severity::Fail, "CAN-04", 3)]);
    assert_eq!(judged(&c.server), []);
}

#[test]
fn cancelling_an_id_never_sent_breaks_can_01() {
    let c = checked("cancel-unknown.jsonl");
    assert_eq!(judged(&c.client), [(Severity::Fail, "CAN-01", 5)]);
    assert!(c.client[0]
        .message
        .contains("request 99, which it never sent"));
}

#[test]
fn cancelling_an_answered_request_breaks_can_03() {
    let c = checked("cancel-answered.jsonl");
    assert_eq!(judged(&c.client), [(Severity::Warn, "CAN-03", 7)]);
    assert!(c.client[0].message.contains("2000 ms after"));
}

#[test]
fn reusing_an_id_in_flight_breaks_rpc_03() {
    let c = checked("id-reused.jsonl");
    assert_eq!(judged(&c.client), [(Severity::Fail, "RPC-03", 6)]);
    assert!(c.client[0].message.contains("still outstanding"));
}

#[test]
fn a_cut_last_line_is_reported_and_what_came_before_is_judged() {
    let trace = Trace::read(&fixture("cut.jsonl")).expect("a cut trace reads");
    assert_eq!(trace.cut, Some(6));
    let c = check(&trace);
    assert_eq!(judged(&c.server), []);
    assert_eq!(notes(&c.client), [("TMO-02", 5)], "the call was left open");
}

#[test]
fn a_redacted_value_is_unknown_never_wrong() {
    let c = checked("redacted.jsonl");
    assert_eq!(
        c.server.len() + c.client.len(),
        0,
        "{:?} {:?}",
        c.server,
        c.client
    );
}

fn conformance() -> Command {
    Command::cargo_bin("conformance").expect("the binary")
}

#[test]
fn an_unknown_format_version_is_refused_naming_file_line_and_version() {
    conformance()
        .args(["check"])
        .arg(fixture("unknown-version.jsonl"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown-version.jsonl:1: trace format version 2",
        ));
}

#[test]
fn a_broken_must_exits_1_with_the_finding_at_its_trace_line() {
    conformance()
        .args(["check"])
        .arg(fixture("answered-twice.jsonl"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "answered-twice.jsonl:7: fail [RPC-04]",
        ))
        .stdout(predicate::str::contains("server fail, client pass"));
}

#[test]
fn a_warning_passes_unless_strict() {
    let trace = fixture("cancel-answered.jsonl");
    conformance().arg("check").arg(&trace).assert().code(0);
    conformance()
        .args(["check", "--strict"])
        .arg(&trace)
        .assert()
        .code(1);
}

#[test]
fn the_reports_carry_the_findings_and_the_recorded_lanes() {
    let dir = std::env::temp_dir().join(format!("check-reports-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, junit, html) = (dir.join("r.json"), dir.join("r.xml"), dir.join("r.html"));
    conformance()
        .arg("check")
        .arg(fixture("progress-after-cancel.jsonl"))
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .arg("--html")
        .arg(&html)
        .assert()
        .code(0);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["role"], "trace");
    assert_eq!(report["cases"][0]["id"], "progress-after-cancel/server");
    assert_eq!(report["cases"][0]["outcome"], "warn");
    let findings = report["cases"][0]["findings"].as_array().unwrap();
    assert!(findings
        .iter()
        .any(|f| f["requirement"] == "CAN-05" && f["line"] == 12));
    let junit = std::fs::read_to_string(&junit).unwrap();
    assert!(junit.contains("progress-after-cancel"), "{junit}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("progress-after-cancel"));
    assert!(
        page.contains(r#""role":"trace""#),
        "the diagram draws client and server lanes"
    );
    assert!(
        page.contains(r#""findings":[[12,"warn","CAN-05"]"#),
        "each finding on its line"
    );
    assert!(
        page.contains("judged a recorded session") && !page.contains("replays scripted MCP"),
        "the page says it judged a recording, not that the harness played cases"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn over_http_progress_past_the_cancels_202_and_the_grace_breaks_can_05() {
    let c = checked("http-accepted-cancel.jsonl");
    // The 202 came at +305 ms: the cancel counts as read 500 ms later; the progress at
    // +400 ms is before that, those at +1805 and +2805 ms after it.
    assert_eq!(
        judged(&c.server),
        [
            (Severity::Warn, "CAN-05", 20),
            (Severity::Warn, "CAN-05", 21)
        ]
    );
    assert!(c.server[0]
        .message
        .contains("the cancel's 202 plus a 500 ms grace proved it read"));
    assert_eq!(judged(&c.client), []);
}

#[test]
fn in_2026_07_28_closing_the_stream_is_the_cancel() {
    let c = checked("http-closed-cancel.jsonl");
    assert_eq!(c.version().as_deref(), Some("2026-07-28"));
    assert_eq!(judged(&c.server), []);
    assert_eq!(judged(&c.client), []);
    assert_eq!(
        notes(&c.server),
        [("CAN-05", 3)],
        "the handler's stop is not on the wire"
    );
    assert!(c
        .transcript
        .iter()
        .any(|e| e.text == "[cancel 1: closed the stream of POST 1]"));
}

#[test]
fn in_2026_07_28_a_posted_cancel_with_the_stream_left_open_is_the_clients_fault() {
    let c = checked("http-posted-cancel.jsonl");
    assert_eq!(judged(&c.client), [(Severity::Warn, "CAN-12", 7)]);
    assert!(c.client.iter().any(|f| f.severity == Severity::Warn
        && f.message
            .contains("did not close the request's stream before the recording ended")));
    // The notification asks nothing of the server (AMB-06): its progress is no fault.
    assert_eq!(judged(&c.server), []);
}

#[test]
fn real_recordings_of_the_reference_pair_have_nothing_against_either_side() {
    for name in ["recorded-stdio.jsonl", "recorded-http-three-clients.jsonl"] {
        let c = checked(name);
        assert_eq!(judged(&c.server), [], "{name}: {:?}", c.server);
        assert_eq!(judged(&c.client), [], "{name}: {:?}", c.client);
    }
    let c = checked("recorded-http-three-clients.jsonl");
    assert_eq!(c.version().as_deref(), Some("2026-07-28, 2025-11-25"));
}
