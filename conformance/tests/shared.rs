//! Sharing a target changes no verdict: the whole suite against the reference server, at
//! every version it speaks, over stdio and over Streamable HTTP, gives the same outcome case
//! by case whether the cases share a server (`--share`: a start of the reference is too
//! cheap for a run to share by default) or each start their own (`--isolate`); and most cases
//! do share one (over stdio, a process and its one session, the first of each version the
//! version probe's).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One run of the suite; its JSON report.
fn run(over_http: bool, isolate: bool, name: &str) -> Value {
    let exe = env!("CARGO_BIN_EXE_conformance");
    let dir =
        std::env::temp_dir().join(format!("conformance-shared-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let json: PathBuf = dir.join(format!("{name}.json"));
    let mut command = std::process::Command::new(exe);
    command.args(["server", "--protocol-version", "all", "--json"]);
    command.arg(&json);
    command.arg(if isolate { "--isolate" } else { "--share" });
    if over_http {
        command.args(["--url", "http://127.0.0.1:{port}/mcp", "--", exe]);
        command.args(["reference-server", "--http", "127.0.0.1:{port}"]);
    }
    // One run at a time: the verdicts compared are those of a machine no busier than a run.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let output = command.output().expect("the harness runs");
    // The reference passes; a verdict that differs is shown by the comparison, case by case.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let verdicts: Vec<&str> = stdout.lines().filter(|l| !l.starts_with("pass")).collect();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{name}: {} {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        verdicts.join("\n")
    );
    let text = std::fs::read_to_string(&json).expect("the JSON report");
    let _ = std::fs::remove_dir_all(&dir);
    serde_json::from_str(&text).expect("the report is JSON")
}

/// Each case at each version: its outcome (with its message), and where it ran.
fn outcomes(report: &Value) -> BTreeMap<(String, String), (String, String)> {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| {
            let key = (
                case["id"].as_str().unwrap_or("").to_string(),
                case["protocolVersion"].as_str().unwrap_or("").to_string(),
            );
            let mode = case["placement"]["mode"]
                .as_str()
                .unwrap_or("-")
                .to_string();
            let outcome = format!(
                "{}: {}",
                case["outcome"].as_str().unwrap_or(""),
                case["message"].as_str().unwrap_or("")
            );
            (key, (outcome, mode))
        })
        .collect()
}

fn same_outcomes(over_http: bool) -> BTreeMap<(String, String), (String, String)> {
    let transport = if over_http { "http" } else { "stdio" };
    let shared = outcomes(&run(over_http, false, &format!("{transport}-shared")));
    let isolated = outcomes(&run(over_http, true, &format!("{transport}-isolated")));
    assert_eq!(
        shared.keys().collect::<Vec<_>>(),
        isolated.keys().collect::<Vec<_>>(),
        "the same cases at the same versions"
    );
    for (key, (outcome, mode)) in &shared {
        let (alone, alone_mode) = &isolated[key];
        let word = |o: &str| o.split(':').next().unwrap_or("").to_string();
        assert_eq!(
            word(outcome),
            word(alone),
            "{key:?} over {transport}: {outcome} when {mode}, {alone} alone"
        );
        assert!(
            alone_mode == "alone" || alone_mode == "-",
            "{key:?}: --isolate ran it {alone_mode}"
        );
    }
    shared
}

#[test]
fn over_http_shared_and_isolated_runs_agree_case_by_case() {
    // A case that says `@fresh` runs alone.
    agree_and_share(true, "share the server", "server/http-session-deleted");
}

#[test]
fn over_stdio_shared_and_isolated_runs_agree_case_by_case() {
    // A case that closes stdin runs alone.
    agree_and_share(
        false,
        "share a process and its session",
        "server/shutdown-on-stdin-close",
    );
}

/// The shared and isolated runs over HTTP (or stdio) agree case by case, most cases `share`
/// (as the message says), and the `@fresh` case `fresh` ran alone at 2025-11-25.
fn agree_and_share(http: bool, share: &str, fresh: &str) {
    let shared = same_outcomes(http);
    let count = |mode: &str| shared.values().filter(|(_, m)| m == mode).count();
    assert!(
        count("shared") > count("alone"),
        "most cases {share}: {} shared, {} alone, {} rerun",
        count("shared"),
        count("alone"),
        count("rerun")
    );
    let fresh = (fresh.to_string(), "2025-11-25".to_string());
    assert_eq!(shared[&fresh].1, "alone");
}

/// Over stdio one process serves many cases, in the session its first case opened: far
/// fewer processes than cases.
#[test]
fn over_stdio_a_process_serves_many_cases() {
    let report = run(false, false, "stdio-processes");
    let mut processes = std::collections::BTreeSet::new();
    let mut shared = 0;
    for case in report["cases"].as_array().expect("cases") {
        if case["placement"]["mode"] == "shared" {
            shared += 1;
            processes.insert(case["placement"]["process"].as_u64());
        }
    }
    assert!(
        shared >= 2 * processes.len(),
        "{shared} shared cases on {} processes",
        processes.len()
    );
    // A case that went on in a session an earlier case (or the version probe) opened says how
    // it was opened: the harness's opening at the case's version, the answer, and (handshake
    // era) `initialized`.
    let mut adopted = 0;
    let mut probed = std::collections::BTreeSet::new();
    for case in report["cases"].as_array().expect("cases") {
        let Some(opening) = case["sharedOpening"].as_array() else {
            continue;
        };
        adopted += 1;
        let version = case["protocolVersion"].as_str().unwrap_or_default();
        let (method, asked) = match version {
            "2026-07-28" => (
                "server/discover",
                &opening[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            ),
            _ => ("initialize", &opening[0]["params"]["protocolVersion"]),
        };
        assert_eq!(opening[0]["method"], method, "{}", case["id"]);
        assert_eq!(asked, version, "{}", case["id"]);
        assert_eq!(
            opening[1]["id"], opening[0]["id"],
            "{}: the answer",
            case["id"]
        );
        assert_eq!(opening.len(), if method == "initialize" { 3 } else { 2 });
        if opening[0]["id"] == "versions" {
            probed.insert(version.to_string());
        }
    }
    assert!(
        adopted > 0 && adopted <= shared,
        "{adopted} adopted, {shared} shared"
    );
    // Each version probe's process served cases at its version: it was not started twice.
    let versions = report["targetVersions"].as_array().expect("versions").len();
    assert_eq!(probed.len(), versions, "{probed:?}");
}
