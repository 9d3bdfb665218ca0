//! The comparison of every SDK (`targets/comparison.json`, `conformance compare`): the
//! committed tables are what the committed comparison makes, every failure and warning in it
//! has written evidence, every target file and client adapter is compared, and the command
//! turns reports into those files and says what is wrong with bad input.

#[path = "support/cli.rs"]
pub mod cli;

use cli::{conformance, TempDir};
use conformance::compare::evidence::{self, Evidence};
use conformance::compare::tables::{findings_of, rewrite};
use conformance::compare::Comparison;
use predicates::prelude::*;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Findings whose evidence is not written yet, as (`target case`, why): each is a claim
/// against an SDK nobody has shown to be the SDK's, so the tables say "evidence pending" for
/// it. This list is the one place that says what is open.
const EVIDENCE_PENDING: &[(&str, &str)] = &[];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn committed() -> (Comparison, Evidence) {
    let text = std::fs::read_to_string(repo().join("targets/comparison.json"))
        .expect("targets/comparison.json");
    let comparison: Comparison = serde_json::from_str(&text).expect("a comparison");
    let text =
        std::fs::read_to_string(repo().join("targets/evidence.md")).expect("targets/evidence.md");
    (
        comparison,
        evidence::parse(&text).expect("targets/evidence.md follows its format"),
    )
}

#[test]
fn the_committed_tables_are_what_the_committed_comparison_makes() {
    let (comparison, evidence) = committed();
    for (file, link) in [
        ("targets/README.md", "evidence.md"),
        ("docs/sdk-comparison.md", ""),
    ] {
        let text = std::fs::read_to_string(repo().join(file)).expect(file);
        let made = rewrite(&text, &comparison, &evidence, link).expect(file);
        assert!(
            made == text,
            "{file}: its generated tables differ from targets/comparison.json; run `cargo run -p conformance -- compare --from targets/comparison.json --markdown targets/README.md --markdown docs/sdk-comparison.md` (diff:\n{})",
            similar::TextDiff::from_lines(&text, &made).unified_diff()
        );
        assert!(
            text.contains("<!-- generated: "),
            "{file} has no generated block"
        );
    }
}

#[test]
fn every_failure_and_warning_has_written_evidence() {
    let (comparison, evidence) = committed();
    // Per `target case`: whether some failure or warning of it has no section.
    let mut unexplained: std::collections::BTreeMap<String, bool> = Default::default();
    for t in &comparison.targets {
        for (case, cell, _) in findings_of(t) {
            let found = evidence
                .find(&t.target, case, cell.requirement.as_deref())
                .is_some();
            *unexplained
                .entry(format!("{} {case}", t.target))
                .or_default() |= !found;
        }
    }
    let pending = |key: &str| EVIDENCE_PENDING.iter().any(|(k, _)| *k == key);
    let missing: Vec<&String> = unexplained
        .iter()
        .filter(|(key, open)| **open && !pending(key))
        .map(|(key, _)| key)
        .collect();
    let pending_found: Vec<&str> = EVIDENCE_PENDING
        .iter()
        .map(|(key, _)| *key)
        .filter(|key| unexplained.get(*key) != Some(&true))
        .collect();
    assert!(
        missing.is_empty(),
        "no section of targets/evidence.md explains: {missing:#?}"
    );
    assert!(
        pending_found.is_empty(),
        "these have evidence now (or no finding): take them off EVIDENCE_PENDING: {pending_found:#?}"
    );
}

#[test]
fn every_target_file_and_client_adapter_is_compared() {
    let (comparison, _) = committed();
    let compared: Vec<&str> = comparison
        .targets
        .iter()
        .map(|t| t.target.as_str())
        .collect();
    let mut expected = vec![];
    for entry in std::fs::read_dir(repo().join("targets")).expect("targets/") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if let Some(stem) = name.strip_suffix(".json") {
            if !matches!(stem, "clients" | "comparison") {
                expected.push(stem.to_string());
            }
        }
    }
    let clients: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("targets/clients.json")).expect("clients.json"),
    )
    .expect("JSON");
    expected.extend(
        clients
            .as_object()
            .expect("an object")
            .keys()
            .map(|k| format!("client-{k}")),
    );
    let missing: Vec<&String> = expected
        .iter()
        .filter(|e| !compared.contains(&e.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "targets/comparison.json has no run of {missing:?}: run targets/compare.sh"
    );
}

fn report(outcome: &str) -> serde_json::Value {
    let stats = json!({"count": 0, "medianMs": null, "p95Ms": null, "maxMs": null});
    json!({
        "schemaVersion": 1, "harness": {"name": "conformance", "version": "0.0.1"},
        "startedAt": "2026-12-06T00:00:00Z", "durationMs": 1, "role": "server",
        "target": {"command": "x", "name": null, "version": null},
        "transport": "stdio", "protocolVersion": "all", "targetVersions": ["2025-11-25"],
        "summary": {"pass": 0, "fail": 1, "warn": 0, "info": 0, "skip": 0},
        "timings": {"cancelToQuiet": stats, "startup": stats, "roundTrip": stats},
        "cases": [{
            "id": "server/cancel-x", "intent": "i", "outcome": outcome, "level": "must",
            "requirements": ["CAN-05"], "message": "m", "durationMs": 1, "baseline": null,
            "runs": [outcome], "flaky": false, "protocolVersion": "2025-11-25",
            "era": "handshake", "transport": "stdio",
            "findings": [{"severity": outcome, "requirement": "CAN-05", "line": 2, "message": "late", "times": 1}],
            "timings": {"cancels": [{"requestId": 1, "atMs": 5.0, "proofMs": 7.0, "quietMs": 3.0, "after": 1, "late": 1, "inFlight": true}]}
        }]
    })
}

#[test]
fn compare_turns_reports_into_data_a_page_and_tables() {
    let dir = TempDir::new("compare");
    let targets = dir.file("targets");
    std::fs::create_dir_all(&targets).unwrap();
    std::fs::write(
        targets.join("srv.json"),
        r#"{"sdk": {"name": "some-sdk", "version": "1.2.3"}, "command": ["x"]}"#,
    )
    .unwrap();
    std::fs::write(dir.file("srv.json"), report("fail").to_string()).unwrap();
    std::fs::write(
        dir.file("evidence.md"),
        "## cancel-x: late answers\nTargets: `srv.json`\nThe SDK answers after the cancel.\n",
    )
    .unwrap();
    let md = dir.file("README.md");
    std::fs::write(
        &md,
        "# Results\n<!-- generated: findings -->\n<!-- end generated -->\nEnd.\n",
    )
    .unwrap();
    let args = |extra: &[&str]| {
        let mut argv: Vec<String> = vec![
            "compare".into(),
            "--targets".into(),
            targets.display().to_string(),
            "--evidence".into(),
            dir.file("evidence.md").display().to_string(),
        ];
        argv.extend(extra.iter().map(|s| (*s).to_string()));
        argv
    };
    let (json_out, html_out, md_s) = (
        dir.file("c.json"),
        dir.file("c.html"),
        md.display().to_string(),
    );
    conformance()
        .args(args(&[
            &dir.file("srv.json").display().to_string(),
            "--json",
            &json_out.display().to_string(),
            "--html",
            &html_out.display().to_string(),
            "--markdown",
            &md_s,
        ]))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "1 targets, 1 failures and warnings (0 without evidence)",
        ));
    let written = std::fs::read_to_string(&md).unwrap();
    assert!(written.contains("| `srv` | cancel-x | fail | 2025-11-25 | CAN-05 | The SDK answers after the cancel. ([evidence](evidence.md#cancel-x-late-answers)) |"), "{written}");
    assert!(written.ends_with("<!-- end generated -->\nEnd.\n"));
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_out).unwrap()).unwrap();
    assert_eq!(
        data["targets"][0]["sdk"],
        json!({"name": "some-sdk", "version": "1.2.3"})
    );
    assert_eq!(
        data["targets"][0]["latency"]["cancelToProof"]["medianMs"],
        json!(2.0)
    );
    assert!(std::fs::read_to_string(&html_out)
        .unwrap()
        .contains("<html"));
    // From the data alone, the tables are as written; changed by hand, --check says so.
    let from = json_out.display().to_string();
    conformance()
        .args(args(&["--from", &from, "--markdown", &md_s, "--check"]))
        .assert()
        .success();
    std::fs::write(&md, written.replace("| fail |", "| pass |")).unwrap();
    conformance()
        .args(args(&["--from", &from, "--markdown", &md_s, "--check"]))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("differ from the comparison"));
}

#[test]
fn compare_says_what_is_wrong_with_its_input_and_where() {
    let dir = TempDir::new("compare-bad");
    let targets = dir.file("targets");
    std::fs::create_dir_all(&targets).unwrap();
    std::fs::write(dir.file("orphan.json"), report("warn").to_string()).unwrap();
    std::fs::write(dir.file("evidence.md"), "").unwrap();
    let base = |evidence: &Path| {
        vec![
            "compare".to_string(),
            dir.file("orphan.json").display().to_string(),
            "--targets".into(),
            targets.display().to_string(),
            "--evidence".into(),
            evidence.display().to_string(),
        ]
    };
    conformance()
        .args(base(&dir.file("evidence.md")))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("orphan.json: cannot read").and(
            predicate::str::contains("name a report after its target file"),
        ));
    std::fs::write(targets.join("orphan.json"), r#"{"command": ["x"]}"#).unwrap();
    conformance()
        .args(base(&dir.file("evidence.md")))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("orphan.json: no `sdk`"));
    std::fs::write(
        dir.file("bad.md"),
        "intro\n\n## cancel-x\nThe SDK is late.\n",
    )
    .unwrap();
    conformance()
        .args(base(&dir.file("bad.md")))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "bad.md:4: the line after a `## case` heading must be `Targets:",
        ));
}
