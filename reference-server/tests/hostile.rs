//! Hostile peers: a client that floods requests and never reads, one that
//! closes stdin while stdout is full, messages nested deeper than the parser
//! goes, ids that cannot be echoed, and more cancellations than the witness
//! keeps. Whatever the peer does, memory stays bounded and the server ends
//! when told to.

#![allow(unsafe_code)] // libc: signals the server it starts

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How long a told-to-stop server may take: the writer gives a stalled
/// stdout one second, the rest is slack for a busy machine.
const PROMPT: Duration = Duration::from_secs(5);

/// Peak RSS allowed for a server that is being flooded (the issue this
/// guards against reached 214 MB).
const RSS_BOUND_KIB: u64 = 64 * 1024;

/// A server whose stdout nobody reads.
struct Deaf {
    child: Child,
}

impl Deaf {
    fn spawn() -> (Self, ChildStdin) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_reference-server"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn reference-server");
        let stdin = child.stdin.take().expect("stdin");
        (Self { child }, stdin)
    }

    fn peak_rss_kib(&self) -> u64 {
        let pid = self.child.id();
        let status =
            std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM")
    }

    fn exits_within(&mut self, within: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < within {
            if self.child.try_wait().expect("try_wait").is_some() {
                return true;
            }
            thread::sleep(Duration::from_millis(10));
        }
        false
    }
}

impl Drop for Deaf {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize_line() -> String {
    let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init_params("2025-11-25")});
    format!("{init}\n")
}

/// An echo request whose answer is about a kilobyte.
fn echo_line(n: usize) -> String {
    let text = "x".repeat(1000);
    let call = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}}});
    format!("{call}\n")
}

/// Writes `count` echo requests from a thread; counts the bytes written.
struct Flood {
    written: Arc<AtomicUsize>,
    finished: Arc<AtomicBool>,
    total: usize,
}

impl Flood {
    fn start(mut stdin: ChildStdin, count: usize) -> Self {
        let written = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicBool::new(false));
        let total = initialize_line().len() + (0..count).map(|n| echo_line(n).len()).sum::<usize>();
        let (w, f) = (Arc::clone(&written), Arc::clone(&finished));
        thread::spawn(move || {
            let mut send = |line: String| {
                stdin.write_all(line.as_bytes())?;
                w.fetch_add(line.len(), Ordering::SeqCst);
                Ok::<_, std::io::Error>(())
            };
            let all = send(initialize_line())
                .and_then(|()| (0..count).try_for_each(|n| send(echo_line(n))));
            if all.is_ok() {
                f.store(true, Ordering::SeqCst);
            }
            // stdin is dropped (closed) here, whether or not it all went through.
        });
        Self {
            written,
            finished,
            total,
        }
    }

    /// Waits until the writer has finished or made no progress for a
    /// while (the server stopped reading); returns whether it finished.
    fn settle(&self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut last = (usize::MAX, Instant::now());
        while Instant::now() < deadline {
            if self.finished.load(Ordering::SeqCst) {
                return true;
            }
            let now = self.written.load(Ordering::SeqCst);
            if now != last.0 {
                last = (now, Instant::now());
            } else if last.1.elapsed() > Duration::from_millis(1500) {
                return false;
            }
            thread::sleep(Duration::from_millis(20));
        }
        panic!("the flood neither finished nor stalled within a minute");
    }
}

#[test]
fn a_client_that_floods_and_never_reads_is_slowed_down_not_buffered() {
    let (mut server, stdin) = Deaf::spawn();
    let flood = Flood::start(stdin, 100_000);
    let finished = flood.settle();
    assert!(
        !finished,
        "the server read all {} bytes of requests although nobody read a single reply",
        flood.total
    );
    let peak = server.peak_rss_kib();
    assert!(
        peak < RSS_BOUND_KIB,
        "peak rss {peak} KiB while flooded (bound {RSS_BOUND_KIB} KiB)"
    );
    // SIGTERM ends it although stdout is full and the flood is still writing.
    let pid = libc::pid_t::try_from(server.child.id()).expect("pid fits");
    // SAFETY: kill(2) on our own live child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert!(
        server.exits_within(PROMPT),
        "no exit after SIGTERM with stdout blocked"
    );
}

#[test]
fn stdin_eof_ends_the_server_while_stdout_is_blocked() {
    let (mut server, stdin) = Deaf::spawn();
    // About 2 MB each way: more than the pipe and the output queue hold,
    // less than the server reads ahead, so the whole flood goes through.
    let flood = Flood::start(stdin, 2_000);
    assert!(
        flood.settle(),
        "the server stopped reading before it saw EOF"
    );
    assert!(
        server.exits_within(PROMPT),
        "no exit after stdin EOF with stdout blocked"
    );
}

#[test]
fn after_eof_a_client_that_reads_late_still_gets_every_reply_in_order() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_reference-server"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn reference-server");
    let stdin = child.stdin.take().expect("stdin");
    let flood = Flood::start(stdin, 2_000);
    assert!(flood.settle());
    let mut ids = Vec::new();
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let reply: Value = serde_json::from_str(&line.expect("line")).expect("json");
        ids.push(reply["id"].clone());
    }
    assert!(child.wait().expect("wait").success());
    let expected: Vec<Value> = std::iter::once(json!("init"))
        .chain((0..2_000).map(|n| json!(n)))
        .collect();
    assert_eq!(ids, expected);
}

#[test]
fn tickers_do_not_grow_the_queue_while_nobody_reads() {
    let (mut server, mut stdin) = Deaf::spawn();
    stdin
        .write_all(initialize_line().as_bytes())
        .expect("write");
    for n in 0..200 {
        let call = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params":
            {"name": "ticker", "arguments": {"interval_ms": 1}, "_meta": {"progressToken": n}}});
        stdin
            .write_all(format!("{call}\n").as_bytes())
            .expect("write");
    }
    // Unbounded, 200 tickers at 1 ms would queue about 16 MB a second.
    thread::sleep(Duration::from_secs(3));
    let peak = server.peak_rss_kib();
    assert!(
        peak < 32 * 1024,
        "peak rss {peak} KiB with 200 unread tickers"
    );
    drop(stdin);
    assert!(server.exits_within(PROMPT));
}

/// A `tools/call` of echo whose arguments nest `depth` levels in all.
fn nested_echo(depth: usize) -> String {
    // request object, params, arguments: three levels before "extra".
    let extra = format!("{}{}", "[".repeat(depth - 3), "]".repeat(depth - 3));
    format!(
        r#"{{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"ok","extra":{extra}}}}}}}"#
    )
}

#[test]
fn nesting_beyond_the_parser_limit_is_named_and_within_it_is_served() {
    let mut server = Server::initialized("2025-11-25");
    server.write_raw(format!("{}\n", nested_echo(127)).as_bytes());
    let reply = server.next();
    assert_eq!(text_of(&reply), "ok", "{reply}");
    server.write_raw(format!("{}\n", nested_echo(128)).as_bytes());
    let reply = server.next();
    assert_eq!(
        (error_code(&reply), reply["id"].clone()),
        (-32700, Value::Null)
    );
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("nests 128 arrays/objects deep"),
        "{message}"
    );
    assert!(message.contains("at most 127"), "{message}");
    // A million levels neither crash nor stall it.
    let abyss = format!("{}\n", "[".repeat(1_000_000));
    server.write_raw(abyss.as_bytes());
    assert_eq!(error_code(&server.next()), -32700);
    assert_eq!(server.barrier(json!("b")), Vec::<Value>::new());
}

#[test]
fn ids_that_cannot_be_echoed_name_the_reason() {
    let mut server = Server::initialized("2025-11-25");
    for (id, reason) in [
        ("-0", "negative zero"),
        ("18446744073709551616", "outside -2^63..2^64-1"),
        ("-9223372036854775809", "outside -2^63..2^64-1"),
        ("1e3", "decimal point or an exponent"),
        ("2.5", "fractional"),
    ] {
        server.write_raw(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).as_bytes());
        server.write_raw(b"\n");
        let reply = server.next();
        assert_eq!(
            (error_code(&reply), reply["id"].clone()),
            (-32600, Value::Null),
            "{id}"
        );
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(reason), "{id}: {message}");
        assert!(
            !message.contains("fractional") || reason == "fractional",
            "{id}: {message}"
        );
        // A cancel naming such an id is ignored silently.
        server.write_raw(
            format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#)
                .as_bytes(),
        );
        server.write_raw(b"\n");
    }
    assert_eq!(server.barrier(json!("b")), Vec::<Value>::new());
}

#[test]
fn the_witness_keeps_the_last_thousand_cancellations() {
    let mut server = Server::initialized("2025-11-25");
    let cancel_round = |server: &mut Server, ids: std::ops::Range<i64>| {
        for id in ids.clone() {
            server.call(json!(id), "work", json!({}));
        }
        for id in ids {
            server.cancel(json!(id));
        }
        server.barrier(json!("b"))
    };
    assert_eq!(cancel_round(&mut server, 0..500), Vec::<Value>::new());
    let first = server.cancellations(json!("w1"));
    assert_eq!(first.as_array().map(Vec::len), Some(500));
    assert_eq!(cancel_round(&mut server, 500..1_500), Vec::<Value>::new());
    let witness = server.cancellations(json!("w2"));
    let mut ids: Vec<i64> = witness
        .as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_i64().expect("integer id"))
        .collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        (500..1_500).collect::<Vec<_>>(),
        "the oldest 500 must be gone"
    );
}

#[test]
fn more_long_calls_than_the_in_flight_bound_are_refused_with_a_tool_error() {
    let mut server = Server::initialized("2025-11-25");
    let mut batch = String::new();
    for id in 0..10_000 {
        batch.push_str(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "work", "arguments": {}}})
            .to_string(),
        );
        batch.push('\n');
    }
    server.write_raw(batch.as_bytes());
    let busy = server.tool(json!("one-more"), "sleep", json!({"ms": 1}));
    assert_eq!(busy["result"]["isError"], true, "{busy}");
    assert!(text_of(&busy).contains("server busy"), "{busy}");
    // Instant tools still answer, and a cancel makes room again.
    assert_eq!(
        text_of(&server.tool(json!("e"), "echo", json!({"text": "hi"}))),
        "hi"
    );
    server.cancel(json!(0));
    let slept = server.tool(json!("again"), "sleep", json!({"ms": 1}));
    assert_eq!(text_of(&slept), "slept");
}
