//! The conformance adapter: when `CONFORMANCE_ACTIONS` is set, this program acts out a client
//! case of `conformance client` with the reference client library and reports how each
//! action ended, one JSON line per action on stdout. The contract is in the README
//! ("Testing a client"); this file is its model implementation.

use reference_client::{
    CallError, Client, ClientOptions, ConnectError, Progress, RequestOptions, KNOWN_VERSIONS,
    STATELESS_VERSION,
};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod task;

/// The variable that switches the program into adapter mode.
pub const ACTIONS_ENV: &str = "CONFORMANCE_ACTIONS";

/// Prints one outcome line; stdout carries nothing else.
fn report(action: usize, outcome: &str, text: Option<String>, progress: Option<Vec<f64>>) {
    emit(outcome_line(action, outcome, text, progress));
}

/// An outcome line: the action's index, its outcome word, and what it said.
fn outcome_line(
    action: usize,
    outcome: &str,
    text: Option<String>,
    progress: Option<Vec<f64>>,
) -> Value {
    let mut line = json!({"action": action, "outcome": outcome});
    if let Some(text) = text {
        line["text"] = json!(text);
    }
    if let Some(progress) = progress {
        line["progress"] = json!(progress);
    }
    line
}

/// Prints a line on stdout at once.
fn emit(line: Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn env_json(name: &str) -> Result<Value, String> {
    let text = std::env::var(name).map_err(|_| format!("{name} is not set"))?;
    serde_json::from_str(&text).map_err(|e| format!("{name} is not JSON: {e}"))
}

fn millis(action: &Value, key: &str) -> Option<Duration> {
    action
        .get(key)
        .and_then(Value::as_u64)
        .map(Duration::from_millis)
}

/// Adapter mode's entry point.
pub fn main() -> ExitCode {
    let setup = (|| {
        let server = match std::env::var(URL_ENV) {
            Ok(url) => Server::Url(url),
            Err(_) => {
                let argv = env_json("CONFORMANCE_SERVER")
                    .map_err(|e| format!("{e} (nor is {URL_ENV})"))?;
                let argv: Vec<OsString> = argv
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .and_then(|a| a.iter().map(|s| s.as_str().map(OsString::from)).collect())
                    .ok_or("CONFORMANCE_SERVER must be a JSON array of strings")?;
                Server::Argv(argv)
            }
        };
        let actions = env_json(ACTIONS_ENV)?
            .as_array()
            .cloned()
            .ok_or("CONFORMANCE_ACTIONS must be a JSON array")?;
        Ok::<_, String>((server, actions))
    })();
    let (server, actions) = match setup {
        Ok(s) => s,
        Err(e) => {
            eprintln!("reference-client adapter: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("reference-client adapter: cannot start a tokio runtime: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(act(server, actions));
    ExitCode::SUCCESS
}

/// The variable naming a Streamable HTTP endpoint to connect to instead of a stdio server.
const URL_ENV: &str = "CONFORMANCE_SERVER_URL";

/// Where the server is: a command to start over stdio, or an HTTP endpoint.
enum Server {
    Argv(Vec<OsString>),
    Url(String),
}

impl Server {
    async fn connect(&self, options: ClientOptions) -> Result<Client, ConnectError> {
        match self {
            Server::Argv(argv) => Client::spawn(argv, options).await,
            Server::Url(url) => Client::connect_http(url, options).await,
        }
    }
}

/// The variable naming the protocol version the harness plays.
const VERSION_ENV: &str = "CONFORMANCE_PROTOCOL_VERSION";

/// The connection options an action asks for: the harness's version where this client
/// speaks it, and the action's deadline for the handshake. For 2026-07-28 that is the
/// client's default, dual-era mode: `server/discover` first, and the handshake era if the
/// server turns out to be of it (LIF-14), as an application gets it.
fn connect_options(action: &Value) -> ClientOptions {
    let mut options = ClientOptions::default();
    match std::env::var(VERSION_ENV) {
        Ok(version) if version == STATELESS_VERSION => options.protocol_version = None,
        Ok(version) if KNOWN_VERSIONS.contains(&version.as_str()) => {
            options.protocol_version = Some(version)
        }
        Ok(version) => eprintln!(
            "reference-client adapter: {VERSION_ENV}={version:?} is not a version this client speaks; asking for its own"
        ),
        Err(_) => {}
    }
    if let Some(timeout) = millis(action, "timeout_ms") {
        options.initialize_timeout = timeout;
    }
    options
}

async fn act(server: Server, actions: Vec<Value>) {
    let mut client: Option<Arc<Client>> = None;
    let mut pending: Vec<JoinHandle<()>> = vec![];
    for (i, action) in actions.iter().enumerate() {
        if action.get("connect").is_some() {
            match server.connect(connect_options(action)).await {
                Ok(c) => {
                    client = Some(Arc::new(c));
                    report(i, "result", None, None);
                }
                Err(e) => {
                    let word = match e {
                        ConnectError::TimedOut(_) => "timeout",
                        _ => "error",
                    };
                    report(i, word, Some(e.to_string()), None);
                    return;
                }
            }
        } else if let Some(ms) = action.get("sleep_ms").and_then(Value::as_u64) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            report(i, "result", None, None);
        } else if action.get("exit").is_some() {
            break;
        } else {
            let Some(session) = client.clone() else {
                report(i, "error", Some("no session: connect first".into()), None);
                continue;
            };
            let action = action.clone();
            let call = tokio::spawn(async move {
                if action.get("task").is_some() && action.get("call").is_some() {
                    task::call(&session, i, &action).await
                } else {
                    call(&session, i, &action).await
                }
            });
            if actions[i].get("concurrent").and_then(Value::as_bool) == Some(true) {
                pending.push(call);
            } else {
                let _ = call.await;
            }
        }
    }
    for call in pending {
        let _ = call.await;
    }
    // `exit`, or the end of the actions: close the session (stdin first, or DELETE).
    let exit_index = actions.iter().position(|a| a.get("exit").is_some());
    let closed = match client.map(Arc::try_unwrap) {
        Some(Ok(client)) => client.close().await.map(drop).map_err(|e| e.to_string()),
        Some(Err(_)) => Err("a call still holds the session".to_string()),
        None => Ok(()),
    };
    if let Some(i) = exit_index {
        match closed {
            Ok(()) => report(i, "result", None, None),
            Err(e) => report(i, "error", Some(e), None),
        }
    }
}

/// A `call` or `ping` action.
async fn call(client: &Client, index: usize, action: &Value) {
    let cancel = CancellationToken::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let on_progress_cancel = action.get("cancel").and_then(Value::as_str) == Some("on-progress");
    if let Some(after) = millis(action, "cancel_after_ms") {
        let token = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            token.cancel();
        });
    }
    let timeout = millis(action, "timeout_ms");
    let (method, params) = if action.get("ping").is_some() {
        (client.liveness_method(), json!({}))
    } else {
        let name = action.get("call").and_then(Value::as_str).unwrap_or("");
        let arguments = action.get("arguments").cloned().unwrap_or(json!({}));
        ("tools/call", json!({"name": name, "arguments": arguments}))
    };
    let wants_progress = action.get("progress").and_then(Value::as_bool) == Some(true);
    let (token, record) = (cancel.clone(), Arc::clone(&seen));
    let mut handler = move |p: &Progress| {
        record
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p.progress);
        if on_progress_cancel {
            token.cancel();
        }
    };
    let options = RequestOptions {
        progress: wants_progress.then_some(&mut handler as reference_client::ProgressFn<'_>),
        cancel: Some(cancel),
        timeout,
    };
    let outcome = client.request(method, params, options).await;
    let seen = wants_progress.then(|| seen.lock().unwrap_or_else(|e| e.into_inner()).clone());
    match outcome {
        Ok(result) => {
            let text = result
                .get("content")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|i| i.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n")
                });
            report(index, "result", text, seen)
        }
        Err(CallError::Cancelled) => report(index, "cancelled", None, seen),
        Err(CallError::TimedOut(_)) => report(index, "timeout", None, seen),
        Err(e) => report(index, "error", Some(e.to_string()), seen),
    }
}
