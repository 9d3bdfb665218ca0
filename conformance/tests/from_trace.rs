//! `conformance case from-trace` end to end. Sessions as `conformance record` writes them
//! (docs/traces.md), with the reference server and with the broken servers of the broken
//! tables, are drafted into cases; each drafted case, replayed by `conformance server --cases
//! DIR`, passes against the reference server and gives the recorded fault's finding against
//! the broken server it was recorded from, and `--bless` rewrites a stale expectation of one.
//!
//! This binary is also the broken server: with `BROKEN_SERVER=<mode>` it serves that mode.

#![allow(unsafe_code)] // the broken server's modes signal and fork

#[path = "support/cli.rs"]
pub mod cli;
#[path = "support/broken_server.rs"]
mod server;

use cli::{conformance, TempDir};
use libtest_mimic::{Failed, Trial};
use predicates::prelude::*;
use serde_json::{json, Value};
use std::path::PathBuf;

/// A trace written as the recorder writes one: the header, then events with their time.
struct Rec {
    lines: Vec<String>,
}

impl Rec {
    /// A stdio recording of `argv`, opened with `initialize` at `version` and answered.
    fn stdio(argv: &[&str], version: &str) -> Rec {
        let header = json!({"trace": "mcp-conformance", "version": 1, "transport": "stdio",
            "started": "2026-12-06T20:15:00.000Z", "recorder": "conformance 0.1.0",
            "server": {"argv": argv}, "redacted": []});
        let mut rec = Rec {
            lines: vec![header.to_string()],
        };
        rec.client(
            1,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "desktop", "version": "1.2"}}}),
        );
        rec.server(9, json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": version,
            "capabilities": {"tools": {}}, "serverInfo": {"name": "recorded", "version": "0.9.1"}}}));
        rec.client(
            10,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        rec
    }

    fn event(&mut self, ms: u64, mut event: Value) -> &mut Rec {
        event["at"] = json!(ms * 1000);
        self.lines.push(event.to_string());
        self
    }

    fn client(&mut self, ms: u64, message: Value) -> &mut Rec {
        self.event(
            ms,
            json!({"event": "message", "from": "client", "text": message.to_string()}),
        )
    }

    fn server(&mut self, ms: u64, message: Value) -> &mut Rec {
        self.event(
            ms,
            json!({"event": "message", "from": "server", "text": message.to_string()}),
        )
    }

    fn call(
        &mut self,
        ms: u64,
        id: u64,
        tool: &str,
        arguments: Value,
        token: Option<&str>,
    ) -> &mut Rec {
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(token) = token {
            params["_meta"] = json!({"progressToken": token});
        }
        self.client(
            ms,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
        )
    }

    fn cancel(&mut self, ms: u64, id: u64) -> &mut Rec {
        self.client(
            ms,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "the user pressed stop"}}),
        )
    }

    fn progress(&mut self, ms: u64, token: &str, progress: u64) -> &mut Rec {
        self.server(
            ms,
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": progress}}),
        )
    }

    fn ping(&mut self, ms: u64, id: u64, answers: &[u64]) -> &mut Rec {
        self.client(ms, json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        for at in answers {
            self.server(*at, json!({"jsonrpc": "2.0", "id": id, "result": {}}));
        }
        self
    }

    /// The client closes stdin and the server exits at once.
    fn close(&mut self, ms: u64) -> &mut Rec {
        self.event(ms, json!({"event": "closed", "from": "client"}))
            .event(ms + 3, json!({"event": "closed", "from": "server"}))
            .event(ms + 4, json!({"event": "exit", "code": 0, "signal": null}))
    }

    fn text(&self) -> String {
        self.lines.join("\n") + "\n"
    }
}

/// Who a drafted case is replayed against.
#[derive(Clone, Copy)]
enum Against {
    /// The bundled reference server (`conformance server` without a command).
    Reference,
    /// This binary serving a broken mode.
    Broken(&'static str),
}

/// The sessions, each as recorded from a server; each row of [`replays`] drafts one.
fn recording(name: &str) -> Rec {
    let broken = ["from_trace", "(broken server)"];
    let reference = ["conformance", "reference-server"];
    match name {
        // A cancel after the first progress, answered as the spec asks.
        "cancel-after-progress" => {
            let mut rec = Rec::stdio(&reference, "2025-11-25");
            rec.call(20, 1, "work", json!({}), Some("p-1"))
                .progress(22, "p-1", 0)
                .cancel(23, 1);
            rec.ping(30, 2, &[31]).close(40);
            rec
        }
        // A client's deadline: the server answered the cancelled call anyway (CAN-05).
        "answers-after-cancel" => {
            let mut rec = Rec::stdio(&broken, "2025-11-25");
            rec.call(20, 1, "work", json!({}), None).cancel(120, 1);
            rec.server(121, json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32800, "message": "Request cancelled"}}));
            rec.ping(130, 2, &[131]);
            rec
        }
        // Every ping answered twice (RPC-04).
        "duplicate-response" => {
            let mut rec = Rec::stdio(&broken, "2025-06-18");
            rec.ping(20, 1, &[21, 21]);
            rec
        }
        // The server dies of a cancel, with the call in flight (STD-01).
        "crashes-on-cancel" => {
            let mut rec = Rec::stdio(&broken, "2025-11-25");
            rec.call(20, 1, "work", json!({}), Some("p-1"))
                .progress(21, "p-1", 0)
                .cancel(22, 1);
            rec.event(
                23,
                json!({"event": "stderr", "text": "crashing on a cancel"}),
            )
            .event(24, json!({"event": "exit", "code": 3, "signal": null}));
            rec
        }
        // Progress that goes down (PRG-03), then a cancel after the second progress: timed.
        "progress-decreases" => {
            let mut rec = Rec::stdio(&broken, "2025-11-25");
            rec.call(20, 1, "ticker", json!({"interval_ms": 5}), Some("t-1"))
                .progress(26, "t-1", 999)
                .progress(31, "t-1", 998)
                .cancel(45, 1);
            rec
        }
        // A cancel of a call that had already been answered: ignored, nothing more is sent.
        "late-cancel" => {
            let mut rec = Rec::stdio(&reference, "2025-11-25");
            rec.call(20, 1, "echo", json!({"text": "it is late"}), None);
            rec.server(21, json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "it is late"}]}}));
            rec.cancel(25, 1).ping(30, 2, &[31]).close(40);
            rec
        }
        other => panic!("no recording named {other}"),
    }
}

/// Each recording, replayed against servers, and the verdict each replay must give: the
/// outcome word and, unless it passes, the requirement of its finding.
fn replays() -> Vec<(&'static str, Against, &'static str, Option<&'static str>)> {
    use Against::{Broken, Reference};
    vec![
        ("cancel-after-progress", Reference, "pass", None),
        ("cancel-after-progress", Broken("correct"), "pass", None),
        (
            "cancel-after-progress",
            Broken("answers-after-cancel"),
            "warn",
            Some("CAN-05"),
        ),
        (
            "answers-after-cancel",
            Broken("answers-after-cancel"),
            "warn",
            Some("CAN-05"),
        ),
        ("answers-after-cancel", Reference, "pass", None),
        (
            "duplicate-response",
            Broken("duplicate-response"),
            "fail",
            Some("RPC-04"),
        ),
        ("duplicate-response", Reference, "pass", None),
        (
            "crashes-on-cancel",
            Broken("crashes-on-cancel"),
            "fail",
            Some("STD-01"),
        ),
        ("crashes-on-cancel", Reference, "pass", None),
        (
            "progress-decreases",
            Broken("progress-decreases"),
            "fail",
            Some("PRG-03"),
        ),
        ("progress-decreases", Reference, "pass", None),
        ("late-cancel", Reference, "pass", None),
        ("late-cancel", Broken("correct"), "pass", None),
    ]
}

/// Drafts `name`'s recording into `dir/server/<name>.mcpt` with the command line (which makes
/// the folder).
fn drafted(dir: &TempDir, name: &str) -> Result<PathBuf, Failed> {
    let trace = dir.file(&format!("{name}.jsonl"));
    std::fs::write(&trace, recording(name).text())?;
    // The command makes `server/` itself.
    let case = dir.file(&format!("server/{name}.mcpt"));
    conformance()
        .args(["case", "from-trace"])
        .arg(&trace)
        .arg("-o")
        .arg(&case)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "wrote {}",
            case.display()
        )));
    Ok(case)
}

/// `conformance server --strict --cases DIR` against `against`.
fn replay(dir: &TempDir, against: Against) -> assert_cmd::assert::Assert {
    let mut cmd = conformance();
    cmd.args(["server", "--strict", "--cases"]).arg(dir.path());
    if let Against::Broken(mode) = against {
        let exe = std::env::current_exe().expect("this binary");
        cmd.env("BROKEN_SERVER", mode).arg("--").arg(exe);
    }
    cmd.assert()
}

fn replayed(
    name: &str,
    against: Against,
    outcome: &str,
    finding: Option<&str>,
) -> Result<(), Failed> {
    let dir = TempDir::new(name);
    let case = drafted(&dir, name)?;
    let assert = replay(&dir, against);
    let out = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    let text = std::fs::read_to_string(&case)?;
    let line = format!("{outcome:<5} [should] server/{name}");
    if !out.lines().any(|l| l.starts_with(&line)) {
        return Err(format!("expected `{line}`; the case:\n{text}\nthe run:\n{out}").into());
    }
    if let Some(req) = finding {
        let cited = format!(": {outcome} [{req}]");
        if !out.contains(&cited) {
            return Err(format!(
                "expected a finding `{cited}`; the case:\n{text}\nthe run:\n{out}"
            )
            .into());
        }
    }
    Ok(())
}

/// A drafted case whose expectation went stale is blessed like any other: the line is
/// rewritten to what the server sent, and the case passes again.
fn blessing_rewrites_a_stale_expectation() -> Result<(), Failed> {
    let dir = TempDir::new("bless");
    let case = drafted(&dir, "cancel-after-progress")?;
    let text = std::fs::read_to_string(&case)?;
    let fresh = r#"< {"id":2,"jsonrpc":"2.0","result":{}}"#;
    if !text.contains(fresh) {
        return Err(format!("the ping's answer is not expected as drafted:\n{text}").into());
    }
    let stale = text.replace(
        fresh,
        r#"< {"id":2,"jsonrpc":"2.0","result":{"stale":true}}"#,
    );
    std::fs::write(&case, &stale)?;
    replay(&dir, Against::Reference)
        .code(1)
        .stdout(predicate::str::contains("\"stale\""));
    conformance()
        .args(["server", "--bless", "--cases"])
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("blessed"));
    let blessed = std::fs::read_to_string(&case)?;
    if blessed.contains("stale") || blessed.lines().count() != text.lines().count() {
        return Err(format!("blessing left:\n{blessed}").into());
    }
    replay(&dir, Against::Reference).success();
    Ok(())
}

/// What cannot become a case is refused with the trace's path, a line where one is to
/// blame, and what to do instead; an existing case is kept without --force.
fn refusals_say_why() -> Result<(), Failed> {
    let dir = TempDir::new("refusals");
    let from_trace = |trace: &PathBuf, case: &PathBuf| {
        let mut cmd = conformance();
        cmd.args(["case", "from-trace"])
            .arg(trace)
            .arg("-o")
            .arg(case);
        cmd
    };
    let case = dir.file("kept.mcpt");
    std::fs::write(&case, "mine\n")?;
    let trace = dir.file("late.jsonl");
    std::fs::write(&trace, recording("late-cancel").text())?;
    from_trace(&trace, &case)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("kept.mcpt exists; give --force"));
    if std::fs::read_to_string(&case)? != "mine\n" {
        return Err("an existing case was overwritten without --force".into());
    }
    from_trace(&trace, &case).arg("--force").assert().success();
    let idle = dir.file("idle.jsonl");
    let mut rec = Rec::stdio(&["server"], "2025-11-25");
    rec.close(30);
    std::fs::write(&idle, rec.text())?;
    from_trace(&idle, &dir.file("idle.mcpt"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{}: the trace holds no request",
            idle.display()
        )));
    let http = dir.file("http.jsonl");
    std::fs::write(
        &http,
        recording("late-cancel")
            .text()
            .replacen("\"stdio\"", "\"http\"", 1),
    )?;
    from_trace(&http, &dir.file("http.mcpt"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{}:1: a Streamable HTTP recording",
            http.display()
        )))
        .stderr(predicate::str::contains("record the server over stdio"));
    if dir.file("idle.mcpt").exists() || dir.file("http.mcpt").exists() {
        return Err("a refused draft left a file behind".into());
    }
    Ok(())
}

/// `conformance record --case`: a session with the reference server (a `work` call cancelled
/// on its first progress, then a ping) is recorded, drafted when it ends, and the case passes
/// against the reference server and warns against one that answers after a cancel.
fn record_drafts_the_case_when_the_session_ends() -> Result<(), Failed> {
    use std::io::{BufRead, BufReader, Write};
    let dir = TempDir::new("record-case");
    std::fs::create_dir_all(dir.file("server"))?;
    let case = dir.file("server/recorded.mcpt");
    let mut recorder = std::process::Command::new(cli::CONFORMANCE)
        .args(["record", "-o"])
        .arg(dir.file("traces"))
        .arg("--case")
        .arg(&case)
        .args(["--", cli::CONFORMANCE, "reference-server"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let mut to = recorder.stdin.take().ok_or("the recorder's stdin")?;
    let mut from = BufReader::new(recorder.stdout.take().ok_or("the recorder's stdout")?);
    let mut wait_for = |needle: &str| -> Result<(), Failed> {
        let mut line = String::new();
        while from.read_line(&mut line)? > 0 {
            if line.contains(needle) {
                return Ok(());
            }
            line.clear();
        }
        Err(format!("the server never wrote `{needle}`").into())
    };
    let mut send = |message: Value| writeln!(to, "{message}");
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "desktop", "version": "1"}}}),
    )?;
    wait_for(r#""id":0"#)?;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "work", "arguments": {}, "_meta": {"progressToken": "w"}}}),
    )?;
    wait_for("notifications/progress")?;
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "stop"}}),
    )?;
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))?;
    wait_for(r#""id":2"#)?;
    drop(to);
    if !recorder.wait()?.success() {
        return Err("the recorder did not end as the server did (exit 0)".into());
    }
    let text = std::fs::read_to_string(&case)?;
    for line in [
        "! cancel 1 stop",
        r#"> {"id":2,"jsonrpc":"2.0","method":"ping"}"#,
        "! close-stdin",
    ] {
        if !text.contains(line) {
            return Err(format!("no `{line}` in the drafted case:\n{text}").into());
        }
    }
    replay(&dir, Against::Reference).success();
    let warned = replay(&dir, Against::Broken("answers-after-cancel")).code(1);
    let out = String::from_utf8_lossy(&warned.get_output().stdout).into_owned();
    if !out.contains(": warn [CAN-05]") {
        return Err(format!(
            "no CAN-05 warning against a server that answers after a cancel:\n{out}"
        )
        .into());
    }
    Ok(())
}

/// The real recordings of SDK pairs (`tests/fixtures/traces/real`, README there): each stdio
/// one drafts a case the parser accepts, cancelling where the client did; the HTTP ones are
/// refused, naming the transport.
fn real_recordings_draft_cases() -> Result<(), Failed> {
    use conformance::from_trace::{draft, render};
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/real");
    let mut drafted = 0;
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let trace = conformance::trace::Trace::read(&path)?;
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        match draft(&trace) {
            Err(e) if name.contains("-http-") && e.to_string().contains("Streamable HTTP") => {}
            Err(e) => return Err(format!("{name}: {e}").into()),
            Ok(case) => {
                let text = render(&case, &PathBuf::from(format!("server/{name}.mcpt")))?;
                let cancels = text.lines().filter(|l| l.starts_with("! cancel ")).count();
                if cancels != 1 || !text.contains("@role server") {
                    return Err(format!("{name}: one cancel expected:\n{text}").into());
                }
                drafted += 1;
            }
        }
    }
    if drafted < 6 {
        return Err(format!("only {drafted} stdio recordings drafted").into());
    }
    Ok(())
}

fn main() {
    if let Ok(mode) = std::env::var("BROKEN_SERVER") {
        server::serve(&mode);
    }
    let args = conformance::harness::test_arguments();
    let mut trials = vec![
        Trial::test(
            "bless/a-stale-expectation",
            blessing_rewrites_a_stale_expectation,
        ),
        Trial::test("refusals", refusals_say_why),
        Trial::test("record/case", record_drafts_the_case_when_the_session_ends),
        Trial::test("real-recordings", real_recordings_draft_cases),
    ];
    for (name, against, outcome, finding) in replays() {
        let target = match against {
            Against::Reference => "reference".to_string(),
            Against::Broken(mode) => mode.to_string(),
        };
        trials.push(Trial::test(
            format!("replay/{name}/against/{target}"),
            move || replayed(name, against, outcome, finding),
        ));
    }
    libtest_mimic::run(&args, trials).exit();
}
