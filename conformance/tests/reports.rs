//! The JSON and HTML reports from the command line: what a run writes, that it follows the
//! schema document in the repository, and that `conformance report` merges runs into one page
//! and refuses what is no report.

#[path = "support/cli.rs"]
pub mod cli;

use cli::{conformance, TempDir};
use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("the report was written");
    serde_json::from_str(&text).expect("the report is JSON")
}

/// A run of the bundled reference server over HTTP, the harness starting it per case.
fn over_http(cases: &str, json: &Path) -> std::process::Output {
    let exe = assert_cmd::cargo::cargo_bin("conformance");
    conformance()
        .args([
            "server",
            cases,
            "--url",
            "http://127.0.0.1:{port}/mcp",
            "--json",
        ])
        .arg(json)
        .arg("--")
        .arg(&exe)
        .args(["reference-server", "--http", "127.0.0.1:{port}"])
        .output()
        .expect("runs")
}

#[test]
fn a_run_writes_both_reports_and_report_merges_runs_into_one_page() {
    let dir = TempDir::new("merge");
    conformance()
        .args(["server", "cancel-after-progress", "--json"])
        .arg(dir.file("stdio.json"))
        .arg("--html")
        .arg(dir.file("stdio.html"))
        .assert()
        .success();
    let report = read_json(&dir.file("stdio.json"));
    assert_eq!(report["schemaVersion"], 1);
    assert_eq!(report["role"], "server");
    assert_eq!(report["target"]["name"], "reference-server");
    assert_eq!(report["target"]["version"], env!("CARGO_PKG_VERSION"));
    let started = report["startedAt"].as_str().unwrap_or_default();
    assert!(
        started.len() == 20 && started.ends_with('Z'),
        "RFC 3339: {started}"
    );
    let case = &report["cases"][0];
    let marks: Vec<&str> = case["transcript"]
        .as_array()
        .expect("a transcript")
        .iter()
        .filter_map(|e| e["mark"].as_str())
        .collect();
    assert!(
        marks.contains(&"cancel") && marks.contains(&"proof"),
        "{marks:?}"
    );
    let cancels = case["timings"]["cancels"].as_array().expect("cancels");
    assert_eq!(cancels.len(), 2, "{case:#}");
    assert!(cancels
        .iter()
        .all(|c| c["inFlight"] == true && c["late"] == 0));
    assert_eq!(report["timings"]["cancelToQuiet"]["count"], 2);
    assert!(report["timings"]["startup"]["medianMs"].is_number());

    let html = std::fs::read_to_string(dir.file("stdio.html")).expect("the page was written");
    assert!(html.contains("<table class=\"matrix\">"));
    assert!(html.contains("cancel-after-progress"));
    assert!(html.contains("<script type=\"application/json\" id=\"transcripts\">"));
    // Self-contained: nothing to fetch.
    for outside in ["src=\"http", "href=\"http", "@import", "url(http"] {
        assert!(!html.contains(outside), "the page fetches {outside}");
    }

    let output = over_http("cancel-after-progress", &dir.file("http.json"));
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    conformance()
        .arg("report")
        .arg(dir.file("stdio.json"))
        .arg(dir.file("http.json"))
        .arg("-o")
        .arg(dir.file("merged.html"))
        .assert()
        .success()
        .stdout(predicate::str::contains("from 2 reports"));
    let merged = std::fs::read_to_string(dir.file("merged.html")).expect("the page was written");
    assert_eq!(
        merged.matches("<th class=\"col\"").count(),
        2,
        "a column per run"
    );
    assert!(merged.contains("stdio.json") && merged.contains("http.json"));
    // The HTTP run's channels travel with its transcript.
    assert!(merged.contains("\"POST 2\""), "HTTP channels are embedded");
}

#[test]
fn report_refuses_what_is_no_report_of_this_schema() {
    let dir = TempDir::new("refuse");
    std::fs::write(dir.file("old.json"), r#"{"cases": [], "summary": {}}"#).expect("write");
    conformance()
        .args(["report", "-o"])
        .arg(dir.file("out.html"))
        .arg(dir.file("old.json"))
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("old.json")
                .and(predicate::str::contains("older than schema version 1")),
        );
    std::fs::write(dir.file("future.json"), r#"{"schemaVersion": 7}"#).expect("write");
    conformance()
        .args(["report", "-o"])
        .arg(dir.file("out.html"))
        .arg(dir.file("future.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("schema version 7"));
    std::fs::write(dir.file("cut.json"), r#"{"schemaVersion": 1, "cases": []}"#).expect("write");
    conformance()
        .args(["report", "-o"])
        .arg(dir.file("out.html"))
        .arg(dir.file("cut.json"))
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("cut.json").and(predicate::str::contains("missing field")),
        );
    assert!(!dir.file("out.html").exists());
}

/// The schema with every object closed (`additionalProperties: false`): a key the harness
/// writes and the schema does not describe fails validation here, though readers of the
/// published schema may meet keys added later within a version.
fn closed(mut schema: Value) -> Value {
    fn close(v: &mut Value) {
        match v {
            Value::Object(map) => {
                if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                    map.insert("additionalProperties".into(), Value::Bool(false));
                }
                map.values_mut().for_each(close);
            }
            Value::Array(items) => items.iter_mut().for_each(close),
            _ => {}
        }
    }
    close(&mut schema);
    schema
}

#[test]
fn reports_follow_the_schema_document() {
    let schema: Value =
        serde_json::from_str(include_str!("../report.schema.json")).expect("the schema is JSON");
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&closed(schema))
        .expect("the schema is a valid JSON Schema");
    let dir = TempDir::new("schema");
    // The reference server at every version over stdio, a few HTTP cases, and a client run
    // whose adapter fails at once (errors, skips, findings).
    conformance()
        .args(["server", "--protocol-version", "all", "--json"])
        .arg(dir.file("all.json"))
        .assert()
        .success();
    let output = over_http("http-stateless-cancel", &dir.file("http.json"));
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    conformance()
        .args(["client", "client-shutdown-sequence", "--json"])
        .arg(dir.file("client.json"))
        .args(["--", "sh", "-c", "exit 0"])
        .assert()
        .code(1);
    for name in ["all.json", "http.json", "client.json"] {
        let report = read_json(&dir.file(name));
        let errors: Vec<String> = validator
            .iter_errors(&report)
            .take(10)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
    let client = read_json(&dir.file("client.json"));
    assert_eq!(client["role"], "client");
    let all = read_json(&dir.file("all.json"));
    let versions: std::collections::BTreeSet<&str> = all["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["protocolVersion"].as_str())
        .collect();
    assert!(versions.len() >= 4, "{versions:?}");
}
