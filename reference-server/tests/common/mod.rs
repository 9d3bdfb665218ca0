//! Drives the real `reference-server` binary over pipes, one JSON line at a time.

#![allow(dead_code)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

/// Generous: only hit when something is broken.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Server {
    pub fn spawn() -> Self {
        Self::spawn_with(&[])
    }

    pub fn spawn_with(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_reference-server"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn reference-server");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    /// Spawns and initializes with `version`, returning the server.
    pub fn initialized(version: &str) -> Self {
        Self::initialized_with(version, &[])
    }

    /// Spawns with `args` and initializes with `version`.
    pub fn initialized_with(version: &str, args: &[&str]) -> Self {
        let mut server = Self::spawn_with(args);
        let result = server.request(json!("init"), "initialize", init_params(version));
        assert_eq!(result["result"]["protocolVersion"], version, "{result}");
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn write_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to server");
        stdin.flush().expect("flush to server");
    }

    pub fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write_raw(line.as_bytes());
    }

    pub fn send_request(&mut self, id: Value, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    pub fn call(&mut self, id: Value, tool: &str, args: Value) {
        self.send_request(id, "tools/call", json!({"name": tool, "arguments": args}));
    }

    pub fn call_with_progress(&mut self, id: Value, tool: &str, args: Value, token: Value) {
        let params = json!({"name": tool, "arguments": args, "_meta": {"progressToken": token}});
        self.send_request(id, "tools/call", params);
    }

    pub fn cancel(&mut self, id: Value) {
        let params = json!({"requestId": id, "reason": "test"});
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}));
    }

    /// The next line, parsed; every line must be one JSON-RPC 2.0 object.
    pub fn next(&mut self) -> Value {
        self.next_within(PATIENCE).expect("server went quiet")
    }

    pub fn next_within(&mut self, wait: Duration) -> Option<Value> {
        match self.lines.recv_timeout(wait) {
            Ok(line) => {
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not json ({e}): {line}"));
                assert_eq!(value["jsonrpc"], "2.0", "{line}");
                Some(value)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Sends a request and returns its response; nothing else may arrive first.
    pub fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send_request(id.clone(), method, params);
        let line = self.next();
        assert_eq!(line["id"], id, "expected the response to {id}, got {line}");
        line
    }

    /// Sends a JSON-RPC ping (the barrier probe) and returns every line
    /// that arrived before its answer.
    pub fn barrier(&mut self, id: Value) -> Vec<Value> {
        self.send_request(id.clone(), "ping", json!({}));
        let mut before = Vec::new();
        loop {
            let line = self.next();
            if line["id"] == id && line.get("method").is_none() {
                assert_eq!(line["result"], json!({}), "{line}");
                return before;
            }
            before.push(line);
        }
    }

    /// The witness: ids whose handlers observed their cancellation.
    pub fn cancellations(&mut self, id: Value) -> Value {
        let response = self.tool(id, "cancellations", json!({}));
        let text = response["result"]["content"][0]["text"]
            .as_str()
            .expect("text")
            .to_owned();
        serde_json::from_str(&text).expect("witness is json")
    }

    /// Calls a tool and waits for its response (ignoring nothing).
    pub fn tool(&mut self, id: Value, tool: &str, args: Value) -> Value {
        self.call(id.clone(), tool, args);
        let line = self.next();
        assert_eq!(line["id"], id, "expected the response to {id}, got {line}");
        line
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    pub fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                start.elapsed() < within,
                "server did not exit within {within:?}"
            );
            thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut err, &mut text).expect("read stderr");
        }
        text
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn init_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "tests", "version": "0"},
    })
}

pub fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

pub fn error_code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_default()
}
