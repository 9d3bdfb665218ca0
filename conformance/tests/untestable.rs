//! Targets that cannot be tested at all are said once and fast: the run stops before any case,
//! exits 2 with one message that says what happened (with the target's stderr), and still
//! writes its JSON and JUnit reports, so CI shows an error rather than a column of failures.

use assert_cmd::Command;
use std::time::{Duration, Instant};

/// One untestable target: how it is given, what the message must say, how fast it must come.
struct Row {
    name: &'static str,
    args: Vec<String>,
    says: &'static str,
    within: Duration,
}

fn row(name: &'static str, args: &[&str], says: &'static str, secs: u64) -> Row {
    Row {
        name,
        args: args.iter().map(|a| a.to_string()).collect(),
        says,
        within: Duration::from_secs(secs),
    }
}

fn table() -> Vec<Row> {
    let exe = env!("CARGO_BIN_EXE_conformance");
    let banner = format!("echo 'server starting'; exec {exe} reference-server");
    vec![
        row(
            "missing command",
            &["--", "/nonexistent/mcp-server"],
            "No such file or directory",
            5,
        ),
        row(
            "exits at once",
            &["--", "true"],
            "it exited (exit status: 0) before answering",
            10,
        ),
        row(
            "exits with an error",
            &["--", "sh", "-c", "echo 'cannot open config' >&2; exit 3"],
            "cannot open config",
            10,
        ),
        // Silent: the startup allowance (given short here), not a minute.
        row(
            "silent",
            &["--startup-timeout", "2s", "--", "sleep", "1000"],
            "no answer within",
            12,
        ),
        // Silent with the default allowance (15 s): an idle target earns no stretch from a
        // busy machine (only its own waits for a CPU would), so well under 30 s.
        row(
            "silent, default allowance",
            &["--", "sleep", "1000"],
            "no answer within",
            25,
        ),
        row(
            "garbage on stdout",
            &["--", "sh", "-c", "yes garbage"],
            "not JSON",
            10,
        ),
        // A banner before a correct server: stdout carries only messages (STD-03).
        row(
            "banner on stdout",
            &["--", "sh", "-c", &banner],
            "`server starting`",
            10,
        ),
        row(
            "nothing listens",
            &["--url", "http://127.0.0.1:1/mcp"],
            "Connection refused",
            10,
        ),
        row(
            "not an MCP endpoint",
            &[
                "--url",
                "http://127.0.0.1:{port}/mcp",
                "--",
                "python3",
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                "{port}",
            ],
            "HTTP 501",
            20,
        ),
    ]
}

#[test]
fn untestable_targets_stop_the_run_once_with_exit_2() {
    let dir = std::env::temp_dir().join(format!("conformance-untestable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // Every row at once: most wait out a limit (the default startup allowance is 15 s), and
    // each has report files of its own.
    let problems: Vec<String> = std::thread::scope(|scope| {
        let rows: Vec<_> = table()
            .into_iter()
            .enumerate()
            .map(|(n, row)| {
                let dir = &dir;
                scope.spawn(move || problem(&row, &dir.join(format!("row-{n}"))))
            })
            .collect();
        rows.into_iter()
            .filter_map(|row| row.join().expect("a row's check does not panic"))
            .collect()
    });
    let _ = std::fs::remove_dir_all(&dir);
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// What is wrong with how the harness met `row`'s target, if anything; its reports go to
/// `stem.json` and `stem.xml`.
fn problem(row: &Row, stem: &std::path::Path) -> Option<String> {
    let json = stem.with_extension("json");
    let junit = stem.with_extension("xml");
    let began = Instant::now();
    let output = Command::cargo_bin("conformance")
        .expect("built")
        .env_remove("CI")
        .arg("server")
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .args(&row.args)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("runs");
    let took = began.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut wrong = vec![];
    if output.status.code() != Some(2) {
        wrong.push(format!("exit {:?}, not 2", output.status.code()));
    }
    if !stderr.contains(row.says) {
        wrong.push(format!("stderr does not say `{}`", row.says));
    }
    let errors = stderr.lines().filter(|l| l.starts_with("error:")).count();
    if errors != 1 || !stderr.contains("error: cannot test") {
        wrong.push("not one `error: cannot test` message".into());
    }
    if !stdout.trim().is_empty() {
        wrong.push("cases were played (stdout is not empty)".into());
    }
    if took > row.within {
        wrong.push(format!("took {took:?}, more than {:?}", row.within));
    }
    let report: serde_json::Value = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    if report.pointer("/error/kind").and_then(|k| k.as_str()) != Some("untestable") {
        wrong.push("the JSON report has no untestable error".into());
    }
    let xml = std::fs::read_to_string(&junit).unwrap_or_default();
    let suite = xml
        .split("<testsuite name=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default();
    if !xml.contains("errors=\"1\"") || suite.is_empty() || suite.contains('/') {
        wrong.push(format!(
            "the JUnit report has no error, or no stable name: {xml}"
        ));
    }
    (!wrong.is_empty()).then(|| format!("{}: {}\n{stderr}", row.name, wrong.join("; ")))
}
