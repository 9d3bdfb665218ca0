//! Routing what the server sends to whoever waits for it: answers to their callers,
//! progress to its request's callback, and the few requests a server may send answered
//! here. It runs as the connection's one reader task.

use crate::shared::{Reply, Shared};
use crate::transport::{Incoming, OutgoingKind};
use crate::Progress;
use reference_wire::{Message, RequestId, METHOD_NOT_FOUND};
use serde_json::{json, Value};
use std::sync::Arc;

/// Reads until the transport ends, then fails every waiter at once.
pub(crate) async fn read_loop(shared: Arc<Shared>) {
    while let Some(incoming) = shared.transport.receive().await {
        let value = match incoming {
            Incoming::Message(value) => value,
            Incoming::Failed { id, reason } => {
                settle(&shared, &id, Reply::Failed(reason));
                continue;
            }
            Incoming::SessionExpired { id } => {
                settle(&shared, &id, Reply::SessionExpired);
                continue;
            }
        };
        match Message::from_value(value) {
            Ok(Message::Response {
                id: Some(id),
                outcome,
            }) => {
                let waiter = shared.lock().pending.remove(&id);
                match waiter {
                    Some(tx) => {
                        let _ = tx.send(match outcome {
                            Ok(result) => Reply::Result(result),
                            Err(error) => Reply::Error(error),
                        });
                    }
                    None => shared.ignored.report(|| format!(
                        "ignored response for request {id}: nothing is waiting for it (cancelled, timed out or unknown)"
                    )),
                }
            }
            Ok(Message::Response { id: None, outcome }) => shared
                .ignored
                .report(|| format!("server reported an error without an id: {outcome:?}")),
            Ok(Message::Notification { method, params }) if method == "notifications/progress" => {
                route_progress(&shared, params.as_ref())
            }
            Ok(Message::Notification { .. }) => {}
            Ok(Message::Request { id, method, .. }) => answer(&shared, id, &method),

            Err(rejected) => shared.ignored.report(|| {
                format!(
                    "ignored an invalid message from the server: {}",
                    rejected.error.message
                )
            }),
        }
    }
    // The server is gone: every waiter learns it at once.
    let mut tables = shared.lock();
    tables.closed = true;
    tables.pending.clear();
    tables.progress.clear();
}

/// Ends the wait for request `id` with `reply`, if anyone still waits.
fn settle(shared: &Shared, id: &RequestId, reply: Reply) {
    if let Some(tx) = shared.lock().pending.remove(id) {
        let _ = tx.send(reply);
    }
}

/// Answers a request from the server: `ping`, and "method not found" for anything else.
/// In the stateless era servers send no requests and clients send no responses (RPC-15).
fn answer(shared: &Shared, id: RequestId, method: &str) {
    let version = shared
        .version
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if crate::era::is_stateless(&version) {
        shared.ignored.report(|| {
            format!("ignored request {id} ({method:?}): servers send no requests in {version}")
        });
        return;
    }
    let message = if method == "ping" {
        json!({"jsonrpc": "2.0", "id": id.to_value(), "result": {}})
    } else {
        let text = format!("method not found: {method:?}; this client serves only ping");
        json!({"jsonrpc": "2.0", "id": id.to_value(), "error": {"code": METHOD_NOT_FOUND, "message": text}})
    };
    let _ = shared.send(message, OutgoingKind::Response);
}

fn route_progress(shared: &Shared, params: Option<&Value>) {
    let Some(params) = params else { return };
    let Some(token) = params.get("progressToken").and_then(RequestId::from_value) else {
        return;
    };
    let Some(progress) = params.get("progress").and_then(Value::as_f64) else {
        return;
    };
    let update = Progress {
        progress,
        total: params.get("total").and_then(Value::as_f64),
        message: params
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    if let Some(route) = shared.lock().progress.get(&token) {
        let _ = route.send(update);
    }
}
