//! The harness judged against deliberately broken servers: each mode of a small server breaks
//! exactly one rule, and the harness must give exactly the verdict the spec calls for.
//!
//! This binary is also the server. When `BROKEN_SERVER=<mode>` is set it serves MCP on stdio
//! (synchronous, one thread per long call) and exits; otherwise it runs the trials, each of
//! which starts this same executable with a mode and plays one case against it. Mode `correct`
//! is the fixture profile done right and must pass, so every other verdict is caused by the
//! fault the mode adds. Every row also runs as `loaded/…` with a busy loop on every core: the
//! verdict must be the same on a loaded machine.

#![allow(unsafe_code)] // libc: signals and measures the processes it starts

#[path = "support/self_served.rs"]
pub mod self_served;
#[path = "support/shared_rows.rs"]
mod shared_rows;

use conformance::case::Case;
use conformance::engine::server::Connect;
use conformance::harness;
use conformance::harness::expect::{Expect, On};
use conformance::outcome::Outcome;
use conformance::requirement::Req;
use libtest_mimic::Failed;
use self_served::Target;
use std::path::PathBuf;
use std::time::Duration;

/// The deliberately broken servers.
mod server {
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
            if self.stateless.load(std::sync::atomic::Ordering::SeqCst)
                && !self.is("no-result-type")
            {
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
                (Some(method), None) if value.get("id").is_none() => {
                    self.notification(method, &value)
                }
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
                            self.write(
                                &json!({"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": "debug", "data": format!("log line {n}")}}),
                            );
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
                    let deferred = std::mem::take(
                        &mut *self.deferred.lock().unwrap_or_else(|e| e.into_inner()),
                    );
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
            if self.is("requests-client")
                && self.stateless.load(std::sync::atomic::Ordering::SeqCst)
            {
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
                let line =
                    format!("{{\"jsonrpc\":\"2.0\",\"id\":\"p-{n}\",\"method\":\"ping\"}}\n");
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
}

fn pid_file(mode: &str, case: &str, loaded: bool) -> PathBuf {
    std::env::temp_dir().join(format!(
        "conformance-broken-{}-{}{mode}-{}.pid",
        std::process::id(),
        if loaded { "loaded-" } else { "" },
        case.replace('/', "-")
    ))
}

/// Plays `case` against the server in `mode` and judges the run by `want`, with the pids the
/// server wrote (itself, its children) for `reaped`.
fn check(case: &Case, mode: &str, want: &Expect, loaded: bool) -> Result<(), Failed> {
    let pids = pid_file(
        mode,
        &format!("{}{}", case.id, want.version().unwrap_or("")),
        loaded,
    );
    let env = [("BROKEN_PID_FILE".to_string(), pids.display().to_string())];
    let launch = self_served::this_binary("BROKEN_SERVER", mode, &[], &env)?;
    let options = self_served::options("2025-11-25", Duration::from_millis(500), want);
    let report = self_served::play(case, Target::Stdio(&launch), &options);
    let started: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let _ = std::fs::remove_file(&pids);
    Ok(self_served::judge(
        case, mode, want, &report?, &started, loaded,
    )?)
}

/// A target that fails at once is judged within this (stretched on a busy machine, as the
/// harness stretches its waits).
const FAST: Duration = Duration::from_secs(3);
/// A row's test process (it plays such a row alone, see `own_process_if`) stays far below
/// what a target floods (100 MiB): the harness keeps bounded lines and a bounded stderr log.
/// Alone, each such row peaks at 12–21 MiB.
const PEAK_MIB: u64 = 48;
/// A start may take 15 s, as by default: only a target that has not yet written anything
/// gets it.
const SLOW_START: Duration = Duration::from_secs(15);
/// A reply timeout far longer than the run may take: the wait must end on proof.
const PATIENT: Duration = Duration::from_secs(8);
/// The era where a server MUST NOT send anything more for a cancelled request.
const STATELESS: &str = "2026-07-28";

/// The table: mode, case, what the run must show.
#[rustfmt::skip]
fn table() -> Vec<(&'static str, &'static str, Expect)> {
    use Outcome::{Info, Pass};
    type E = Expect;
    let secs = Duration::from_secs;
    let mut rows = vec![];
    // The mini server is sound: every case passes (info cases are recorded).
    for case in [
        "cancel-after-progress", "cancel-by-deadline", "cancel-request-id-fidelity",
        "cancel-unknown-id", "concurrent-cancel-isolation", "late-cancel-after-completion",
        "late-cancel-sweep",
        "malformed-input", "no-progress-without-token", "no-response-after-cancel",
        "notifications-never-answered", "ping-during-long-call", "progress-after-completion",
        "progress-monotonic", "progress-token-echoed", "server-alive-after-cancel",
        "shutdown-on-stdin-close", "stdio-framing", "unknown-method", "unknown-method-code",
    ] {
        rows.push(("correct", case, E::outcome(Pass)));
    }
    rows.extend([
        ("correct",                     "cancel-id-type-mismatch",     E::outcome(Info)),
        ("correct",                     "cancel-initialize-ignored",   E::outcome(Info)),
        ("answers-after-cancel",        "cancel-after-progress",       E::warns(Req::Can05)),
        ("answers-after-cancel",        "cancel-by-deadline",          E::warns(Req::Can05)),
        // The error may beat the barrier's answer; it is still charged to the cancel, since it
        // came before the sleep could have ended and carries -32800.
        ("answers-after-cancel",        "no-response-after-cancel",    E::warns(Req::Can05)),
        ("answers-after-cancel-slowly", "no-response-after-cancel",    E::warns(Req::Can05)),
        ("crashes-on-cancel",           "cancel-unknown-id",           E::fails(Req::Std01).within(FAST).reaped()),
        ("crashes-on-cancel",           "server-alive-after-cancel",   E::fails(Req::Std01).within(FAST)),
        ("never-answers",               "cancel-unknown-id",           E::fails(Req::Lif02).within(FAST).reaped()),
        ("non-json-stdout",             "stdio-framing",               E::fails(Req::Std03).reaped()),
        ("non-json-stdout",             "cancel-unknown-id",           E::fails(Req::Std03)),
        // Non-JSON on stdout ends the case at its first line, however much more follows; the
        // flood does not keep the case reading (nor make the machine look busy to it).
        ("garbage-flood",               "unknown-method",              E::fails(Req::Std03).saying("not JSON: `garbage`").within(FAST).reaped()),
        ("garbage-flood",               "cancel-after-progress",       E::fails(Req::Std03).saying("not JSON: `garbage`").within(FAST).reaped()),
        ("ignores-cancels",             "no-response-after-cancel",    E::warns(Req::Can05).or_untimed()),
        ("ignores-cancels",             "cancel-by-deadline",          E::warns(Req::Can05).or_untimed()),
        ("ignores-cancels",             "concurrent-cancel-isolation", E::warns(Req::Can05).or_untimed()),
        // The witness stops asking a grace after the proof that the cancels were read.
        ("ignores-cancels",             "cancel-request-id-fidelity",  E::warns(Req::Can05).reply_timeout(PATIENT).within(FAST)),
        ("duplicate-response",          "cancel-unknown-id",           E::fails(Req::Rpc04)),
        ("duplicate-response",          "stdio-framing",               E::fails(Req::Rpc04)),
        ("string-ids",                  "cancel-unknown-id",           E::fails(Req::Rpc04)),
        ("progress-without-token",      "no-progress-without-token",   E::fails(Req::Prg06)),
        ("progress-repeats",            "progress-monotonic",          E::warns(Req::Prg03)),
        ("progress-decreases",          "progress-monotonic",          E::fails(Req::Prg03)),
        ("no-exit-on-eof",              "shutdown-on-stdin-close",     E::warns(Req::Std07).reaped()),
        // Late by its own timer (as rmcp's 5 s drain is): late on a loaded machine too.
        ("exits-late-by-its-timer",     "shutdown-on-stdin-close",     E::warns(Req::Std07).reaped()),
        // A finished call's handler ignores the cancel it reads afterwards (CAN-09) and its
        // result lands after the barrier's answer: the timing cannot tell, so no warning,
        // calm or loaded.
        ("late-results",                "late-cancel-sweep",           E::outcome(Pass)),
        ("spawns-child",                "cancel-unknown-id",           E::outcome(Pass).reaped()),
        // Silence on unreadable input is a SHOULD (AMB-14); the rest of the case still runs.
        ("silent-on-parse-error",       "malformed-input",             E::warns(On::Case)),
        // Another code than -32601 for an unknown method is a warning up to 2025-11-25 (a
        // convention there, RPC-09); an error it must be, and the server must go on serving.
        ("unknown-method-internal-error", "unknown-method",            E::outcome(Pass)),
        ("unknown-method-internal-error", "unknown-method-code",       E::warns(On::Case)),
        ("unknown-method-invalid-params", "unknown-method",            E::outcome(Pass)),
        ("unknown-method-invalid-params", "unknown-method-code",       E::warns(On::Case)),
        ("unknown-method-result",       "unknown-method",              E::fails(On::Case)),
        ("exits-at-once",               "cancel-unknown-id",           E::fails(Req::Std01).within(FAST).reaped()),
        ("floods-stdout-line",          "cancel-unknown-id",           E::fails(Req::Std02).within(FAST).small(PEAK_MIB).reaped()),
        ("floods-stderr",               "cancel-unknown-id",           E::outcome(Pass).within(FAST).small(PEAK_MIB).reaped()),
        ("spawns-child",                "shutdown-on-stdin-close",     E::outcome(Pass).reaped()),
        // Issue-9 hostile targets: each ends in bounded time with the reason, and leaves
        // nothing behind.
        ("floods-pings-unread",         "cancel-unknown-id",           E::fails(Req::Can11).within(FAST).reaped()),
        ("exits-leaving-child",         "cancel-unknown-id",           E::fails(Req::Std01).within(FAST).startup_timeout(SLOW_START).reaped()),
        ("half-line",                   "cancel-unknown-id",           E::fails(Req::Lif02).saying("the start of a line").within(FAST).startup_timeout(SLOW_START).reaped()),
        ("daemonizes",                  "cancel-unknown-id",           E::outcome(Pass).reaped()),
        ("chatty",                      "ping-during-long-call",       E::outcome(Pass)),
        // Talking is no answer: a wait is extended only so long by a target that writes at its
        // own pace, and the whole opening has a deadline (startup allowance and case limit)
        // however fast it writes: whichever ends first (on a busy machine the talk allowance
        // is stretched past the opening's deadline), the failure says what the target wrote.
        ("chatty-never-initializes",    "cancel-unknown-id",           E::fails(Req::Lif02).saying("kept writing other messages|messages meanwhile").within(FAST).reaped()),
        ("floods-never-initializes",    "cancel-unknown-id",           E::fails(Req::Lif02).case_timeout(secs(3)).within(secs(8)).small(PEAK_MIB).reaped()),
        ("floods-unknown-progress",     "cancel-unknown-id",           E::fails(Req::Prg06).small(PEAK_MIB).bounded()),
        // The harness's replies to a ping flood are sent and counted, not kept; responses for
        // made-up ids are judged one by one, each its own finding, in linear time, and listed
        // up to a point.
        ("floods-pings",                "cancel-unknown-id",           E::outcome(Pass).small(PEAK_MIB).bounded()),
        ("floods-unknown-responses",    "cancel-unknown-id",           E::fails(Req::Rpc04).saying("never used as a request id").within(secs(10)).small(PEAK_MIB).bounded()),
        // A ticker that ignores its cancel keeps reporting progress after the last barrier.
        ("ignores-cancels",             "progress-monotonic",          E::warns(Req::Can05).or_untimed()),
        // The same faults in the stateless era: a MUST NOT there, so a failure.
        ("correct",                     "cancel-after-progress",       E::outcome(Pass).at(STATELESS)),
        ("correct",                     "no-response-after-cancel",    E::outcome(Pass).at(STATELESS)),
        ("correct",                     "late-cancel-after-completion", E::outcome(Pass).at(STATELESS)),
        ("correct",                     "late-cancel-sweep",           E::outcome(Pass).at(STATELESS)),
        ("late-results",                "late-cancel-sweep",           E::outcome(Pass).at(STATELESS)),
        ("answers-after-cancel",        "cancel-after-progress",       E::fails(Req::Can05).at(STATELESS)),
        ("answers-after-cancel-slowly", "no-response-after-cancel",    E::fails(Req::Can05).at(STATELESS)),
        ("ignores-cancels",             "progress-monotonic",          E::fails(Req::Can05).or_untimed().at(STATELESS)),
        ("ignores-cancels",             "no-response-after-cancel",    E::fails(Req::Can05).or_untimed().at(STATELESS)),
        ("correct",                     "stateless-result-type",       E::outcome(Pass).at(STATELESS)),
        ("correct",                     "stateless-no-server-requests", E::outcome(Pass).at(STATELESS)),
        ("no-result-type",              "stateless-result-type",       E::fails(Req::Rpc14).at(STATELESS)),
        ("requests-client",             "stateless-no-server-requests", E::fails(Req::Rpc15).at(STATELESS)),
    ]);
    rows
}

/// This binary serving `mode` over stdio, for the rows played on shared targets.
fn stdio(mode: &str) -> Result<Connect, Failed> {
    self_served::stdio("BROKEN_SERVER", mode)
}

fn main() {
    if let Ok(mode) = std::env::var("BROKEN_SERVER") {
        server::serve(&mode);
    }
    let args = harness::test_arguments();
    conformance::transport::reap::become_subreaper();
    let cases = self_served::server_cases();
    let mut trials = shared_rows::trials(&cases, table(), stdio, |_, want| {
        self_served::options("2025-11-25", Duration::from_millis(500), want)
    });
    trials.extend(self_served::trials(&cases, table(), check));
    libtest_mimic::run(&args, trials).exit();
}
