//! stdin EOF and SIGTERM end the server promptly with exit status 0.

#![allow(unsafe_code)] // libc: signals the server it starts

mod common;

use common::*;
use serde_json::json;
use std::time::{Duration, Instant};

const PROMPT: Duration = Duration::from_secs(5);

fn busy_server() -> Server {
    let mut server = Server::initialized("2025-11-25");
    server.call_with_progress(json!(1), "work", json!({}), json!("p"));
    assert_eq!(server.next()["method"], "notifications/progress");
    server.call(json!(2), "sleep", json!({"ms": 600_000}));
    server.call_with_progress(json!(3), "ticker", json!({"interval_ms": 1000}), json!("t"));
    assert_eq!(server.barrier(json!("b")), Vec::<serde_json::Value>::new());
    server
}

#[test]
fn stdin_eof_while_idle_exits_zero() {
    let mut server = Server::initialized("2025-11-25");
    server.close_stdin();
    assert!(server.wait_exit(PROMPT).success());
}

#[test]
fn stdin_eof_cancels_in_flight_handlers_and_exits_zero() {
    let mut server = busy_server();
    let start = Instant::now();
    server.close_stdin();
    assert!(server.wait_exit(PROMPT).success());
    assert!(start.elapsed() < PROMPT);
    // No response for any cancelled handler was written.
    assert!(server.next_within(Duration::from_millis(1)).is_none());
}

#[test]
fn output_queued_before_eof_is_flushed() {
    let mut server = Server::spawn();
    let mut input = String::new();
    input.push_str(
        &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":init_params("2025-11-25")})
            .to_string(),
    );
    input.push('\n');
    for n in 2..50 {
        input.push_str(&json!({"jsonrpc":"2.0","id":n,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}).to_string());
        input.push('\n');
    }
    server.write_raw(input.as_bytes());
    server.close_stdin();
    for n in 1..50 {
        assert_eq!(server.next()["id"], n);
    }
    assert!(server.wait_exit(PROMPT).success());
}

#[cfg(unix)]
#[test]
fn sigterm_exits_zero_promptly() {
    let mut server = busy_server();
    let pid = libc::pid_t::try_from(server.pid()).expect("pid fits");
    // SAFETY: kill(2) on our own live child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert!(server.wait_exit(PROMPT).success());
}

#[test]
fn stdin_from_a_regular_file_is_served_too() {
    let dir = std::env::temp_dir().join(format!("reference-server-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("input.jsonl");
    let init =
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":init_params("2025-03-26")});
    let echo = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"from a file"}}});
    std::fs::write(&input, format!("{init}\n{echo}\n")).expect("write input");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_reference-server"))
        .stdin(std::fs::File::open(&input).expect("open input"))
        .output()
        .expect("run server");
    std::fs::remove_dir_all(&dir).ok();
    assert!(output.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1]["result"]["content"][0]["text"], "from a file");
}
