use super::evidence::{self, Evidence};
use super::tables::{self, rewrite};
use super::*;
use serde_json::{json, Value};

fn report(cases: &[Value]) -> RunReport {
    let stats = json!({"count": 0, "medianMs": null, "p95Ms": null, "maxMs": null});
    serde_json::from_value(json!({
        "schemaVersion": 1, "harness": {"name": "conformance", "version": "9.9.9"},
        "startedAt": "2026-12-06T00:00:00Z", "durationMs": 1, "role": "server",
        "target": {"command": "x", "name": null, "version": null},
        "transport": "stdio", "protocolVersion": "all",
        "targetVersions": ["2025-06-18", "2025-11-25", "2026-07-28"],
        "summary": {"pass": 1, "fail": 2, "warn": 1, "info": 0, "skip": 0},
        "timings": {"cancelToQuiet": stats, "startup": stats, "roundTrip": stats},
        "cases": cases,
    }))
    .expect("a report")
}

fn case(id: &str, version: &str, outcome: &str, findings: Value, cancels: Value) -> Value {
    json!({
        "id": id, "intent": "i", "outcome": outcome, "level": "must",
        "requirements": ["CAN-01", "CAN-05"], "message": "m", "durationMs": 1,
        "baseline": null, "runs": [outcome], "flaky": false,
        "protocolVersion": version, "era": "handshake", "transport": "stdio",
        "findings": findings, "timings": {"cancels": cancels}
    })
}

fn cancel(at: f64, proof: Option<f64>, quiet: f64, in_flight: bool) -> Value {
    json!({"requestId": 1, "atMs": at, "proofMs": proof, "quietMs": quiet,
           "after": 0, "late": 0, "inFlight": in_flight})
}

/// `cancel` with the witness's first listing of its request at `at` ms.
fn witnessed(mut cancel: Value, at: f64) -> Value {
    cancel["witnessMs"] = json!(at);
    cancel
}

fn sample() -> Comparison {
    let late = json!([
        {"severity": "note", "requirement": "observed", "line": 1, "message": "n", "times": 1},
        {"severity": "fail", "requirement": "CAN-05", "line": 4, "message": "late", "times": 1}
    ]);
    let run = report(&[
        case(
            "server/a-case",
            "2025-11-25",
            "fail",
            late.clone(),
            json!([witnessed(cancel(10.0, Some(30.0), 5.0, true), 52.5)]),
        ),
        case(
            "server/a-case",
            "2026-07-28",
            "fail",
            late,
            json!([cancel(10.0, Some(14.5), 0.0, true)]),
        ),
        case(
            "server/b-case",
            "2025-11-25",
            "warn",
            json!([]),
            json!([witnessed(cancel(1.0, None, 99.0, false), 3.0)]),
        ),
        case(
            "server/c-case",
            "2025-11-25",
            "pass",
            json!([]),
            json!([witnessed(cancel(0.0, Some(2.0), 1.0, true), 7.0)]),
        ),
    ]);
    summarize(&[Input {
        target: "t-http".into(),
        sdk: Sdk {
            name: "sdk".into(),
            version: "1.0.0".into(),
        },
        report: &run,
    }])
}

#[test]
fn cells_are_keyed_by_case_and_version_with_the_deciding_requirement() {
    let c = sample();
    let t = &c.targets[0];
    assert_eq!(c.harness, "9.9.9");
    assert_eq!(t.cases.len(), 3);
    let a = &t.cases["a-case"];
    assert_eq!(a["2026-07-28"].outcome, "fail");
    // The note's `observed` is no requirement; the failing finding's is.
    assert_eq!(a["2025-11-25"].requirement.as_deref(), Some("CAN-05"));
    // No finding names one: the case's first requirement.
    assert_eq!(
        t.cases["b-case"]["2025-11-25"].requirement.as_deref(),
        Some("CAN-01")
    );
    assert_eq!(t.cases["c-case"]["2025-11-25"].requirement, None);
}

#[test]
fn latency_counts_cancels_in_flight_and_measures_the_proof_from_the_cancel() {
    let l = &sample().targets[0].latency;
    assert_eq!(
        l.cancel_to_quiet.count, 3,
        "the cancel not in flight is left out"
    );
    assert_eq!(l.cancel_to_quiet.median_ms, Some(1.0));
    assert_eq!(l.cancel_to_quiet.worst_ms, Some(5.0));
    assert_eq!(l.cancel_to_proof.count, 3);
    assert_eq!(l.cancel_to_proof.median_ms, Some(4.5));
    assert_eq!(l.cancel_to_proof.worst_ms, Some(20.0));
    // Only cancels in flight that a witness step saw listed.
    assert_eq!(l.cancel_to_witness.count, 2);
    assert_eq!(l.cancel_to_witness.median_ms, Some(7.0));
    assert_eq!(l.cancel_to_witness.worst_ms, Some(42.5));
}

#[test]
fn client_cases_over_http_get_a_column_of_their_own() {
    let mut value = case("client/x@http", "2025-11-25", "pass", json!([]), json!([]));
    value["transport"] = json!("http");
    let run = report(&[
        value,
        case("client/x", "2025-11-25", "pass", json!([]), json!([])),
    ]);
    let c = summarize(&[Input {
        target: "client-a".into(),
        sdk: Sdk {
            name: "s".into(),
            version: "1".into(),
        },
        report: &run,
    }]);
    let versions: Vec<&String> = c.targets[0].cases["x"].keys().collect();
    assert_eq!(versions, ["2025-11-25", "2025-11-25@http"]);
}

const EVIDENCE: &str = "# Evidence\n\n## z-case, a-case: the SDK answers late\n\nTargets: `t-http.json`, `other`\n\nIt answers after the cancel | always.\n\nMore.\n";

#[test]
fn evidence_sections_name_their_case_targets_and_line() {
    let e = evidence::parse(EVIDENCE).expect("parses");
    let s = e
        .find("t-http", "a-case", Some("CAN-05"))
        .expect("found by target without .json");
    assert_eq!(s.summary, "It answers after the cancel | always.");
    assert_eq!(s.anchor, "z-case-a-case-the-sdk-answers-late");
    assert!(
        e.find("other", "z-case", None).is_some(),
        "one section, two cases"
    );
    assert_eq!(s.line, 3);
    assert!(e.find("t-http", "b-case", None).is_none());
    assert!(e.find("third", "a-case", None).is_none());
}

#[test]
fn a_section_may_explain_the_findings_of_one_requirement_only() {
    let e = evidence::parse("## a-case: x\nTargets: `t`\nRequirement: CAN-05\nWhy.\n").unwrap();
    assert_eq!(e.sections[0].summary, "Why.");
    assert!(e.find("t", "a-case", Some("CAN-05")).is_some());
    assert!(e.find("t", "a-case", Some("CAN-11")).is_none());
}

#[test]
fn a_section_without_targets_or_summary_is_refused_at_its_line() {
    let err = evidence::parse("## a-case\n\nIt answers.\n").expect_err("no Targets");
    assert_eq!(err.line, 3);
    assert!(err.message.contains("Targets:"), "{}", err.message);
    let err = evidence::parse("x\n## a-case\nTargets: `t`\n## b-case\n").expect_err("no summary");
    assert_eq!(err.line, 4);
}

#[test]
fn findings_group_versions_and_link_their_evidence_or_say_it_is_pending() {
    let c = sample();
    let e = evidence::parse(EVIDENCE).unwrap();
    let table = tables::block("findings", &c, &e, "evidence.md").unwrap();
    assert!(table.contains("| `t-http` | a-case | fail | 2025-11-25, 2026-07-28 | CAN-05 | It answers after the cancel \\| always. ([evidence](evidence.md#z-case-a-case-the-sdk-answers-late)) |"), "{table}");
    assert!(
        table.contains("| `t-http` | b-case | warn | 2025-11-25 | CAN-01 | **evidence pending** |"),
        "{table}"
    );
    assert!(!table.contains("c-case"), "a pass is no finding: {table}");
    let sdks = tables::block("sdks", &c, &e, "x.md").unwrap();
    assert!(
        sdks.contains("| `sdk` 1.0.0 | `t-http` | **no** | MUST CAN-05 `a-case`"),
        "{sdks}"
    );
}

#[test]
fn a_median_holds_when_both_runs_are_quick_or_within_half_again() {
    let spread = |now: f64, before: Option<f64>| latency::Spread {
        count: 3,
        median_ms: Some(now),
        worst_ms: Some(now),
        previous_median_ms: before,
    };
    assert_eq!(spread(0.0, Some(9.5)).held(), latency::Held::Yes(0.0));
    assert_eq!(spread(120.0, Some(80.0)).held(), latency::Held::Yes(120.0));
    assert_eq!(spread(121.0, Some(80.0)).held(), latency::Held::Varies);
    assert_eq!(spread(2665.6, Some(21365.0)).held(), latency::Held::Varies);
    assert_eq!(spread(5.0, None).held(), latency::Held::OneRun);
    assert_eq!(latency::Spread::default().held(), latency::Held::None);
}

#[test]
fn the_run_before_is_another_run_of_the_same_target() {
    let now = sample();
    let mut before = sample();
    // The same report compared again is no second run.
    assert_eq!(
        after(now.clone(), &before).targets[0]
            .latency
            .cancel_to_quiet
            .previous_median_ms,
        None
    );
    before.targets[0].started_at = "2026-11-29T00:00:00Z".into();
    before.targets[0].latency.cancel_to_quiet.median_ms = Some(1.4);
    before.targets[0].latency.cancel_to_witness.median_ms = Some(9.0);
    let c = after(now.clone(), &before);
    let l = &c.targets[0].latency;
    assert_eq!(l.cancel_to_quiet.previous_median_ms, Some(1.4));
    assert_eq!(l.cancel_to_witness.held(), latency::Held::Yes(7.0));
    let table = tables::block("latency", &c, &Evidence::default(), "e.md").unwrap();
    assert!(
        table.contains("| `t-http` | 3 | 1.0 ms | 2 | 7.0 ms |"),
        "{table}"
    );
    // Another target's run is not this one's.
    before.targets[0].target = "other".into();
    assert_eq!(
        after(now, &before).targets[0]
            .latency
            .cancel_to_witness
            .held(),
        latency::Held::OneRun
    );
}

#[test]
fn rewrite_fills_each_block_and_keeps_the_prose() {
    let c = sample();
    let e = Evidence::default();
    let text = format!(
        "Intro.\n{}\nold table\n<!-- end generated -->\nAfter.\n",
        tables::begin("latency")
    );
    let new = rewrite(&text, &c, &e, "e.md").unwrap();
    assert!(new.starts_with("Intro.\n<!-- generated: latency"));
    assert!(new.ends_with("<!-- end generated -->\nAfter.\n"));
    assert!(!new.contains("old table"));
    // Two of the three cancels in flight were seen stopped by the witness; with no run
    // before, no median is shown as held.
    assert!(
        new.contains("| `t-http` | 3 | one run | 2 | one run |"),
        "{new}"
    );
    assert_eq!(
        rewrite(&new, &c, &e, "e.md").unwrap(),
        new,
        "a second rewrite changes nothing"
    );
}

#[test]
fn rewrite_refuses_unknown_and_unclosed_blocks_at_their_line() {
    let c = sample();
    let e = Evidence::default();
    let err = rewrite(
        "a\n<!-- generated: nonsense -->\n<!-- end generated -->\n",
        &c,
        &e,
        "e",
    )
    .unwrap_err();
    assert!(
        err.starts_with("line 2: no generated block is called `nonsense`"),
        "{err}"
    );
    let err = rewrite(&format!("{}\n", tables::begin("sdks")), &c, &e, "e").unwrap_err();
    assert!(
        err.contains("line 1") && err.contains("no `<!-- end generated -->`"),
        "{err}"
    );
}
