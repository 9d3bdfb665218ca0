//! A small stdio MCP server of 2025-11-25 with tasks, for the broken-task table: mode
//! `correct` follows the task rules; every other mode breaks exactly one of them.
//!
//! - `keeps-working`: `tasks/cancel` answers `cancelled`, but the work never hears of it (its
//!   progress goes on, the witness never lists it);
//! - `answers-cancel-first`: `tasks/cancel` is answered with the task still `working`, and the
//!   status moves to `cancelled` only afterwards;
//! - `cancels-terminal`: a cancel of a task that is already terminal is answered with the
//!   task instead of -32602;
//! - `cancelled-notification-cancels`: `notifications/cancelled` naming the `tools/call` that
//!   created a task cancels the task.

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

impl Server {
    fn write(&self, message: Value) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{message}");
        let _ = out.flush();
    }

    fn result(&self, id: &Value, result: Value) {
        self.write(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn error(&self, id: &Value, code: i64, message: &str) {
        self.write(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }

    fn task_json(id: &str, task: &Task) -> Value {
        json!({"taskId": id, "status": task.status, "ttl": 60000,
               "createdAt": "2026-12-02T00:00:00Z", "lastUpdatedAt": "2026-12-02T00:00:00Z",
               "pollInterval": 50})
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
        match method {
            "initialize" => self.result(&id, json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
                "serverInfo": {"name": "broken-tasks", "version": "0"}})),
            "ping" => self.result(&id, json!({})),
            "tools/call" => self.call(&id, &params),
            "tasks/get" => match self.tasks.lock().unwrap().get(params["taskId"].as_str().unwrap_or("")) {
                Some(task) => self.result(&id, Self::task_json(params["taskId"].as_str().unwrap(), task)),
                None => self.error(&id, -32602, "no such task"),
            },
            "tasks/cancel" => self.cancel(&id, params["taskId"].as_str().unwrap_or("")),
            "tasks/result" => {
                let server = self.clone();
                let task = params["taskId"].as_str().unwrap_or("").to_string();
                self.waits.lock().unwrap().insert(id.to_string(), false);
                std::thread::spawn(move || server.wait_result(&id, &task));
            }
            _ => self.error(&id, -32601, "method not found"),
        }
    }

    fn call(self: &Arc<Self>, id: &Value, params: &Value) {
        let name = params["name"].as_str().unwrap_or("");
        let arguments = &params["arguments"];
        let token = params.pointer("/_meta/progressToken").cloned();
        if name == "cancellations" {
            let list = self.witnessed.lock().unwrap().clone();
            return self.result(
                id,
                json!({"content": [{"type": "text", "text": Value::from(list).to_string()}]}),
            );
        }
        let task = params.get("task").is_some_and(Value::is_object);
        match (name, task) {
            ("echo", false) => self.result(
                id,
                json!({"content": [{"type": "text", "text": arguments["text"]}]}),
            ),
            ("echo", true) => self.error(id, -32601, "echo does not run as a task"),
            ("work" | "ticker" | "sleep", true) => {
                let task_id = format!("task-{}", self.tasks.lock().unwrap().len() + 1);
                let task = Task {
                    status: "working".into(),
                    stop: false,
                    result: None,
                    call: id.clone(),
                };
                let created = json!({"task": Self::task_json(&task_id, &task)});
                self.tasks.lock().unwrap().insert(task_id.clone(), task);
                self.result(id, created);
                let server = self.clone();
                let (name, arguments) = (name.to_string(), arguments.clone());
                std::thread::spawn(move || server.work(&task_id, &name, &arguments, token));
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

    fn cancel(&self, id: &Value, task_id: &str) {
        let mut tasks = self.tasks.lock().unwrap();
        let Some(task) = tasks.get_mut(task_id) else {
            return self.error(id, -32602, "no such task");
        };
        if task.status != "working" && self.mode != "cancels-terminal" {
            return self.error(id, -32602, "the task is terminal");
        }
        if self.mode == "answers-cancel-first" {
            self.result(id, Self::task_json(task_id, task));
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
        self.result(id, Self::task_json(task_id, task));
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
                (Some(result), _) => return self.result(id, result.clone()),
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
