//! `conformance record` over stdio: what the client sees is what it sees without the recorder
//! (stdout, stderr, exit code, signals), the trace holds every line with its direction, a
//! crash of either side leaves a trace that reads, and secrets never reach it.

#![allow(unsafe_code)] // libc: signals the recorders it starts

#[path = "support/cli.rs"]
pub mod cli;
#[path = "support/record.rs"]
pub mod record;

use cli::TempDir;
use conformance::trace::{Event, Party, Transport, REDACTED};
use record::{events, messages, reference, start, summary, trace_in, wait, Client, CONFORMANCE};
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const SESSION: [&str; 5] = [
    INITIALIZE,
    INITIALIZED,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    r#"{"jsonrpc":"2.0","id":"three","method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method"}"#,
];

/// Plays [`SESSION`] against the reference server, directly or through the recorder.
fn reference_session(
    dir: Option<&std::path::Path>,
) -> (Vec<u8>, Vec<u8>, std::process::ExitStatus) {
    let mut client = Client::new(start(&reference(), dir, &["--quiet"]));
    for line in SESSION {
        client.say(line);
    }
    client.finish()
}

#[test]
fn the_client_sees_the_same_bytes_and_the_trace_holds_every_line() {
    let (out, err, status) = reference_session(None);
    let dir = TempDir::new("same-bytes");
    let (rec_out, rec_err, rec_status) = reference_session(Some(dir.path()));
    assert_eq!(
        String::from_utf8_lossy(&rec_out),
        String::from_utf8_lossy(&out)
    );
    assert_eq!(
        String::from_utf8_lossy(&rec_err),
        String::from_utf8_lossy(&err)
    );
    assert_eq!(rec_status.code(), status.code());

    let trace = trace_in(dir.path());
    assert_eq!(trace.header.transport, Transport::Stdio);
    let argv: Vec<String> = reference().iter().map(ToString::to_string).collect();
    assert_eq!(trace.header.server.argv, Some(argv));
    assert_eq!(messages(&trace, Party::Client), SESSION);
    let answers: String = messages(&trace, Party::Server)
        .iter()
        .map(|m| format!("{m}\n"))
        .collect();
    assert_eq!(answers.as_bytes(), &rec_out[..]);
    let tail: Vec<Event> = events(&trace).into_iter().rev().take(3).collect();
    assert_eq!(
        tail,
        [
            Event::Exit {
                code: status.code(),
                signal: None
            },
            Event::Closed {
                from: Party::Server
            },
            Event::Closed {
                from: Party::Client
            },
        ],
        "the trace ends with both closes and the exit"
    );
    let stamps: Vec<Duration> = trace.events.iter().map(|s| s.at).collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");
}

#[test]
fn the_server_sees_the_same_argv_environment_and_working_folder() {
    let script = r#"echo "$0 $*"; pwd; env | sort"#;
    let argv = ["sh", "-c", script, "name", "a b", "--c"];
    let (direct, _, _) = Client::new(start(&argv, None, &[])).finish();
    let dir = TempDir::new("unchanged");
    let (recorded, _, status) = Client::new(start(&argv, Some(dir.path()), &["--quiet"])).finish();
    assert!(status.success());
    assert_eq!(
        String::from_utf8_lossy(&recorded),
        String::from_utf8_lossy(&direct)
    );
    assert!(String::from_utf8_lossy(&direct).starts_with("name a b --c\n"));
}

#[test]
fn stdout_stderr_a_last_line_without_newline_and_the_exit_code_pass_through() {
    let dir = TempDir::new("exit-code");
    let script = "echo out; echo err >&2; printf 'no newline' >&2; printf partial; exit 3";
    let child = start(&["sh", "-c", script], Some(dir.path()), &["--quiet"]);
    let (out, err, status) = Client::new(child).finish();
    assert_eq!(String::from_utf8_lossy(&out), "out\npartial");
    assert_eq!(String::from_utf8_lossy(&err), "err\nno newline");
    assert_eq!(status.code(), Some(3));
    let trace = trace_in(dir.path());
    assert_eq!(messages(&trace, Party::Server), ["out", "partial"]);
    let stderr: Vec<Event> = events(&trace)
        .into_iter()
        .filter(|e| matches!(e, Event::Stderr { .. }))
        .collect();
    assert_eq!(
        stderr,
        [
            Event::Stderr { text: "err".into() },
            Event::Stderr {
                text: "no newline".into()
            }
        ]
    );
    assert!(events(&trace).contains(&Event::Exit {
        code: Some(3),
        signal: None
    }));
}

/// Starts `script` through the recorder and reads its first line (`ready`): by then the
/// recorder passes signals on.
fn ready(script: &str, dir: &TempDir) -> Client {
    let mut client = Client::new(start(&["sh", "-c", script], Some(dir.path()), &["--quiet"]));
    assert_eq!(client.line(), "ready\n");
    client
}

fn sigterm(client: &Client) {
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    unsafe { libc::kill(client.child.id() as i32, libc::SIGTERM) };
}

#[test]
fn a_signal_is_passed_on_and_the_recorder_ends_as_the_server_did() {
    let dir = TempDir::new("signal");
    let client = ready("echo ready; exec sleep 30", &dir);
    sigterm(&client);
    let (_, _, status) = client.finish();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    let trace = trace_in(dir.path());
    let all = events(&trace);
    assert!(
        all.contains(&Event::Exit {
            code: None,
            signal: Some(libc::SIGTERM)
        }),
        "{all:?}"
    );
    assert!(
        all.iter()
            .any(|e| matches!(e, Event::Note { text } if text.contains("SIGTERM"))),
        "{all:?}"
    );
}

#[test]
fn a_server_that_handles_the_signal_answers_and_its_exit_code_passes() {
    let dir = TempDir::new("trap");
    let client = ready(
        "trap 'echo bye; exit 7' TERM; echo ready; while :; do sleep 0.05; done",
        &dir,
    );
    sigterm(&client);
    let (out, _, status) = client.finish();
    assert_eq!(status.code(), Some(7), "{status:?}");
    assert!(String::from_utf8_lossy(&out).ends_with("bye\n"));
    assert_eq!(
        messages(&trace_in(dir.path()), Party::Server),
        ["ready", "bye"]
    );
}

#[test]
fn a_server_that_crashes_mid_session_leaves_a_complete_trace() {
    let dir = TempDir::new("crash");
    let script = r#"read line; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; kill -9 $$"#;
    let mut client = Client::new(start(&["sh", "-c", script], Some(dir.path()), &["--quiet"]));
    client.say(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    let (_, _, status) = client.finish();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    let trace = trace_in(dir.path());
    assert_eq!(
        messages(&trace, Party::Server),
        [r#"{"jsonrpc":"2.0","id":1,"result":{}}"#]
    );
    assert!(events(&trace).contains(&Event::Exit {
        code: None,
        signal: Some(libc::SIGKILL)
    }));
}

#[test]
fn a_recorder_killed_outright_closes_the_servers_stdin_and_its_trace_reads() {
    let dir = TempDir::new("killed");
    let eof = dir.file("eof");
    let script = format!("echo ready; cat >/dev/null; touch '{}'", eof.display());
    let mut client = ready(&script, &dir);
    client.say(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    client.child.kill().expect("SIGKILL sent");
    let _ = client.child.wait();
    let until = Instant::now() + Duration::from_secs(10);
    while !eof.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(eof.exists(), "the server saw its stdin end");
    drop(client);
    let trace = trace_in(dir.path());
    assert_eq!(messages(&trace, Party::Server), ["ready"]);
}

#[test]
fn redacted_values_never_reach_the_trace_and_pass_unchanged() {
    let dir = TempDir::new("redact");
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"token":"s3cret"}}}"#;
    let child = start(
        &["cat"],
        Some(dir.path()),
        &["--quiet", "--redact", "/params/arguments/token"],
    );
    let mut client = Client::new(child);
    assert_eq!(
        client.say(call),
        format!("{call}\n"),
        "passed through unchanged"
    );
    let (_, _, status) = client.finish();
    assert!(status.success());
    let trace = trace_in(dir.path());
    assert_eq!(trace.header.redacted, ["/params/arguments/token"]);
    let text = std::fs::read_to_string(&trace.path).expect("the trace");
    assert!(!text.contains("s3cret"), "{text}");
    assert_eq!(
        text.matches(REDACTED).count(),
        2,
        "client's and server's copies: {text}"
    );
}

#[test]
fn a_line_that_is_not_utf8_is_recorded_lossily_and_passed_as_is() {
    let dir = TempDir::new("lossy");
    let mut child = start(&["cat"], Some(dir.path()), &["--quiet"]);
    child
        .stdin
        .as_mut()
        .expect("piped")
        .write_all(b"\xff{}\n")
        .expect("written");
    let (out, _, _) = Client::new(child).finish();
    assert_eq!(out, b"\xff{}\n");
    let lossy: Vec<bool> = events(&trace_in(dir.path()))
        .into_iter()
        .filter_map(|e| match e {
            Event::Message { lossy, .. } => Some(lossy),
            _ => None,
        })
        .collect();
    assert_eq!(lossy, [true, true]);
}

#[test]
fn by_default_one_line_on_stderr_says_where_the_trace_goes() {
    let dir = TempDir::new("loud");
    let mut cmd = std::process::Command::new(CONFORMANCE);
    cmd.args(["record", "-o"])
        .arg(dir.path())
        .args(["--", "sh", "-c", "echo hi >&2"]);
    let out = cmd.output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let trace = trace_in(dir.path());
    assert_eq!(
        err,
        format!(
            "conformance record: recording to {}\nhi\n",
            trace.path.display()
        )
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_server_that_cannot_start_exits_127_with_a_note_in_the_trace() {
    let dir = TempDir::new("missing");
    let mut child = start(&["/no/such/server"], Some(dir.path()), &["--quiet"]);
    let status = wait(&mut child, Duration::from_secs(20)).expect("ends");
    assert_eq!(status.code(), Some(127));
    let all = events(&trace_in(dir.path()));
    assert!(
        matches!(&all[..], [Event::Note { text }] if text.contains("/no/such/server")),
        "{all:?}"
    );
}

#[test]
fn usage_errors_name_what_to_write() {
    let out = cli::conformance()
        .args(["record", "-o", "x", "--redact", "token", "--", "true"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--redact token: give a JSON pointer"));
    let out = cli::conformance()
        .args([
            "record",
            "-o",
            "x",
            "--listen",
            "127.0.0.1:0",
            "--to",
            "http://127.0.0.1:1/mcp",
            "--",
            "true",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not both"));
    let out = cli::conformance()
        .args([
            "record",
            "-o",
            "x",
            "--redact",
            "header:x-key",
            "--",
            "true",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("over stdio there are no headers"));
    let out = cli::conformance()
        .args(["record", "-o", "x"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("after `--`"));
}

/// Not a check: measures what the recorder adds to a round trip (`ping` to the reference
/// server, one at a time). Run with `cargo test --test record -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check: prints the recorder's latency"]
fn measure_the_latency_the_recorder_adds() {
    const ROUNDS: usize = 2000;
    let dir = TempDir::new("latency");
    for recorded in [false, true] {
        let mut client = Client::new(start(
            &reference(),
            recorded.then(|| dir.path()),
            &["--quiet"],
        ));
        client.say(INITIALIZE);
        client.say(INITIALIZED);
        let times: Vec<Duration> = (0..ROUNDS)
            .map(|i| {
                let began = Instant::now();
                client.say(&format!(
                    r#"{{"jsonrpc":"2.0","id":{},"method":"ping"}}"#,
                    i + 10
                ));
                began.elapsed()
            })
            .collect();
        let what = if recorded {
            "stdio through the recorder"
        } else {
            "stdio direct"
        };
        println!("{}", summary(what, times));
        client.finish();
    }
}
