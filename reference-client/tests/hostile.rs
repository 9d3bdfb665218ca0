//! Hostile servers: the client must end within its bounds and leave no process behind,
//! whatever the server does — stop reading, leave a grandchild holding its stdout, stop
//! answering, get stopped with SIGSTOP, or spew garbage.
//!
//! Each server is this test binary re-run with `--hostile MODE --pids FILE`; it writes the
//! pid of every process it starts to FILE, so each test can check they are all gone.

#![allow(unsafe_code)] // libc: signals the servers it starts

use libtest_mimic::{Arguments, Failed, Trial};
use reference_client::{CallError, Client, ClientOptions, RequestOptions};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const HOSTILE_FLAG: &str = "--hostile";
/// Generous bound on anything that should take a fraction of a second.
const BOUND: Duration = Duration::from_secs(10);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(HOSTILE_FLAG) {
        serve(&args[2], Path::new(&args[4]));
        return;
    }
    let trials = vec![
        Trial::test(
            "a server that stops reading is closed within the grace",
            stops_reading,
        ),
        Trial::test(
            "a grandchild holding stdout is stopped with its server",
            grandchild,
        ),
        Trial::test(
            "a server that exits under a grandchild ends pending calls",
            grandchild_exits,
        ),
        Trial::test(
            "a server that stops answering times out and the cookbook says why",
            silent,
        ),
        Trial::test(
            "a stopped server is cancelled, then ended within bounds",
            stopped,
        ),
        Trial::test("a garbage-spewing server costs a few log lines", garbage),
        Trial::test(
            "what waits for a server that does not read is bounded",
            queue_bounded,
        ),
    ];
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}

// ---- the hostile servers -------------------------------------------------------------

fn record_pid(pids: &Path, pid: u32) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(pids)
        .expect("pid file");
    writeln!(file, "{pid}").expect("write pid");
}

fn say(message: Value) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{message}").expect("stdout");
    out.flush().expect("flush");
}

fn next_request(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> Option<Value> {
    lines.find_map(|line| serde_json::from_str::<Value>(&line.ok()?).ok())
}

fn serve(mode: &str, pids: &Path) {
    record_pid(pids, std::process::id());
    if mode == "hold" {
        // The grandchild: holds the inherited stdout open and does nothing.
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    if mode.starts_with("grandchild") {
        let me = std::env::current_exe().expect("own path");
        let child = std::process::Command::new(me)
            .args([HOSTILE_FLAG, "hold", "--pids"])
            .arg(pids)
            .stdin(std::process::Stdio::null())
            .spawn()
            .expect("spawn the grandchild");
        record_pid(pids, child.id());
        // Never waited for: it is meant to outlive this process.
        std::mem::forget(child);
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    // A handshake-era server: anything before initialize (the client's server/discover
    // probe) is an unknown method.
    let init = loop {
        let request = next_request(&mut lines).expect("initialize");
        if request["method"] == "initialize" {
            break request;
        }
        say(json!({"jsonrpc": "2.0", "id": request["id"],
            "error": {"code": -32601, "message": "unknown method"}}));
    };
    say(json!({"jsonrpc": "2.0", "id": init["id"], "result": {
        "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": mode, "version": "0"}}}));
    match mode {
        "stops-reading" => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        "silent" => for _ in lines {},
        "garbage" => {
            let mut out = std::io::stdout().lock();
            for i in 0..20_000 {
                let junk: &[u8] = match i % 4 {
                    0 => b"this is not json\n",
                    1 => b"\xff\xfe not utf-8\n",
                    2 => b"[1, 2, 3]\n",
                    _ => b"{\"jsonrpc\": \"1.0\"}\n",
                };
                out.write_all(junk).expect("stdout");
            }
            out.flush().expect("flush");
            drop(out);
            fixture(lines, false);
        }
        "grandchild" => fixture(lines, false),
        "grandchild-exits" => fixture(lines, true),
        other => panic!("unknown hostile mode {other}"),
    }
}

/// Serves `work` (progress "Started", then no answer), the `ping` tool and `ping`; with
/// `exit_on_call`, exits at the first tool call instead.
fn fixture(mut lines: impl Iterator<Item = std::io::Result<String>>, exit_on_call: bool) {
    while let Some(message) = next_request(&mut lines) {
        let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
            continue;
        };
        match (method, message["params"]["name"].as_str()) {
            ("tools/call", _) if exit_on_call => std::process::exit(0),
            ("tools/call", Some("work")) => {
                if let Some(token) = message["params"]["_meta"].get("progressToken") {
                    say(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": 0, "message": "Started"}}));
                }
            }
            ("tools/call", Some("ping")) => say(json!({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": "Server: still available"}]}})),
            ("ping", _) => say(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
            _ => say(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "not here"}})),
        }
    }
}

// ---- helpers -------------------------------------------------------------------------

struct PidFile(PathBuf);

impl PidFile {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "reference-client-hostile-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        Self(path)
    }

    fn argv(&self, mode: &str) -> Vec<OsString> {
        let me = std::env::current_exe().expect("own path");
        vec![
            me.into(),
            HOSTILE_FLAG.into(),
            mode.into(),
            "--pids".into(),
            self.0.clone().into(),
        ]
    }

    /// The recorded pids, in order of first record (a grandchild records itself too).
    fn pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = vec![];
        let text = std::fs::read_to_string(&self.0).unwrap_or_default();
        for pid in text.lines().filter_map(|l| l.parse().ok()) {
            if !pids.contains(&pid) {
                pids.push(pid);
            }
        }
        pids
    }

    /// Fails unless every recorded process is gone (or a zombie awaiting its reaper)
    /// within [`BOUND`].
    fn assert_all_gone(&self, expected: usize) -> Result<(), Failed> {
        let pids = self.pids();
        if pids.len() != expected {
            return Err(format!("expected {expected} recorded pids, got {pids:?}").into());
        }
        let start = Instant::now();
        while let Some(pid) = pids.iter().find(|&&pid| running(pid)) {
            if start.elapsed() > BOUND {
                // Do not leave it behind either.
                // SAFETY: kill(2) only sends a signal.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
                return Err(format!("process {pid} outlived the client").into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Whether `pid` is a live (not zombie) process.
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn quick_grace() -> ClientOptions {
    ClientOptions {
        shutdown_grace: Duration::from_millis(300),
        ..ClientOptions::default()
    }
}

async fn bounded<T>(what: &str, future: impl std::future::Future<Output = T>) -> Result<T, Failed> {
    tokio::time::timeout(BOUND, future)
        .await
        .map_err(|_| format!("{what} did not end within {BOUND:?}").into())
}

fn cookbook(argv: &[OsString], extra: &[&str]) -> assert_cmd::assert::Assert {
    let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_reference-client"));
    cmd.args(extra).arg("--").args(argv).timeout(BOUND * 3);
    cmd.assert()
}

// ---- the trials ----------------------------------------------------------------------

fn stops_reading() -> Result<(), Failed> {
    let pids = PidFile::new("stops-reading");
    runtime().block_on(async {
        let client = Client::spawn(&pids.argv("stops-reading"), quick_grace()).await?;
        // Far more than a pipe holds, to a server that no longer reads.
        let big = "x".repeat(8 * 1024 * 1024);
        let options = RequestOptions::default().timeout(Duration::from_millis(200));
        let outcome = client
            .call_tool("echo", json!({"text": big}), options)
            .await;
        if !matches!(outcome, Err(CallError::TimedOut(_))) {
            return Err(format!("expected a timeout, got {outcome:?}").into());
        }
        let start = Instant::now();
        let status = bounded("close", client.close()).await??;
        let status = status.ok_or("no exit status")?;
        if status.signal() != Some(libc::SIGTERM) {
            return Err(format!("expected the SIGTERM step to end it, got {status}").into());
        }
        // Grace for stdin, grace for SIGTERM: well under the bound.
        if start.elapsed() > Duration::from_secs(3) {
            return Err(format!("close took {:?}", start.elapsed()).into());
        }
        Ok::<_, Failed>(())
    })?;
    pids.assert_all_gone(1)
}

/// Messages for a server that reads nothing wait in a bounded queue: once it is full, sending
/// fails at once (the connection is given up) instead of holding more.
fn queue_bounded() -> Result<(), Failed> {
    use reference_client::transport::stdio::{StdioTransport, QUEUED_MESSAGES};
    use reference_client::transport::{Outgoing, OutgoingKind, Transport};
    runtime().block_on(async {
        // The other end holds its side open and never reads.
        let (ours, _theirs) = tokio::io::duplex(1024);
        let (reader, writer) = tokio::io::split(ours);
        let transport = StdioTransport::new(reader, writer);
        let message = || Outgoing {
            message: json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x"}}),
            kind: OutgoingKind::Notification,
        };
        let mut sent = 0;
        while transport.send(message()).is_ok() {
            sent += 1;
            if sent > 2 * QUEUED_MESSAGES {
                return Err("the queue took twice its bound".into());
            }
            if sent % 1024 == 0 {
                // Lets the writer take what fits in the pipe.
                tokio::task::yield_now().await;
            }
        }
        if sent < QUEUED_MESSAGES {
            return Err(format!("sending failed after {sent} messages").into());
        }
        let start = Instant::now();
        bounded("close", transport.close(Duration::from_millis(200))).await??;
        if start.elapsed() > Duration::from_secs(2) {
            return Err(format!("close took {:?}", start.elapsed()).into());
        }
        Ok::<_, Failed>(())
    })
}

fn grandchild() -> Result<(), Failed> {
    let pids = PidFile::new("grandchild");
    runtime().block_on(async {
        let client = Client::spawn(&pids.argv("grandchild"), quick_grace()).await?;
        client.ping().await?;
        let status = bounded("close", client.close()).await??;
        let status = status.ok_or("no exit status")?;
        if !status.success() {
            return Err(format!("the server should exit on stdin close, got {status}").into());
        }
        Ok::<_, Failed>(())
    })?;
    pids.assert_all_gone(2)
}

fn grandchild_exits() -> Result<(), Failed> {
    let pids = PidFile::new("grandchild-exits");
    runtime().block_on(async {
        let client = Client::spawn(&pids.argv("grandchild-exits"), quick_grace()).await?;
        // The default deadline is 60 s: the call must end because the server is gone.
        let outcome = bounded(
            "the pending call",
            client.call_tool("work", json!({}), RequestOptions::default()),
        )
        .await?;
        if !matches!(outcome, Err(CallError::Closed)) {
            return Err(format!("expected Closed, got {outcome:?}").into());
        }
        bounded("close", client.close()).await??;
        Ok::<_, Failed>(())
    })?;
    pids.assert_all_gone(2)
}

fn silent() -> Result<(), Failed> {
    let pids = PidFile::new("silent");
    let output = cookbook(&pids.argv("silent"), &["--timeout-ms", "300"])
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !stdout.is_empty() {
        return Err(format!("nothing should be printed on stdout, got {stdout:?}").into());
    }
    for why in ["neither progress nor an answer", "300ms", "--timeout-ms"] {
        if !stderr.contains(why) {
            return Err(format!("stderr should say {why:?}: {stderr}").into());
        }
    }
    pids.assert_all_gone(1)
}

fn stopped() -> Result<(), Failed> {
    let pids = PidFile::new("stopped");
    runtime().block_on(async {
        let client = Client::spawn(&pids.argv("silent"), quick_grace()).await?;
        let pid = *pids.pids().first().ok_or("no pid recorded")?;
        // SAFETY: kill(2) only sends a signal, to the server this test started.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        let options = RequestOptions::default().timeout(Duration::from_millis(200));
        let outcome = client.request("ping", json!({}), options).await;
        if !matches!(outcome, Err(CallError::TimedOut(_))) {
            return Err(format!("expected a timeout, got {outcome:?}").into());
        }
        let status = bounded("close", client.close()).await??;
        let status = status.ok_or("no exit status")?;
        if !matches!(status.signal(), Some(libc::SIGTERM | libc::SIGKILL)) {
            return Err(format!("a stopped server must be signalled, got {status}").into());
        }
        Ok::<_, Failed>(())
    })?;
    pids.assert_all_gone(1)
}

fn garbage() -> Result<(), Failed> {
    let pids = PidFile::new("garbage");
    let output = cookbook(&pids.argv("garbage"), &[])
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let expected =
        "Client: cancel requested after Started\nClient: call canceled\nServer: still available\n";
    if stdout != expected {
        return Err(format!("stdout {stdout:?}").into());
    }
    // 20,000 bad lines: a few shown, the rest counted.
    let lines = stderr.lines().count();
    if lines > 20 || !stderr.contains("were not shown") {
        return Err(format!("{lines} lines of stderr:\n{stderr}").into());
    }
    pids.assert_all_gone(1)
}
