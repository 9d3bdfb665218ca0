//! The `conformance` command line: exit codes, what it prints, and blessing.

#![allow(unsafe_code)] // libc: signals the runs it starts

#[path = "support/cli.rs"]
pub mod cli;

use cli::{conformance, TempDir};
use predicates::prelude::*;
use std::path::Path;
use std::time::Duration;

const WRONG_ECHO: &str = "\
# Echo returns its text; this case expects other text, on purpose.
@requirement TOOL-01
@level must
@fixtures echo

> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}}
< {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"goodbye\"}]}}
> {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}
< {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}
";

#[test]
fn bundled_reference_passes_every_case() {
    let output = conformance().arg("server").output().expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty());
    let summary = predicate::str::is_match(r"^[1-9][0-9]* passed, 0 failed").unwrap();
    assert!(
        last.is_some_and(|l| summary.eval(l)),
        "last line: {last:?}\n{stdout}"
    );
}

#[test]
fn list_shows_cases_with_their_level() {
    conformance()
        .arg("list")
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"(?m)^server/cancel-after-progress\s+should\s").unwrap());
}

#[test]
fn a_filter_that_matches_nothing_is_a_usage_error() {
    conformance()
        .args(["server", "no-such-case-anywhere"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no case id contains `no-such-case-anywhere`",
        ));
    conformance()
        .args(["list", "no-such-case-anywhere"])
        .assert()
        .code(2);
}

#[test]
fn a_broken_case_file_is_reported_with_its_line() {
    let dir = TempDir::new("broken-case");
    let path = dir.case(
        "bad",
        "# A case with a typo in a directive.\n@requirement CAN-09\n@level must\n\n! frobnicate\n",
    );
    conformance()
        .arg("server")
        .arg("--cases")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!("{}:5:", path.display())))
        .stderr(predicate::str::contains("unknown control"));
    conformance()
        .arg("list")
        .arg("--cases")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!("{}:5:", path.display())));
}

#[test]
fn bless_needs_a_cases_folder() {
    conformance()
        .args(["server", "--bless", "cancel-unknown-id"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--cases"));
}

#[test]
fn bless_is_refused_in_ci() {
    let dir = TempDir::new("bless-ci");
    let path = dir.case("wrong-echo", WRONG_ECHO);
    conformance()
        .env("CI", "1")
        .arg("server")
        .arg("--bless")
        .arg("--cases")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("refused when CI is set"));
    conformance()
        .env("CI", "1")
        .env("CONFORMANCE_BLESS", "1")
        .arg("server")
        .arg("--cases")
        .arg(dir.path())
        .assert()
        .code(2);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), WRONG_ECHO);
}

#[test]
fn a_wrong_expectation_fails_with_a_diff_and_blessing_fixes_only_that_line() {
    let dir = TempDir::new("wrong-echo");
    let path = dir.case("wrong-echo", WRONG_ECHO);
    conformance()
        .arg("server")
        .arg("--cases")
        .arg(dir.path())
        .assert()
        .code(1)
        .stdout(predicate::str::is_match(r"(?m)^--- expected: .*wrong-echo\.mcpt").unwrap())
        .stdout(predicate::str::is_match(r"(?m)^\+\+\+ actual: ").unwrap())
        .stdout(predicate::str::is_match(r#"(?m)^-< .*"goodbye""#).unwrap())
        .stdout(predicate::str::is_match(r#"(?m)^\+< .*"hello""#).unwrap())
        .stdout(predicate::str::contains(
            "first difference at /result/content/0/text",
        ))
        .stdout(predicate::str::contains(format!("{}:7:", path.display())))
        .stdout(predicate::str::is_match(r"(?m)^0 passed, 1 failed").unwrap());

    conformance()
        .arg("server")
        .arg("--bless")
        .arg("--cases")
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("blessed"));
    let blessed = std::fs::read_to_string(&path).unwrap();
    let before: Vec<&str> = WRONG_ECHO.lines().collect();
    let after: Vec<&str> = blessed.lines().collect();
    assert_eq!(before.len(), after.len(), "{blessed}");
    assert!(blessed.ends_with('\n'));
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        if i == 6 {
            assert!(a.starts_with("< "), "{a}");
            assert!(a.contains("\"hello\"") && !a.contains("goodbye"), "{a}");
        } else {
            assert_eq!(b, a, "line {} changed", i + 1);
        }
    }

    conformance()
        .arg("server")
        .arg("--cases")
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"(?m)^1 passed, 0 failed").unwrap());
}

#[test]
fn a_server_that_cannot_start_is_a_usage_error() {
    conformance()
        .args([
            "server",
            "cancel-unknown-id",
            "--",
            "/nonexistent/conformance-no-such-server",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot start target"));
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one run, then the gate of each baseline and report it takes"
)]
fn baselines_reports_and_target_files_gate_a_run() {
    let dir = TempDir::new("gate");
    dir.case("wrong-echo", WRONG_ECHO);
    let cases = dir.path().display().to_string();
    let file = |name: &str| dir.path().join(name).display().to_string();

    // Today's failure is recorded; the run that records it exits 0.
    conformance()
        .args([
            "server",
            "--cases",
            &cases,
            "--write-baseline",
            &file("baseline.txt"),
        ])
        .assert()
        .success();
    let baseline = std::fs::read_to_string(file("baseline.txt")).expect("baseline written");
    assert!(
        baseline.lines().any(|l| l == "server/wrong-echo"),
        "{baseline}"
    );

    // With the baseline the known failure passes the gate, and both reports say why.
    conformance()
        .args([
            "server",
            "--cases",
            &cases,
            "--baseline",
            &file("baseline.txt"),
        ])
        .args([
            "--json",
            &file("report.json"),
            "--junit",
            &file("junit.xml"),
        ])
        .assert()
        .success();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file("report.json")).expect("json"))
            .expect("the JSON report parses");
    let case = &report["cases"][0];
    assert_eq!(case["id"], "server/wrong-echo");
    assert_eq!(case["outcome"], "fail");
    assert_eq!(case["level"], "must");
    assert_eq!(case["baseline"], "expected-failure");
    assert_eq!(case["requirements"][0], "TOOL-01");
    assert!(case["durationMs"].is_u64());
    assert_eq!(report["summary"]["fail"], 1);
    assert_eq!(report["protocolVersion"], "auto");
    assert_eq!(case["protocolVersion"], "2025-11-25");
    assert_eq!(case["era"], "handshake");
    let junit = std::fs::read_to_string(file("junit.xml")).expect("junit written");
    assert!(
        junit.contains("<testcase name=\"wrong-echo\" classname=\"server\""),
        "{junit}"
    );
    assert!(
        junit.contains("<skipped message=\"expected failure (baseline)"),
        "{junit}"
    );

    // Without the baseline the JUnit failure carries the diff.
    conformance()
        .args(["server", "--cases", &cases, "--junit", &file("junit.xml")])
        .assert()
        .code(1);
    let junit = std::fs::read_to_string(file("junit.xml")).expect("junit written");
    assert!(junit.contains("<failure"), "{junit}");
    assert!(
        junit.contains("first difference at /result/content/0/text"),
        "{junit}"
    );

    // A baseline entry for a case that passes is stale and fails the run, naming its line.
    std::fs::write(file("stale.txt"), "# known\nserver/cancel-unknown-id\n").expect("write");
    conformance()
        .args([
            "server",
            "cancel-unknown-id",
            "--baseline",
            &file("stale.txt"),
        ])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "stale.txt:2: stale baseline entry",
        ));

    // A target file that maps no `sleep` skips the cases that need it, with the reason.
    let exe = assert_cmd::cargo::cargo_bin("conformance");
    let target = serde_json::json!({
        "command": [exe, "reference-server"],
        "fixtures": {"work": {"tool": "work"}, "echo": {"tool": "echo"}, "sleep": null}
    });
    std::fs::write(file("target.json"), target.to_string()).expect("write");
    conformance()
        .args([
            "server",
            "no-response-after-cancel",
            "--target",
            &file("target.json"),
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "1 need a tool playing `sleep` (a call that answers after `ms` milliseconds): the target file maps none",
        ))
        .stdout(predicate::str::contains("0 ran, 1 skipped"));

    // A target file with a mistake is a usage error naming the field.
    std::fs::write(file("bad.json"), r#"{"command": "server --stdio"}"#).expect("write");
    conformance()
        .args(["server", "--target", &file("bad.json")])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "`command` must be a non-empty array",
        ));
}

#[test]
fn a_closed_stdout_ends_the_listing_quietly() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_conformance"))
        .arg("list")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("conformance starts");
    // Read one line, then close the pipe, as `| head -1` does.
    let mut first = [0u8; 16];
    let mut stdout = child.stdout.take().expect("piped");
    std::io::Read::read_exact(&mut stdout, &mut first).expect("a first line");
    drop(stdout);
    let output = child.wait_with_output().expect("conformance ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && !stderr.contains("panicked"),
        "{:?}: {stderr}",
        output.status
    );
}

#[test]
fn repeated_runs_that_disagree_are_reported_as_flaky() {
    let dir = TempDir::new("flaky");
    let counter = dir.path().join("starts");
    // Every other start serves correctly; the others exit at once. The version probe takes
    // the first start (a correct one), so the runs begin with one that exits. Each run starts
    // a target of its own (`--isolate`): shared, a case that fails is rerun alone, and the
    // alternation would fall on the shared starts only.
    let script = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; \
         if [ $((n % 2)) = 0 ]; then exec {exe} reference-server; else exit 3; fi",
        c = counter.display(),
        exe = env!("CARGO_BIN_EXE_conformance")
    );
    let json = dir.path().join("report.json");
    let junit = dir.path().join("junit.xml");
    conformance()
        .args([
            "server",
            "cancel-unknown-id",
            "--repeat",
            "4",
            "--jobs",
            "1",
            "--protocol-version",
            "2025-11-25",
            "--isolate",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .args(["--", "sh", "-c", &script])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FLAKY (fail, pass, fail, pass"))
        .stdout(predicate::str::contains("run 4/4"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("json");
    let case = &report["cases"][0];
    assert_eq!(case["flaky"], true, "{case}");
    assert_eq!(case["outcome"], "fail", "{case}");
    assert_eq!(
        case["runs"],
        serde_json::json!(["fail", "pass", "fail", "pass"])
    );
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(xml.contains(r#"name="flaky" value="true""#), "{xml}");
}

#[test]
fn a_flaky_case_whose_worst_run_passed_is_shown_as_flaky_too() {
    let dir = TempDir::new("flaky-pass");
    dir.case(
        "only-newest",
        "# Echo answers at the newest version only.\n@requirement RPC-04\n@level must\n@versions 2025-11-25\n@fixtures echo\n\n> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}}}\n< {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n",
    );
    let counter = dir.path().join("starts");
    // Every other start agrees to an older version, so the case does not apply (skip). The
    // version probe takes the first start (a correct one), so the runs begin with a skip. Each
    // run starts a target of its own (`--isolate`): shared, the runs would go on in the
    // probe's session.
    let script = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; \
         if [ $((n % 2)) = 0 ]; then exec {exe} reference-server; fi; \
         read line; echo '{{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"result\":{{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{{}},\"serverInfo\":{{\"name\":\"old\",\"version\":\"0\"}}}}}}'; cat >/dev/null",
        c = counter.display(),
        exe = env!("CARGO_BIN_EXE_conformance")
    );
    conformance()
        .args([
            "server",
            "--repeat",
            "2",
            "--jobs",
            "1",
            "--protocol-version",
            "2025-11-25",
            "--isolate",
        ])
        .arg("--cases")
        .arg(dir.path())
        .args(["--", "sh", "-c", &script])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "---- server/only-newest PASSED FLAKY (skip, pass",
        ))
        .stdout(predicate::str::contains("1 flaky case(s)"));
}

#[test]
fn an_interrupted_run_leaves_no_target_behind() {
    // The three runs at once: each waits seconds for targets that ignore the signal, and
    // each counts only the processes it started (its own pid file and target tag).
    std::thread::scope(|scope| {
        let runs: Vec<_> = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP]
            .into_iter()
            .map(|signal| scope.spawn(move || interrupted_by(signal)))
            .collect();
        for run in runs {
            if let Err(panic) = run.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}

/// Whether a process is still running (a zombie runs nothing).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().to_string()))
        .is_some_and(|state| !state.starts_with('Z') && !state.starts_with('X'))
}

/// Every running process whose environment carries a target tag of the harness `harness`:
/// whatever it started, daemons included, whether or not they wrote their pid.
fn tagged_by(harness: u32) -> Vec<i32> {
    let wanted = format!("CONFORMANCE_TARGET_TAG={harness}-");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|b| *b == 0)
                    .any(|entry| entry.starts_with(wanted.as_bytes()))
            })
        })
        .filter(|pid| running(*pid))
        .collect()
}

/// Interrupts a run of four targets at a time with `signal`, while each target (which ignores
/// SIGTERM, SIGINT, SIGHUP and its stdin's end, answers `initialize` and then nothing) has left
/// a double-forked `setsid` daemon: the harness ends with the signal's status, says it was
/// interrupted without blaming any target, and nothing it started, or could have started
/// afterwards, is still running. The version probe's start (and its daemon) come first.
#[allow(
    clippy::too_many_lines,
    reason = "one interrupted run, then every process it could have left"
)]
fn interrupted_by(signal: i32) {
    use std::os::unix::process::ExitStatusExt;
    let dir = TempDir::new("interrupt");
    let pids = dir.path().join("pids");
    let script = format!(
        "trap '' TERM INT HUP; echo $$ >> {pids}; \
         (setsid sh -c 'echo $$ >> {pids}; exec sleep 300' </dev/null >/dev/null 2>&1 &); \
         read line; id=$(echo \"$line\" | sed -n 's/.*\"id\":\\(\"[^\"]*\"\\).*/\\1/p'); \
         echo '{{\"jsonrpc\":\"2.0\",\"id\":'\"$id\"',\"result\":{{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{{\"tools\":{{}}}},\"serverInfo\":{{\"name\":\"stuck\",\"version\":\"0\"}}}}}}'; \
         exec sleep 300",
        pids = pids.display()
    );
    let out = dir.path().join("out");
    let err = dir.path().join("err");
    // A target file says it plays every role, and its opening declares tools (the harness
    // calls no tool of a server that declares none), so every `cancel` case starts it.
    let roles: serde_json::Map<String, serde_json::Value> =
        ["work", "ping", "echo", "sleep", "ticker", "cancellations"]
            .iter()
            .map(|r| (r.to_string(), serde_json::json!({"tool": r})))
            .collect();
    let target = dir.path().join("target.json");
    let file = serde_json::json!({"command": ["sh", "-c", script], "fixtures": roles});
    std::fs::write(&target, file.to_string()).expect("target file");
    let mut harness = std::process::Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args([
            "server",
            // The cancel cases whose targets hang after the opening (not the task cases: a
            // target without tasks ends those at once, and the next case would start).
            "server/cancel-",
            "--jobs",
            "4",
            "--startup-timeout",
            "60s",
            "--protocol-version",
            "2025-11-25",
            "--target",
        ])
        .arg(&target)
        .stdout(std::fs::File::create(&out).expect("out"))
        .stderr(std::fs::File::create(&err).expect("err"))
        .spawn()
        .expect("conformance starts");
    let listed = || {
        std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse::<i32>().ok())
            .collect::<Vec<_>>()
    };
    // The probe's target and daemon, then (at least) four targets and their four daemons: a
    // case that ends early lets the next one start, which only adds processes to reap.
    let started = std::time::Instant::now();
    while listed().len() < 10 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let count = listed().len();
    assert!(
        count >= 10,
        "the probe's and four cases' targets and daemons started ({count})"
    );
    // SAFETY: kill only sends a signal to the harness this test started.
    unsafe {
        libc::kill(harness.id() as i32, signal);
    }
    let status = harness.wait().expect("the harness ends");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let left = || {
        let mut left: Vec<i32> = listed().into_iter().filter(|p| running(*p)).collect();
        left.extend(tagged_by(harness.id()));
        left.sort_unstable();
        left.dedup();
        left
    };
    while !left().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = left();
    for pid in &left {
        // SAFETY: a process the harness under test left behind; the test cleans up after it.
        unsafe {
            libc::kill(*pid, libc::SIGKILL);
        }
    }
    assert!(
        left.is_empty(),
        "signal {signal}: still running after the harness: {left:?}"
    );
    assert_eq!(
        status.signal(),
        Some(signal),
        "the harness ends as the signal would have ended it: {status:?}"
    );
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(
        stderr.contains("interrupted by signal") && stderr.contains("the run is incomplete"),
        "{stderr}"
    );
    assert!(
        !stdout.contains("fail") && !stdout.contains("SIGKILL"),
        "an interrupted run blames no target:\n{stdout}"
    );
}

/// The ids `@requirement` lines cite, and the ids `cases/REQUIREMENTS.md` marks as cited.
fn requirement_ids() -> (
    std::collections::BTreeSet<String>,
    std::collections::BTreeMap<String, bool>,
) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let cases = conformance::suite::from_dir(&root).expect("the cases parse");
    let cited = cases
        .iter()
        .flat_map(|c| c.requirements.iter().cloned())
        .collect();
    let index = std::fs::read_to_string(root.join("REQUIREMENTS.md")).expect("the index");
    let listed = index
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| {
            let first = l.split(" |").next()?;
            let id = first.trim_end_matches(" ✓");
            let looks = id.split_once('-').is_some_and(|(a, n)| {
                !a.is_empty()
                    && a.chars().all(|c| c.is_ascii_uppercase())
                    && n.parse::<u32>().is_ok()
            });
            looks.then(|| (id.to_string(), first.ends_with('✓')))
        })
        .collect();
    (cited, listed)
}

#[test]
fn every_cited_requirement_is_indexed_and_marked() {
    let (cited, listed) = requirement_ids();
    let unknown: Vec<_> = cited
        .iter()
        .filter(|id| !listed.contains_key(*id))
        .collect();
    assert!(
        unknown.is_empty(),
        "cited but not in cases/REQUIREMENTS.md: {unknown:?}"
    );
    let unmarked: Vec<_> = cited
        .iter()
        .filter(|id| listed.get(*id) == Some(&false))
        .collect();
    assert!(
        unmarked.is_empty(),
        "cited but not marked ✓ in cases/REQUIREMENTS.md: {unmarked:?}"
    );
    let stale: Vec<_> = listed
        .iter()
        .filter(|(id, marked)| **marked && !cited.contains(*id))
        .map(|(id, _)| id)
        .collect();
    assert!(
        stale.is_empty(),
        "marked ✓ in cases/REQUIREMENTS.md but cited by no case: {stale:?}"
    );
}

#[test]
fn a_server_over_http_is_started_per_case_and_reports_its_transport() {
    let dir = TempDir::new("http");
    let json = dir.path().join("report.json");
    let exe = assert_cmd::cargo::cargo_bin("conformance");
    let output = conformance()
        .args(["server", "--url", "http://127.0.0.1:{port}/mcp", "--json"])
        .arg(&json)
        .arg("http-session")
        .arg("--")
        .arg(&exe)
        .args(["reference-server", "--http", "127.0.0.1:{port}"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("over http"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("a report")).expect("JSON");
    assert_eq!(report["transport"], "http");
    assert_eq!(report["summary"]["pass"], 2, "{report:#}");
}

#[test]
fn a_port_placeholder_needs_a_server_to_start() {
    conformance()
        .args(["server", "--url", "http://127.0.0.1:{port}/mcp"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("only a server the harness starts"));
    conformance()
        .args(["server", "--url", "https://example.com/mcp"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("https is not supported"));
}

const HANDSHAKE_CASE: &str = "\
# The server answers ping in the handshake era.
@requirement PING-01
@level must
@versions handshake

> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}
< {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}
";

const STATELESS_CASE: &str = "\
# The server answers server/discover in the stateless era.
@requirement LIF-11
@level must
@versions stateless

> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{}}
< {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"supportedVersions\":\"{array}\"}}
";

/// Runs the two cases above against the reference server over HTTP with `--protocol-version
/// choice`, and returns the exit code, the console and the JSON report.
fn eras_over_http(choice: &str) -> (Option<i32>, String, serde_json::Value) {
    let dir = TempDir::new(&format!("eras-{choice}"));
    dir.case("ping-handshake", HANDSHAKE_CASE);
    dir.case("discover-stateless", STATELESS_CASE);
    let json = dir.path().join("report.json");
    let exe = assert_cmd::cargo::cargo_bin("conformance");
    let output = conformance()
        .args(["server", "--url", "http://127.0.0.1:{port}/mcp"])
        .args(["--protocol-version", choice, "--cases"])
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .arg("--")
        .arg(&exe)
        .args(["reference-server", "--http", "127.0.0.1:{port}"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let report =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("a report")).expect("JSON");
    (output.status.code(), stdout, report)
}

/// The versions each case ran at, as the JSON report says, sorted.
fn ran_at(report: &serde_json::Value) -> Vec<(String, String, String)> {
    let mut runs: Vec<(String, String, String)> = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let text = |key: &str| c[key].as_str().unwrap_or("").to_string();
            (text("id"), text("protocolVersion"), text("outcome"))
        })
        .collect();
    runs.sort();
    runs
}

#[test]
fn auto_runs_each_era_at_its_newest_version_over_http() {
    let (code, stdout, report) = eras_over_http("auto");
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(
        report["targetVersions"],
        serde_json::json!(["2025-11-25", "2026-07-28"]),
        "{report:#}"
    );
    let run = |id: &str, v: &str| (id.to_string(), v.to_string(), "pass".to_string());
    assert_eq!(
        ran_at(&report),
        vec![
            run("server/discover-stateless", "2026-07-28"),
            run("server/ping-handshake", "2025-11-25"),
        ]
    );
    assert!(stdout.contains("at 2026-07-28"), "{stdout}");
}

#[test]
fn all_runs_every_version_both_sides_speak_over_http() {
    let (code, stdout, report) = eras_over_http("all");
    assert_eq!(code, Some(0), "{stdout}");
    let run = |id: &str, v: &str| (id.to_string(), v.to_string(), "pass".to_string());
    // 2024-11-05's HTTP transport is HTTP+SSE: the reference offers 2025-11-25 instead.
    assert_eq!(
        ran_at(&report),
        vec![
            run("server/discover-stateless", "2026-07-28"),
            run("server/ping-handshake", "2025-03-26"),
            run("server/ping-handshake", "2025-06-18"),
            run("server/ping-handshake", "2025-11-25"),
        ]
    );
    assert!(
        report["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .all(|c| c["era"]
                == if c["protocolVersion"] == "2026-07-28" {
                    "stateless"
                } else {
                    "handshake"
                }),
        "{report:#}"
    );
}

#[test]
fn an_explicit_version_the_target_does_not_speak_skips_every_case_and_fails() {
    // A stdio server of the handshake era only: it refuses `server/discover` (the probe's id
    // is `versions`) and answers nothing else.
    let refuse = r#"while read -r line; do case "$line" in *server/discover*) echo '{"jsonrpc":"2.0","id":"versions","error":{"code":-32601,"message":"Method not found"}}';; esac; done"#;
    let dir = TempDir::new("unspoken");
    dir.case("discover-stateless", STATELESS_CASE);
    let json = dir.path().join("report.json");
    let output = conformance()
        .args(["server", "--protocol-version", "2026-07-28", "--cases"])
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .args(["--", "sh", "-c", refuse])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("nothing was verified at 2026-07-28: the target does not speak it (server/discover at 2026-07-28 was refused with error"),
        "{stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("a report")).expect("JSON");
    assert_eq!(report["summary"]["skip"], 1, "{report:#}");
    let message = report["cases"][0]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("does not speak 2026-07-28") && message.contains("-32601"),
        "{message}"
    );
}

#[test]
fn a_client_run_over_both_transports_says_so_and_runs_each_case_at_its_versions() {
    let dir = TempDir::new("client");
    let json = dir.path().join("report.json");
    // An adapter that exits at once: it never reaches the server, fast.
    let output = conformance()
        .args(["client", "client-shutdown-sequence", "--json"])
        .arg(&json)
        .args(["--", "sh", "-c", "exit 0"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("(protocol auto: 2025-11-25, over stdio and http)"),
        "{stdout}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("a report")).expect("JSON");
    assert_eq!(report["transport"], "stdio+http", "{report:#}");
    assert_eq!(
        report["cases"][1]["id"],
        "client/client-shutdown-sequence@http"
    );
    assert_eq!(report["cases"][1]["protocolVersion"], "2025-11-25");
    // Over stdio it fails; HTTP, which the run did not name, was tried once: a client that
    // never connects there does not speak it, and its HTTP cases are skipped with one reason.
    assert_eq!(report["cases"][0]["outcome"], "fail", "{report:#}");
    assert_eq!(report["cases"][1]["outcome"], "skip", "{report:#}");
    assert!(
        report["cases"][1]["skipReason"]
            .as_str()
            .is_some_and(|r| r.contains("does not seem to speak Streamable HTTP")),
        "{report:#}"
    );

    // `all`: a result per version the case covers (HTTP has none at 2024-11-05: skipped).
    let output = conformance()
        .args(["client", "client-shutdown-sequence", "--transport", "http"])
        .args(["--protocol-version", "all", "--json"])
        .arg(&json)
        .args(["--", "sh", "-c", "exit 0"])
        .output()
        .expect("runs");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("a report")).expect("JSON");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(report["transport"], "http");
    let versions: Vec<&str> = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["protocolVersion"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        versions,
        ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
    );
    assert_eq!(report["cases"][0]["outcome"], "skip");

    // Named, HTTP is required: the same client fails there.
    assert_eq!(report["cases"][1]["outcome"], "fail", "{report:#}");

    // A version no case covers: every case is skipped, and nothing was verified.
    conformance()
        .args(["client", "client-shutdown-sequence", "--protocol-version"])
        .args(["2026-07-28", "--", "sh", "-c", "exit 0"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("every case was skipped"));
}

#[test]
fn dumps_keep_a_transcript_per_version() {
    let temp = TempDir::new("dump-versions");
    let dir = temp.path().join("dumps");
    conformance()
        .args([
            "server",
            "cancel-unknown-id",
            "--protocol-version",
            "all",
            "--dump",
        ])
        .arg(&dir)
        .assert()
        .success();
    for version in ["2024-11-05", "2025-11-25", "2026-07-28"] {
        let path = dir.join(format!("server/cancel-unknown-id@{version}.mcpt"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(text.contains("cancel-unknown-id"), "{text}");
    }
    // One version: the plain name, as before.
    let one = temp.path().join("one");
    conformance()
        .args(["server", "cancel-unknown-id", "--dump"])
        .arg(&one)
        .assert()
        .success();
    assert!(one.join("server/cancel-unknown-id.mcpt").exists());
}

#[test]
fn a_client_that_declines_a_case_gets_it_skipped_with_its_words() {
    let dir = TempDir::new("decline");
    let json = dir.path().join("report.json");
    let adapter = r#"echo '{"decline": "this client speaks no MCP yet"}'"#;
    let output = conformance()
        .args(["client", "client-shutdown-sequence", "--json"])
        .arg(&json)
        .args(["--", "sh", "-c", adapter])
        .output()
        .expect("runs");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("a report")).expect("JSON");
    let cases = report["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2, "{report:#}");
    for case in cases {
        assert_eq!(case["outcome"], "skip", "{report:#}");
        assert_eq!(
            case["skipReason"], "the client declined: this client speaks no MCP yet",
            "{report:#}"
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("2 the client declined: this client speaks no MCP yet"),
        "{stdout}"
    );
    assert!(stdout.contains("0 failed"), "{stdout}");
}
