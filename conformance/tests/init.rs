//! `conformance init`: it proposes exactly the fixture mapping for the reference server (and
//! the file it writes passes), never overwrites a file without --force, never calls a tool
//! that may change things unless named with --try, and leaves out a candidate that does not
//! behave, saying why.

#[path = "support/cli.rs"]
pub mod cli;

use cli::{conformance, TempDir};
use conformance::fixtures::{Mapping, Role};
use serde_json::{json, Value};
use std::path::Path;

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/init_server.py");

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `conformance init -o FILE [extra…] -- python3 init_server.py LOG [mode]`.
fn init_fake(file: &Path, log: &Path, extra: &[&str], mode: &[&str]) -> std::process::Output {
    conformance()
        .arg("init")
        .arg("-o")
        .arg(file)
        .args(extra)
        .args(["--", "python3", FAKE])
        .arg(log)
        .args(mode)
        .output()
        .expect("runs")
}

/// The tool names the fake server was called with, in order.
fn called(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let call: Value = serde_json::from_str(line).expect("a logged call");
            call["name"].as_str().unwrap_or("").to_string()
        })
        .collect()
}

fn fixtures_of(file: &Path) -> Value {
    let text = std::fs::read_to_string(file).expect("the target file");
    let value: Value = serde_json::from_str(&text).expect("JSON");
    value["fixtures"].clone()
}

#[test]
fn the_reference_server_gets_exactly_the_fixture_mapping_and_passes_with_it() {
    let dir = TempDir::new("reference");
    let file = dir.file("reference.json");
    let output = conformance()
        .arg("init")
        .arg("-o")
        .arg(&file)
        .args(["--", env!("CARGO_BIN_EXE_conformance"), "reference-server"])
        .output()
        .expect("runs");
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    let loaded = conformance::target_file::load(&file).expect("the file loads");
    let fixtures = loaded.fixtures.expect("a mapping");
    let roles = Role::ALL;
    for role in roles {
        assert_eq!(
            fixtures.mapping(role),
            Some(&Mapping {
                tool: role.base().to_string(),
                arguments: None,
                progress: true,
            }),
            "{role}: {stdout}"
        );
    }
    assert_eq!(fixtures.roles.len(), roles.len());
    for role in roles {
        let note = fixtures_of(&file)[role.as_str()]["note"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(
            note.contains("Checked: ") && note.contains("Not checked: "),
            "{role}: {note}"
        );
    }
    let unlocks = stdout
        .lines()
        .find(|l| l.starts_with("unlocks "))
        .unwrap_or_default();
    let counts: Vec<&str> = unlocks.split_whitespace().collect();
    let without_file = unlocks
        .split("without a target file: ")
        .nth(1)
        .and_then(|rest| rest.split(';').next());
    assert!(
        counts.len() > 4 && Some(counts[1]) == without_file && counts[1] != "0",
        "the file unlocks what the profile's own names do: {unlocks}"
    );
    // What stays skipped is what the server declares, not what the file maps.
    let still: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("still skipped"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(
        still.iter().all(|l| l.contains("declares")),
        "{}",
        still.join("\n")
    );
    let run = conformance()
        .arg("server")
        .arg("--target")
        .arg(&file)
        .output()
        .expect("runs");
    let summary = text(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{summary}");
    assert!(summary.contains(" passed, 0 failed"), "{summary}");
}

/// `init` on the fake server in `mode`: what it printed, and the fixtures it wrote.
fn drafted(file: &Path, log: &Path, mode: &str) -> (String, Value) {
    // The fake's tools answer in milliseconds or never: a reply window of 2 s (not the
    // default 5 s, which the reference server's test keeps) decides the same, sooner.
    let output = init_fake(file, log, &["--reply-timeout", "2s"], &[mode]);
    let stdout = text(&output.stdout);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    (stdout, fixtures_of(file))
}

#[test]
fn only_a_tool_that_runs_as_a_task_plays_a_task_role() {
    let dir = TempDir::new("tasks");
    let (file, log) = (dir.file("t.json"), dir.file("calls.log"));
    let (stdout, fixtures) = drafted(&file, &log, "tasks");
    assert_eq!(fixtures["task_work"]["tool"], "job", "{stdout}");
    let note = fixtures["task_work"]["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("it answered with task `task-1` (`working`)")
            && note.contains("`tasks/get` 1.0 s later said `working`"),
        "{note}"
    );
    assert!(
        note.contains("`work` (listed by the server): unchecked: passed over: could play `work`, but declares `taskSupport: forbidden`"),
        "{note}"
    );
    // Nothing plays `sleep` as a task: the note says why the tools that run as one were passed
    // over, and `research`, which may change things, was never called.
    let sleep = fixtures["task_sleep"]["note"].as_str().unwrap_or_default();
    assert!(sleep.starts_with("Not mapped"), "{sleep}");
    assert!(sleep.contains("`research` (listed by the server): unchecked: passed over: declares `taskSupport: required`"), "{sleep}");
    let calls = called(&log);
    assert!(!calls.iter().any(|c| c == "research"), "{calls:?}");
    // The run calls `job` where a case calls `work` as a task, and never `work` as one.
    let still = stdout
        .lines()
        .skip_while(|l| !l.starts_with("still skipped"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!still.contains("plays `work` but declares"), "{still}");
}

#[test]
fn a_server_with_the_2026_tasks_extension_gets_task_work_checked_at_2026() {
    let dir = TempDir::new("tasks-ext");
    let (file, log) = (dir.file("t.json"), dir.file("calls.log"));
    let (stdout, fixtures) = drafted(&file, &log, "tasks-ext");
    assert_eq!(fixtures["task_work"]["tool"], "job", "{stdout}");
    let note = fixtures["task_work"]["note"].as_str().unwrap_or_default();
    assert!(note.contains("called as a task at 2026-07-28"), "{note}");
    assert!(
        fixtures.get("task_sleep").is_none(),
        "no case calls sleep as a task at 2026"
    );
}

#[test]
fn an_existing_file_is_overwritten_only_with_force() {
    let dir = TempDir::new("force");
    let file = dir.file("target.json");
    let log = dir.file("calls.log");
    std::fs::write(&file, "keep me").expect("written");
    let output = init_fake(&file, &log, &[], &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with("error: ") && stderr.contains("exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    assert!(
        !log.exists(),
        "the server is not even started: {:?}",
        called(&log)
    );
    let output = init_fake(&file, &log, &["--force"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    conformance::target_file::load(&file).expect("overwritten with a target file");
}

#[test]
fn a_tool_that_may_change_things_is_called_only_when_named() {
    let dir = TempDir::new("unmarked");
    let file = dir.file("target.json");
    let log = dir.file("calls.log");
    let output = init_fake(&file, &log, &[], &[]);
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    // `say` echoes and `pause` sleeps as the roles need, but neither says it is read-only.
    let calls = called(&log);
    assert!(
        calls
            .iter()
            .all(|c| ["echo", "sleep", "work"].contains(&c.as_str())),
        "only the read-only tools are called: {calls:?}"
    );
    assert!(stdout.contains("say") && stdout.contains("may change things: never called"));
    let fixtures = fixtures_of(&file);
    for role in ["echo", "ping"] {
        let note = fixtures[role]["note"].as_str().unwrap_or("");
        assert!(fixtures[role].get("tool").is_none(), "{role}: {fixtures}");
        assert!(
            note.contains("`say`") && note.contains("unchecked") && note.contains("--try say"),
            "{role}: {note}"
        );
    }
    assert!(fixtures["sleep"]["note"]
        .as_str()
        .is_some_and(|n| n.contains("--try pause")));

    let file = dir.file("tried.json");
    std::fs::remove_file(&log).expect("log removed");
    let output = init_fake(&file, &log, &["--try", "say"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let calls = called(&log);
    assert!(calls.iter().any(|c| c == "say"), "{calls:?}");
    assert!(
        !calls.iter().any(|c| c == "pause" || c == "delete_file"),
        "{calls:?}"
    );
    let fixtures = fixtures_of(&file);
    assert_eq!(fixtures["echo"]["tool"], "say");
    assert_eq!(fixtures["echo"]["arguments"], json!({"message": "{text}"}));
    assert_eq!(fixtures["ping"]["tool"], "say");
    assert_eq!(
        fixtures["ping"]["arguments"],
        json!({"message": "Server: still available"})
    );
    assert!(fixtures["sleep"].get("tool").is_none(), "{fixtures}");
}

#[test]
fn a_candidate_that_does_not_behave_is_left_out_with_the_reason() {
    let dir = TempDir::new("liars");
    let file = dir.file("target.json");
    let log = dir.file("calls.log");
    let output = init_fake(&file, &log, &["--try", "pause"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let fixtures = fixtures_of(&file);
    let note = |role: &str| fixtures[role]["note"].as_str().unwrap_or("").to_string();
    // An echo that answers `pong`.
    assert!(fixtures["echo"].get("tool").is_none());
    assert!(
        note("echo").contains("it answered `pong`"),
        "{}",
        note("echo")
    );
    // A sleep that answers at once: `pause` (named with --try) sleeps, and plays it.
    assert_eq!(fixtures["sleep"]["tool"], "pause");
    assert_eq!(fixtures["sleep"]["arguments"], json!({"delay_ms": "{ms}"}));
    assert!(
        note("sleep").contains("`sleep`") && note("sleep").contains("sooner than asked"),
        "{}",
        note("sleep")
    );
    // Work that ends on its own.
    assert!(fixtures["work"].get("tool").is_none());
    assert!(note("work").contains("on its own"), "{}", note("work"));
    // Roles no tool could play are left out, not guessed.
    assert!(fixtures.get("ticker").is_none() && fixtures.get("cancellations").is_none());
    let loaded = conformance::target_file::load(&file).expect("loads");
    let fixtures = loaded.fixtures.expect("fixtures");
    assert!(fixtures.has(Role::Sleep) && !fixtures.has(Role::Echo) && !fixtures.has(Role::Work));
}

#[test]
fn a_try_that_names_no_tool_calls_nothing() {
    let dir = TempDir::new("unknown-try");
    let file = dir.file("target.json");
    let log = dir.file("calls.log");
    let output = init_fake(&file, &log, &["--try", "sya"], &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("--try sya") && stderr.contains("say"),
        "{stderr}"
    );
    assert!(!log.exists(), "{:?}", called(&log));
    assert!(!file.exists());
}

#[test]
fn a_server_of_the_stateless_era_only_is_opened_with_server_discover() {
    let dir = TempDir::new("stateless");
    let file = dir.file("target.json");
    let log = dir.file("calls.log");
    let output = init_fake(&file, &log, &[], &["stateless"]);
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(stdout.contains("protocol version 2026-07-28"), "{stdout}");
    assert!(called(&log).iter().any(|c| c == "echo"));
}

#[test]
fn no_server_is_a_usage_error() {
    conformance()
        .arg("init")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("error: give the server"));
}
