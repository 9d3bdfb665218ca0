//! A small stdio MCP server with tasks, for the broken-task table: 2025-11-25's core tasks
//! after `initialize`, and the 2026-07-28 `io.modelcontextprotocol/tasks` extension for
//! requests stamped with that version (the era is read per request, as a dual-era server
//! does). Mode `correct` follows the task rules of both; every other mode breaks exactly one:
//!
//! - `keeps-working`: `tasks/cancel` answers `cancelled`, but the work never hears of it (its
//!   progress goes on, the witness never lists it);
//! - `answers-cancel-first`: `tasks/cancel` is answered with the task still `working`, and the
//!   status moves to `cancelled` only afterwards;
//! - `cancels-terminal`: a cancel of a task that is already terminal is answered with the
//!   task instead of -32602;
//! - `cancelled-notification-cancels`: `notifications/cancelled` naming the `tools/call` that
//!   created a task cancels the task;
//! - `required-makes-task`: a plain call of `work_required` (`taskSupport: "required"`) is
//!   run as a task instead of refused with -32601;
//! - `ext-undeclared`: (2026-07-28) a request that does not declare the extension is served
//!   as if it did: a task for `tools/call`, the task for `tasks/get` and `tasks/cancel`,
//!   where the extension wants -32021;
//! - `ext-undeclared-call`: (2026-07-28) only `tools/call` ignores the missing declaration
//!   and answers with a task;
//! - `ext-cancel-returns-task`: (2026-07-28) `tasks/cancel` answers with the task instead of
//!   the empty acknowledgement;
//! - `ext-unknown-acked`: (2026-07-28) `tasks/cancel` and `tasks/get` of an id never given
//!   out are answered as if it were a task, where the extension wants an error.
//!
//! `keeps-working`, `answers-cancel-first` and `cancelled-notification-cancels` break their
//! rule in both eras; `answers-cancel-first` is no fault in 2026-07-28, whose cancel is
//! cooperative and may be acknowledged before anything changed.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// One task and what its work knows.
struct Task {
    status: String,
    /// The work was told to stop.
    stop: bool,
    /// The call's result, once the work finished.
    result: Option<Value>,
    /// The id of the `tools/call` that created it.
    call: Value,
}

struct Server {
    mode: String,
    out: Mutex<std::io::Stdout>,
    tasks: Mutex<HashMap<String, Task>>,
    changed: Condvar,
    witnessed: Mutex<Vec<Value>>,
    /// `tasks/result` requests waiting, by id key, and whether their wait was cancelled.
    waits: Mutex<HashMap<String, bool>>,
}

/// `_meta` key of a 2026-07-28 request's protocol version.
const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// Where a 2026-07-28 request declares the tasks extension (a JSON pointer).
const DECLARED: &str =
    "/_meta/io.modelcontextprotocol~1clientCapabilities/extensions/io.modelcontextprotocol~1tasks";

/// The era of one request: `None` for 2025-11-25; for 2026-07-28, whether the request
/// declared the tasks extension.
type Ext = Option<bool>;

fn ext_of(method: &str, params: &Value) -> Ext {
    let stateless = method == "server/discover"
        || params
            .get("_meta")
            .is_some_and(|meta| meta.get(PROTOCOL_VERSION).is_some());
    stateless.then(|| params.pointer(DECLARED).is_some_and(Value::is_object))
}

impl Server {
    fn write(&self, message: Value) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{message}");
        let _ = out.flush();
    }

    /// A result; in 2026-07-28 typed `complete` unless it says otherwise.
    fn result(&self, id: &Value, ext: Ext, mut result: Value) {
        if ext.is_some() && result.get("resultType").is_none() {
            result["resultType"] = json!("complete");
        }
        self.write(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn error(&self, id: &Value, code: i64, message: &str) {
        self.write(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }

    fn task_json(id: &str, task: &Task, ext: Ext) -> Value {
        let (ttl, poll) = match ext {
            None => ("ttl", "pollInterval"),
            Some(_) => ("ttlMs", "pollIntervalMs"),
        };
        json!({"taskId": id, "status": task.status, ttl: 60000,
               "createdAt": "2026-12-02T00:00:00Z", "lastUpdatedAt": "2026-12-02T00:00:00Z",
               poll: 50})
    }

    /// Whether a request may use the extension; answers -32021 when it may not.
    fn declared(&self, id: &Value, ext: Ext) -> bool {
        if ext == Some(false) && self.mode != "ext-undeclared" {
            self.error(
                id,
                -32021,
                "Missing required client capability: the tasks extension",
            );
            return false;
        }
        true
    }

    fn handle(self: &Arc<Self>, line: &str) {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let params = message.get("params").cloned().unwrap_or(json!({}));
        let Some(id) = message.get("id").cloned() else {
            if method == "notifications/cancelled" {
                self.cancelled(&params["requestId"]);
            }
            return;
        };
        let ext = ext_of(method, &params);
        let task_id = params["taskId"].as_str().unwrap_or("");
        match (method, ext) {
            ("initialize", None) => self.result(&id, ext, json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
                "serverInfo": {"name": "broken-tasks", "version": "0"}})),
            ("server/discover", _) => self.result(&id, ext, json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}})),
            ("ping", None) => self.result(&id, ext, json!({})),
            ("tools/call", _) => self.call(&id, &params, ext),
            ("tasks/get", _) if self.declared(&id, ext) => {
                match self.tasks.lock().unwrap().get(task_id) {
                    Some(task) => self.result(&id, ext, Self::task_json(task_id, task, ext)),
                    None if ext.is_some() && self.mode == "ext-unknown-acked" => self.result(
                        &id,
                        ext,
                        json!({"taskId": task_id, "status": "working", "ttlMs": 60000,
                               "createdAt": "2026-12-02T00:00:00Z",
                               "lastUpdatedAt": "2026-12-02T00:00:00Z"}),
                    ),
                    None => self.error(&id, -32602, "no such task"),
                }
            }
            ("tasks/cancel", _) if self.declared(&id, ext) => self.cancel(&id, task_id, ext),
            ("tasks/get" | "tasks/cancel", _) => {}
            ("tasks/result", None) => {
                let server = self.clone();
                let task = task_id.to_string();
                self.waits.lock().unwrap().insert(id.to_string(), false);
                std::thread::spawn(move || server.wait_result(&id, &task));
            }
            _ => self.error(&id, -32601, "method not found"),
        }
    }

    fn call(self: &Arc<Self>, id: &Value, params: &Value, ext: Ext) {
        let name = params["name"].as_str().unwrap_or("");
        let arguments = &params["arguments"];
        let token = params.pointer("/_meta/progressToken").cloned();
        if name == "cancellations" {
            let list = self.witnessed.lock().unwrap().clone();
            let text = Value::from(list).to_string();
            return self.result(
                id,
                ext,
                json!({"content": [{"type": "text", "text": text}]}),
            );
        }
        // 2025-11-25: a task when `params.task` asks for one; 2026-07-28: when the request
        // declared the extension (`ext-undeclared`: always).
        let task = match ext {
            None => {
                params.get("task").is_some_and(Value::is_object)
                    || (name == "work_required" && self.mode == "required-makes-task")
            }
            Some(declared) => declared || self.mode.starts_with("ext-undeclared"),
        };
        match (name, task) {
            // In 2026-07-28 the server decides: echo is never a task.
            ("echo", true) if ext.is_none() => {
                self.error(id, -32601, "echo does not run as a task")
            }
            ("echo", _) => self.result(
                id,
                ext,
                json!({"content": [{"type": "text", "text": arguments["text"]}]}),
            ),
            ("work_required", false) => self.error(id, -32601, "work_required only runs as a task"),
            ("work" | "ticker" | "sleep" | "work_required", true) => {
                let task_id = format!("task-{}", self.tasks.lock().unwrap().len() + 1);
                let task = Task {
                    status: "working".into(),
                    stop: false,
                    result: None,
                    call: id.clone(),
                };
                let created = match ext {
                    None => json!({"task": Self::task_json(&task_id, &task, ext)}),
                    Some(_) => {
                        let mut flat = Self::task_json(&task_id, &task, ext);
                        flat["resultType"] = json!("task");
                        flat
                    }
                };
                self.tasks.lock().unwrap().insert(task_id.clone(), task);
                self.result(id, ext, created);
                let server = self.clone();
                let (name, arguments) = (name.to_string(), arguments.clone());
                let token = token.filter(|_| ext.is_none());
                std::thread::spawn(move || server.work(&task_id, &name, &arguments, token));
            }
            ("sleep", false) => {
                let server = self.clone();
                let (id, ms) = (id.clone(), arguments["ms"].as_u64().unwrap_or(0));
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(ms));
                    server.result(
                        &id,
                        ext,
                        json!({"content": [{"type": "text", "text": "slept"}]}),
                    );
                });
            }
            _ => self.error(id, -32602, "unknown tool or plain long call"),
        }
    }

    /// The task's work: progress every tick until stopped (work, ticker), or a result after
    /// `ms` (sleep).
    fn work(&self, task_id: &str, name: &str, arguments: &Value, token: Option<Value>) {
        let tick = Duration::from_millis(arguments["interval_ms"].as_u64().unwrap_or(20));
        let ends =
            (name == "sleep").then(|| Duration::from_millis(arguments["ms"].as_u64().unwrap_or(0)));
        let started = std::time::Instant::now();
        let mut progress = 0;
        let mut tasks = self.tasks.lock().unwrap();
        loop {
            let task = tasks.get_mut(task_id).expect("a task");
            if task.stop && self.mode != "keeps-working" {
                self.witnessed.lock().unwrap().push(json!(task_id));
                return;
            }
            if ends.is_some_and(|end| started.elapsed() >= end) {
                if task.status == "working" {
                    task.status = "completed".into();
                    task.result = Some(json!({"content": [{"type": "text", "text": "slept"}]}));
                }
                self.changed.notify_all();
                return;
            }
            if let Some(token) = token.as_ref().filter(|_| name != "sleep") {
                progress += 1;
                self.write(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                                  "params": {"progressToken": token, "progress": progress}}));
            }
            tasks = self.changed.wait_timeout(tasks, tick).unwrap().0;
        }
    }

    fn cancel(&self, id: &Value, task_id: &str, ext: Ext) {
        let mut tasks = self.tasks.lock().unwrap();
        let Some(task) = tasks.get_mut(task_id) else {
            if ext.is_some() && self.mode == "ext-unknown-acked" {
                return self.result(id, ext, json!({}));
            }
            return self.error(id, -32602, "no such task");
        };
        // The extension answers a cancel with an empty acknowledgement, terminal task or not.
        let answer = |task: &Task| match ext {
            Some(_) if self.mode != "ext-cancel-returns-task" => json!({}),
            _ => Self::task_json(task_id, task, ext),
        };
        if task.status != "working" && ext.is_none() && self.mode != "cancels-terminal" {
            return self.error(id, -32602, "the task is terminal");
        }
        if self.mode == "answers-cancel-first" {
            self.result(id, ext, answer(task));
            drop(tasks);
            std::thread::sleep(Duration::from_millis(50));
            let mut tasks = self.tasks.lock().unwrap();
            let task = tasks.get_mut(task_id).expect("a task");
            task.status = "cancelled".into();
            task.stop = true;
            self.changed.notify_all();
            return;
        }
        if task.status == "working" {
            task.status = "cancelled".into();
            task.stop = true;
        }
        self.changed.notify_all();
        self.result(id, ext, answer(task));
    }

    fn cancelled(&self, request: &Value) {
        if let Some(cancelled) = self.waits.lock().unwrap().get_mut(&request.to_string()) {
            *cancelled = true;
            self.changed.notify_all();
            return;
        }
        if self.mode != "cancelled-notification-cancels" {
            return;
        }
        let mut tasks = self.tasks.lock().unwrap();
        for task in tasks
            .values_mut()
            .filter(|t| &t.call == request && t.status == "working")
        {
            task.status = "cancelled".into();
            task.stop = true;
        }
        self.changed.notify_all();
    }

    /// A blocking `tasks/result`: answered once the task is terminal, dropped when its own
    /// wait is cancelled.
    fn wait_result(&self, id: &Value, task_id: &str) {
        let key = id.to_string();
        let mut tasks = self.tasks.lock().unwrap();
        loop {
            if self.waits.lock().unwrap().get(&key) == Some(&true) {
                self.waits.lock().unwrap().remove(&key);
                return;
            }
            let Some(task) = tasks.get(task_id) else {
                return self.error(id, -32602, "no such task");
            };
            match (&task.result, task.status.as_str()) {
                (Some(result), _) => return self.result(id, None, result.clone()),
                (None, "working") => {}
                (None, _) => return self.error(id, -32602, "the task was cancelled"),
            }
            tasks = self
                .changed
                .wait_timeout(tasks, Duration::from_millis(20))
                .unwrap()
                .0;
        }
    }
}

/// Serves MCP on stdio in `mode` until stdin ends.
pub fn serve(mode: &str) -> ! {
    let server = Arc::new(Server {
        mode: mode.to_string(),
        out: Mutex::new(std::io::stdout()),
        tasks: Mutex::new(HashMap::new()),
        changed: Condvar::new(),
        witnessed: Mutex::new(vec![]),
        waits: Mutex::new(HashMap::new()),
    });
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        server.handle(&line);
    }
    std::process::exit(0)
}
