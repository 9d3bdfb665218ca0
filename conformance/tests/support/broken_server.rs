//! The deliberately broken servers of the broken tables: each mode of a small stdio server
//! breaks exactly one rule (mode `correct` breaks none). A table's test binary serves a mode
//! when its environment names one; `from_trace` serves them too, to replay drafted cases.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// What one long-running call knows about itself.
#[derive(Default)]
struct CallState {
    cancelled: bool,
    done: bool,
}

#[derive(Default)]
struct Call {
    state: Mutex<CallState>,
    wake: Condvar,
}

struct Server {
    mode: String,
    out: Mutex<std::io::Stdout>,
    calls: Mutex<HashMap<String, Arc<Call>>>,
    witnessed: Mutex<Vec<Value>>,
    /// Results of finished calls not yet written (`late-results`).
    deferred: Mutex<Vec<(Value, Value)>>,
    /// The client speaks 2026-07-28.
    stateless: std::sync::atomic::AtomicBool,
}

fn key(id: &Value) -> String {
    id.to_string()
}

impl Server {
    fn is(&self, mode: &str) -> bool {
        self.mode == mode
    }

    fn write(&self, message: &Value) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{message}");
        let _ = out.flush();
    }

    /// Pings to the harness, a thousand per batch (ids `p-0` …), which the server never
    /// waits for: a target may ping whenever it likes.
    fn pings(&self, batches: std::ops::Range<u64>) {
        for batch in batches {
            let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
            for n in 0..1000 {
                let id = batch * 1000 + n;
                let _ = writeln!(
                    out,
                    "{{\"jsonrpc\":\"2.0\",\"id\":\"p-{id}\",\"method\":\"ping\"}}"
                );
            }
            let _ = out.flush();
        }
    }

    /// Every response goes through here, so the modes that garble responses garble all.
    fn reply(&self, id: &Value, body: Value, tool_call: bool) {
        let id = match id {
            Value::Number(n) if self.is("string-ids") => Value::String(n.to_string()),
            other => other.clone(),
        };
        let mut message = json!({"jsonrpc": "2.0", "id": id});
        let object = message.as_object_mut().expect("an object");
        for (k, v) in body.as_object().cloned().unwrap_or_default() {
            object.insert(k, v);
        }
        // Tool calls and pings (their result is empty) are answered twice.
        let duplicable = tool_call || body.get("result") == Some(&json!({}));
        let copies = if duplicable && self.is("duplicate-response") {
            2
        } else {
            1
        };
        for _ in 0..copies {
            if self.is("non-json-stdout") {
                let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
                let _ = writeln!(out, "INFO handling request {id}");
                let _ = out.flush();
            }
            self.write(&message);
        }
    }

    fn result(&self, id: &Value, mut result: Value, tool_call: bool) {
        // In the stateless era every result says it is complete (RPC-14), unless the
        // mode forgets it.
        if self.stateless.load(std::sync::atomic::Ordering::SeqCst) && !self.is("no-result-type") {
            if let Some(object) = result.as_object_mut() {
                object.insert("resultType".into(), json!("complete"));
            }
        }
        self.reply(id, json!({"result": result}), tool_call);
    }

    fn error(&self, id: &Value, code: i64, message: &str) {
        self.reply(
            id,
            json!({"error": {"code": code, "message": message}}),
            false,
        );
    }

    fn progress(&self, token: &Value, progress: u64) {
        self.write(&json!({
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": progress}
        }));
    }

    fn handle(self: &Arc<Self>, line: &str) {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            if !self.is("silent-on-parse-error") {
                self.error(&Value::Null, -32700, "Parse error");
            }
            return;
        };
        let method = value.get("method").and_then(Value::as_str);
        // A stamped request or server/discover: the client speaks 2026-07-28.
        if method == Some("server/discover")
            || value
                .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
                .is_some()
        {
            self.stateless
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let id = value
            .get("id")
            .filter(|id| id.is_string() || id.is_number());
        match (method, id) {
            (Some(method), None) if value.get("id").is_none() => self.notification(method, &value),
            (Some(method), Some(id)) => self.request(method, id, &value),
            (None, _) if value.get("result").is_some() || value.get("error").is_some() => {}
            _ => self.error(&Value::Null, -32600, "Invalid Request"),
        }
    }

    fn notification(&self, method: &str, value: &Value) {
        if method != "notifications/cancelled" {
            return;
        }
        if self.is("crashes-on-cancel") {
            eprintln!("crashing on a cancel");
            std::process::exit(3);
        }
        if self.is("ignores-cancels") {
            return;
        }
        let Some(id) = value.pointer("/params/requestId") else {
            return;
        };
        let call = self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key(id))
            .cloned();
        if let Some(call) = call {
            let mut state = call.state.lock().unwrap_or_else(|e| e.into_inner());
            if !state.done {
                state.cancelled = true;
                call.wake.notify_all();
            }
        }
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one arm per broken mode, read as a table"
    )]
    fn request(self: &Arc<Self>, method: &str, id: &Value, value: &Value) {
        if self.is("garbage-flood") && method != "initialize" {
            // Opens properly, then floods stdout with what is not JSON.
            let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
            while writeln!(out, "garbage").and_then(|()| out.flush()).is_ok() {}
            std::process::exit(0);
        }
        let params = value.get("params").cloned().unwrap_or(Value::Null);
        match method {
            "initialize" => {
                let asked = params
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let version = if VERSIONS.contains(&asked) {
                    asked
                } else {
                    VERSIONS[VERSIONS.len() - 1]
                };
                if self.is("floods-pings") {
                    // The first 10,000 go out before the answer, so the harness reads past
                    // its transcript's bounds however fast the case is over.
                    self.pings(0..10);
                }
                self.result(
                    id,
                    json!({
                        "protocolVersion": version,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "broken", "version": "0"}
                    }),
                    false,
                );
                if self.is("chatty") {
                    // Correct, if talkative: log notifications are allowed at any time.
                    for n in 0..20_000 {
                        self.write(&json!({"jsonrpc": "2.0", "method": "notifications/message",
                            "params": {"level": "debug", "data": format!("log line {n}")}}));
                    }
                }
                if self.is("floods-pings") {
                    // The other 50,000 from a thread of their own, while the server goes
                    // on reading and serving (it ignores the answers).
                    let server = self.clone();
                    std::thread::spawn(move || server.pings(10..60));
                }
                if self.is("floods-unknown-responses") {
                    // Responses for 30,000 ids the harness never used.
                    let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
                    for n in 0..30_000u64 {
                        let _ = writeln!(
                            out,
                            "{{\"jsonrpc\":\"2.0\",\"id\":\"u-{n}\",\"result\":{{}}}}"
                        );
                    }
                    let _ = out.flush();
                }
                if self.is("floods-unknown-progress") {
                    for n in 0..100_000u64 {
                        self.progress(&json!("ghost"), n);
                    }
                }
            }
            "ping" => {
                self.result(id, json!({}), false);
                // `late-results`: what finished before this ping goes out after its answer.
                let deferred =
                    std::mem::take(&mut *self.deferred.lock().unwrap_or_else(|e| e.into_inner()));
                for (id, body) in deferred {
                    self.result(&id, body, true);
                }
            }
            "server/discover" => {
                let mut versions: Vec<&str> = VERSIONS.to_vec();
                versions.push("2026-07-28");
                self.result(
                    id,
                    json!({"supportedVersions": versions, "capabilities": {"tools": {}}}),
                    false,
                );
            }
            "tools/list" => self.result(id, json!({"tools": []}), false),
            "tools/call" => self.tool(id, &params),
            // A common slip: a generic "internal error" for every unknown method.
            _ if self.is("unknown-method-internal-error") => {
                self.error(id, -32603, "Internal error")
            }
            // The Python SDK 1.x answers a method outside its request union with -32602.
            _ if self.is("unknown-method-invalid-params") => {
                self.error(id, -32602, "Invalid request parameters")
            }
            // Worse: an unknown method is a success.
            _ if self.is("unknown-method-result") => self.result(id, json!({}), false),
            _ => self.error(id, -32601, "Method not found"),
        }
    }

    fn tool(self: &Arc<Self>, id: &Value, params: &Value) {
        if self.is("requests-client") && self.stateless.load(std::sync::atomic::Ordering::SeqCst) {
            // 2026-07-28 servers send no requests (RPC-15).
            self.write(&json!({"jsonrpc": "2.0", "id": "server-asks", "method": "roots/list"}));
        }
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let args = params.get("arguments").cloned().unwrap_or(json!({}));
        let token = params
            .pointer("/_meta/progressToken")
            .filter(|t| t.is_string() || t.is_number())
            .cloned()
            .or_else(|| self.is("progress-without-token").then(|| json!("made-up")));
        let text = |t: &str| json!({"content": [{"type": "text", "text": t}]});
        match name {
            "ping" => self.result(id, text("Server: still available"), true),
            "echo" => match args.get("text").and_then(Value::as_str) {
                Some(t) => self.result(id, text(t), true),
                None => self.error(id, -32602, "echo needs a string `text`"),
            },
            "cancellations" => {
                let listed = self
                    .witnessed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                self.result(id, text(&Value::Array(listed).to_string()), true);
            }
            "work" => self.long(id, token, Long::Work),
            "sleep" => match args.get("ms").and_then(Value::as_u64) {
                Some(ms) => self.long(id, token, Long::Sleep(ms)),
                None => self.error(id, -32602, "sleep needs an integer `ms`"),
            },
            "ticker" => match args.get("interval_ms").and_then(Value::as_u64) {
                Some(ms) if ms >= 1 => self.long(id, token, Long::Ticker(ms)),
                _ => self.error(id, -32602, "ticker needs an integer `interval_ms` >= 1"),
            },
            _ => self.error(id, -32602, "unknown tool"),
        }
    }

    fn long(self: &Arc<Self>, id: &Value, token: Option<Value>, tool: Long) {
        let call = Arc::new(Call::default());
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key(id), call.clone());
        let server = self.clone();
        let id = id.clone();
        std::thread::spawn(move || server.run(&id, token, tool, &call));
    }

    /// A long call on its own thread. Progress and the response are written while the
    /// call's state is locked, so nothing about it is written once a cancel was read.
    fn run(&self, id: &Value, token: Option<Value>, tool: Long, call: &Call) {
        let started = Instant::now();
        let mut state = call.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut ticks: u64 = 0;
        if let (Long::Work, Some(token)) = (&tool, &token) {
            self.progress(token, 0);
        }
        loop {
            if state.cancelled {
                break;
            }
            let wait = match tool {
                Long::Work => Duration::from_secs(3600),
                Long::Sleep(ms) => {
                    let end = Duration::from_millis(ms);
                    match end.checked_sub(started.elapsed()) {
                        Some(left) if !left.is_zero() => left,
                        _ => {
                            state.done = true;
                            self.forget(id);
                            let body = json!({"content": [{"type": "text", "text": "slept"}]});
                            if self.is("late-results") {
                                // Finished: a cancel read from now on is ignored (CAN-09),
                                // and the result is written after the next ping's answer,
                                // as a server whose writer lags its handlers does under
                                // load.
                                self.deferred
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .push((id.clone(), body));
                            } else {
                                self.result(id, body, true);
                            }
                            return;
                        }
                    }
                }
                Long::Ticker(ms) => {
                    let next = Duration::from_millis(ms * (ticks + 1));
                    match next.checked_sub(started.elapsed()) {
                        Some(left) if !left.is_zero() => left,
                        _ => {
                            ticks += 1;
                            if let Some(token) = &token {
                                let value = if self.is("progress-repeats") {
                                    ticks.div_ceil(2)
                                } else if self.is("progress-decreases") {
                                    1000 - ticks
                                } else {
                                    ticks
                                };
                                self.progress(token, value);
                            }
                            continue;
                        }
                    }
                }
            };
            state = call
                .wake
                .wait_timeout(state, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        // The handler observed its cancellation.
        state.done = true;
        self.forget(id);
        self.witnessed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(id.clone());
        drop(state);
        if self.is("answers-after-cancel") {
            self.error(id, -32800, "Request cancelled");
        } else if self.is("answers-after-cancel-slowly") {
            // Cleanup first, then the error: it lands after the barrier's answer.
            std::thread::sleep(Duration::from_millis(30));
            self.error(id, -32800, "Request cancelled");
        }
    }

    fn forget(&self, id: &Value) {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key(id));
    }
}

/// Adds a pid to the pid file, for the trial to check it is gone afterwards.
fn append_pid(pid: u32) {
    if let Some(file) = std::env::var_os("BROKEN_PID_FILE") {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(file)
            .expect("pid file is writable");
        let _ = writeln!(f, "\n{pid}");
    }
}

/// Leaves a daemon behind the way daemons are made: fork, setsid, fork again, stdio to
/// /dev/null. It is in a process group and session of its own. Returns once the daemon has
/// written its pid to the pid file.
fn daemonize() {
    // SAFETY: the process is single-threaded here (nothing else has started yet); the
    // children only call async-signal-safe functions before sleeping or exiting.
    unsafe {
        let mut ready = [0i32; 2];
        assert_eq!(libc::pipe(ready.as_mut_ptr()), 0, "a pipe");
        match libc::fork() {
            0 => {
                libc::setsid();
                match libc::fork() {
                    0 => {
                        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                        for fd in 0..3 {
                            libc::dup2(null, fd);
                        }
                        append_pid(std::process::id());
                        libc::write(ready[1], [1u8].as_ptr().cast(), 1);
                        libc::close(ready[1]);
                        libc::sleep(30);
                        libc::_exit(0);
                    }
                    _ => libc::_exit(0),
                }
            }
            child if child > 0 => {
                let mut status = 0;
                libc::waitpid(child, &mut status, 0);
                libc::close(ready[1]);
                let mut byte = [0u8; 1];
                libc::read(ready[0], byte.as_mut_ptr().cast(), 1);
                libc::close(ready[0]);
            }
            _ => panic!("fork failed"),
        }
    }
}

enum Long {
    Work,
    Sleep(u64),
    Ticker(u64),
}

/// Serves MCP on stdio as `mode` until stdin ends.
#[allow(
    clippy::too_many_lines,
    reason = "one arm per broken mode, read as a table"
)]
pub fn serve(mode: &str) -> ! {
    let mut pids = vec![std::process::id()];
    if mode == "spawns-child" {
        // Left running on purpose: the harness must kill it with the process group.
        #[allow(clippy::zombie_processes)]
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep starts");
        pids.push(child.id());
    }
    if mode == "floods-stderr" {
        // 100 MiB of log lines while serving correctly: stderr is for logging.
        std::thread::spawn(|| {
            let line = format!("{}\n", "log ".repeat(256));
            let mut err = std::io::stderr().lock();
            for _ in 0..(100 << 20) / line.len() {
                if err.write_all(line.as_bytes()).is_err() {
                    break;
                }
            }
        });
    }
    if let Some(file) = std::env::var_os("BROKEN_PID_FILE") {
        let text: Vec<String> = pids.iter().map(u32::to_string).collect();
        std::fs::write(file, text.join("\n")).expect("pid file is writable");
    }
    if mode == "exits-at-once" {
        std::process::exit(0);
    }
    if mode == "exits-leaving-child" {
        // The child inherits stdout and keeps it open after this process has gone.
        #[allow(clippy::zombie_processes)]
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep starts");
        append_pid(child.id());
        std::process::exit(0);
    }
    if mode == "half-line" {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(br#"{"jsonrpc":"2.0","#);
        let _ = out.flush();
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    if mode == "floods-pings-unread" {
        // Requests to the harness, without ever reading what it answers.
        let mut out = std::io::stdout().lock();
        for n in 0u64.. {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":\"p-{n}\",\"method\":\"ping\"}}\n");
            if out
                .write_all(line.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                std::process::exit(0);
            }
        }
    }
    if mode == "chatty-never-initializes" || mode == "floods-never-initializes" {
        // Reads everything, answers nothing, and talks: a log line every 10 ms, or as
        // fast as it can, in batches.
        std::thread::spawn(|| for _ in std::io::stdin().lock().lines() {});
        let line = |n: u64| {
            format!("{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"debug\",\"data\":\"log {n}\"}}}}\n")
        };
        let batch = if mode == "chatty-never-initializes" {
            1
        } else {
            1000
        };
        let mut out = std::io::stdout().lock();
        for n in 0u64.. {
            let text: String = (0..batch).map(|k| line(n * batch + k)).collect();
            if out
                .write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                std::process::exit(0);
            }
            if batch == 1 {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    if mode == "daemonizes" {
        daemonize();
    }
    let server = Arc::new(Server {
        mode: mode.to_string(),
        out: Mutex::new(std::io::stdout()),
        calls: Mutex::new(HashMap::new()),
        witnessed: Mutex::new(vec![]),
        deferred: Mutex::new(vec![]),
        stateless: std::sync::atomic::AtomicBool::new(false),
    });
    if mode == "floods-stdout-line" {
        // One line of 100 MiB before anything else.
        let chunk = vec![b'x'; 1 << 20];
        let mut out = std::io::stdout().lock();
        for _ in 0..100 {
            if out.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    while let Some(Ok(line)) = lines.next() {
        if mode == "never-answers" {
            continue;
        }
        server.handle(&line);
    }
    if mode == "exits-late-by-its-timer" {
        // Drains for longer than the case allows, however idle the machine: a sleep, not
        // work, so no wait for a CPU explains it.
        std::thread::sleep(Duration::from_millis(5300));
    }
    if mode == "no-exit-on-eof" || mode == "never-answers" {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    std::process::exit(0)
}
