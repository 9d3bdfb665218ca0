//! Deliberately broken clients over stdio: this test binary again, speaking raw JSON to the
//! server the harness names, each getting one rule wrong on purpose (or, for the fair ones,
//! doing something unusual that must not be blamed). Also the delaying proxy some of them
//! put between themselves and their server, so that what they write is still in transit when
//! they exit.

#![allow(unsafe_code)] // libc: signals the clients it starts

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Set in the environment of this binary when it plays a broken client.
pub const BROKEN: &str = "REFERENCE_CLIENT_TEST_BROKEN";
/// Set in the environment of this binary when it plays a proxy that holds what it forwards
/// (after the first write) for this many milliseconds; the argv is the server to start.
pub const PROXY: &str = "REFERENCE_CLIENT_TEST_PROXY_HOLD_MS";

pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"broken","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A server the broken client started, spoken to line by line.
pub(crate) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    /// Starts the server the harness named, through the holding proxy when `hold` is given.
    pub(crate) fn start(hold: Option<Duration>) -> Server {
        let argv: Vec<String> = serde_json::from_str(
            &std::env::var("CONFORMANCE_SERVER").expect("the harness sets CONFORMANCE_SERVER"),
        )
        .expect("CONFORMANCE_SERVER is a JSON array of strings");
        let mut command = match hold {
            Some(hold) => {
                let mut c = Command::new(std::env::current_exe().expect("own path"));
                c.args(&argv)
                    .env(PROXY, hold.as_millis().to_string())
                    .env_remove(BROKEN);
                c
            }
            None => {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]);
                c
            }
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Server {
            child,
            stdin,
            stdout,
        }
    }

    pub(crate) fn send(&mut self, line: &str) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = writeln!(stdin, "{line}");
            let _ = stdin.flush();
        }
    }

    /// The next message, or `None` at the end of the server's output.
    pub(crate) fn read(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap_or(Value::Null)),
        }
    }

    /// Reads until a message satisfies `wanted`, answering the server's pings on the way.
    pub(crate) fn read_until(&mut self, wanted: impl Fn(&Value) -> bool) -> Option<Value> {
        loop {
            let message = self.read()?;
            if wanted(&message) {
                return Some(message);
            }
            if message["method"] == "ping" {
                self.send(&json!({"jsonrpc":"2.0","id":message["id"],"result":{}}).to_string());
            }
        }
    }

    /// Reads until the answer to request `id`.
    pub(crate) fn answer(&mut self, id: Value) -> Option<Value> {
        self.read_until(|m| m.get("method").is_none() && m["id"] == id)
    }

    /// `initialize`, its answer, and `notifications/initialized`.
    pub(crate) fn handshake(&mut self) {
        self.send(INITIALIZE);
        self.answer(json!(1));
        self.send(INITIALIZED);
    }

    /// Closes the server's stdin and waits (a while) for it to exit.
    pub(crate) fn close(mut self) {
        self.stdin = None;
        self.wait();
    }

    fn wait(&mut self) {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Prints one outcome line, as an adapter does.
pub(crate) fn report(action: usize, outcome: &str) {
    println!("{}", json!({"action": action, "outcome": outcome}));
    let _ = std::io::stdout().flush();
}

/// A client that speaks raw JSON and gets one thing wrong on purpose.
#[allow(
    clippy::too_many_lines,
    reason = "one arm per broken mode, read as a table"
)]
pub fn client(mode: &str) {
    match mode {
        "cancels-initialize" => {
            let mut s = Server::start(None);
            s.send(INITIALIZE);
            s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"too slow"}}"#);
            std::thread::sleep(Duration::from_millis(300));
            s.close();
        }
        "string-request-id" => {
            let mut s = Server::start(None);
            s.handshake();
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"p"}}}"#);
            s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"2"}}"#);
            std::thread::sleep(Duration::from_millis(300));
            s.close();
        }
        "cancels-at-once" => {
            // A deadline of 300 ms, cancelled after none.
            let mut s = Server::start(None);
            s.handshake();
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{}}}"#);
            s.send(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#,
            );
            std::thread::sleep(Duration::from_millis(300));
            s.close();
        }
        "cancels-after-answer" => {
            let mut s = Server::start(None);
            s.handshake();
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"p"}}}"#);
            s.answer(json!(2));
            std::thread::sleep(Duration::from_millis(400));
            s.send(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#,
            );
            std::thread::sleep(Duration::from_millis(300));
            s.close();
        }
        "gives-up-before-starting" => {
            // Fair: its connect deadline passed before it started its server (a slow start).
            report(0, "timeout");
        }
        "omits-initialized" => {
            let mut s = Server::start(None);
            s.send(INITIALIZE);
            s.answer(json!(1));
            report(0, "result");
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
            s.answer(json!(2));
            report(1, "result");
            s.close();
            report(2, "result");
        }
        "lists-tools-early" => {
            let mut s = Server::start(None);
            s.send(INITIALIZE);
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
            s.answer(json!(1));
            s.send(INITIALIZED);
            std::thread::sleep(Duration::from_millis(300));
            s.close();
        }
        "reuses-answered-id" => {
            let mut s = Server::start(None);
            s.handshake();
            report(0, "result");
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
            s.answer(json!(2));
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
            s.answer(json!(2));
            std::thread::sleep(Duration::from_millis(300));
            s.close();
        }
        "sigterms-server" => {
            // Ends its server with SIGTERM while the server's stdin is still open.
            let mut s = Server::start(None);
            s.handshake();
            report(0, "result");
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
            s.answer(json!(2));
            report(1, "result");
            // SAFETY: kill(2) on the pid of a child this process started and has not reaped.
            unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) };
            s.wait();
            report(2, "result");
        }
        "exits-with-cancel-in-flight" => {
            // Its cancel of `initialize` (CAN-04) is still in the proxy when it exits.
            let mut s = Server::start(Some(Duration::from_millis(1500)));
            s.send(INITIALIZE);
            std::thread::sleep(Duration::from_millis(300));
            s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"deadline"}}"#);
            report(0, "timeout");
            std::process::exit(0);
        }
        "exits-without-closing" => {
            // Fair: it simply exits, and the kernel closes its server's stdin, which the
            // proxy passes on a moment later.
            let mut s = Server::start(Some(Duration::from_millis(300)));
            s.handshake();
            report(0, "result");
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
            s.answer(json!(2));
            report(1, "result");
            report(2, "result");
            std::process::exit(0);
        }
        "stray-connections" => {
            // Fair: before it starts its server, other programs on the machine connect to the
            // harness's port (the relay's address in CONFORMANCE_SERVER): one closes at once,
            // as a port probe does, and one speaks HTTP and stays open, as another run's
            // harness handed that port for its server would. Then it plays the case right.
            let argv: Vec<String> = serde_json::from_str(
                &std::env::var("CONFORMANCE_SERVER").expect("the harness sets CONFORMANCE_SERVER"),
            )
            .expect("CONFORMANCE_SERVER is a JSON array of strings");
            let addr = argv
                .iter()
                .skip_while(|a| a.as_str() != conformance::transport::relay::RELAY_FLAG)
                .nth(1)
                .expect("the relay's address follows its flag");
            drop(std::net::TcpStream::connect(addr));
            let mut stray = std::net::TcpStream::connect(addr).expect("the harness listens");
            let _ = stray.write_all(
                b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 2\r\n\r\n{}\n",
            );
            let mut s = Server::start(None);
            s.handshake();
            report(0, "result");
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"p"}}}"#);
            s.read_until(|m| m["method"] == "notifications/progress");
            s.send(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#,
            );
            report(1, "cancelled");
            s.send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
            s.answer(json!(3));
            report(2, "result");
            s.close();
            report(3, "result");
            drop(stray);
        }
        "probes-first" => {
            // Fair: a throwaway server process answers `server/discover` first.
            let mut probe = Server::start(None);
            probe.send(r#"{"jsonrpc":"2.0","id":"probe-1","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"broken","version":"0"}}}}"#);
            probe.answer(json!("probe-1"));
            probe.close();
            let mut s = Server::start(None);
            s.handshake();
            report(0, "result");
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
            s.answer(json!(2));
            report(1, "result");
            s.close();
            report(2, "result");
        }
        "answers-cancelled-request" | "bad-progress" => {
            let mut s = Server::start(None);
            s.handshake();
            report(0, "result");
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"go"}}}"#);
            let roots = s.read_until(|m| m["method"] == "roots/list");
            let Some(roots) = roots else { return s.close() };
            if mode == "bad-progress" {
                let token = &roots["params"]["_meta"]["progressToken"];
                s.send(&json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":token,"progress":1,"message":42}}).to_string());
            }
            // The cancel comes, then the barrier's ping: answered, and then the roots anyway.
            let ping = s.read_until(|m| m["method"] == "ping");
            if let Some(ping) = ping {
                s.send(&json!({"jsonrpc":"2.0","id":ping["id"],"result":{}}).to_string());
            }
            if mode == "answers-cancelled-request" {
                s.send(
                    &json!({"jsonrpc":"2.0","id":roots["id"],"result":{"roots":[]}}).to_string(),
                );
            }
            s.answer(json!(2));
            report(1, "result");
            std::thread::sleep(Duration::from_millis(3600));
            report(2, "result");
            s.close();
            report(3, "result");
        }
        "resets-forever" => {
            // Never gives up on a call that keeps reporting progress.
            let mut s = Server::start(None);
            s.handshake();
            report(0, "result");
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"p"}}}"#);
            while s.read().is_some() {}
            s.close();
        }
        "times-out-silently" => {
            // Gives up on the call at its deadline without cancelling it, reports, and ends.
            let mut s = Server::start(None);
            s.handshake();
            report(0, "result");
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"p"}}}"#);
            std::thread::sleep(Duration::from_millis(400));
            report(1, "timeout");
            s.close();
            report(2, "result");
        }
        "hangs-on-server-exit" => {
            // Does not notice that its server exited.
            let mut s = Server::start(None);
            s.handshake();
            report(0, "result");
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{}}}"#);
            std::thread::sleep(Duration::from_secs(60));
        }
        "never-cancels" => {
            // Told to cancel on the first progress, it never does, and never reports.
            let mut s = Server::start(None);
            s.handshake();
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"p"}}}"#);
            s.answer(json!(2));
            s.close();
        }
        other => panic!("unknown broken mode {other}"),
    }
}

/// The holding proxy: starts the server `argv`, passes the first write on at once and every
/// later one (and the end of its input) `hold` after it came, and passes the server's
/// output straight through.
pub fn proxy(hold: Duration, argv: &[String]) {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let mut to_server = child.stdin.take().expect("piped");
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = vec![0u8; 65536];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut first = true;
    while let Ok((at, bytes)) = rx.recv() {
        if !first {
            std::thread::sleep((at + hold).saturating_duration_since(Instant::now()));
        }
        first = false;
        if to_server
            .write_all(&bytes)
            .and_then(|()| to_server.flush())
            .is_err()
        {
            break;
        }
    }
    // The end of the input is held too.
    std::thread::sleep(hold);
    drop(to_server);
    let status = child.wait().map(|s| s.code().unwrap_or(1)).unwrap_or(1);
    std::process::exit(status);
}
