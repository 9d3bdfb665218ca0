//! What a connection's callers and its reader task share: the requests awaiting an
//! answer, the progress routes, the transport and what the session learned.
//!
//! Apart from `client.rs` so that the reader (`routing.rs`) and the requests in flight
//! (`pending.rs`) use it without importing the client, which starts them.

use crate::log::Throttle;
use crate::transport::{Outgoing, OutgoingKind, Transport};
use crate::{CallError, Progress, TaskSupport};
use reference_wire::{RequestId, RpcError};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, oneshot};

/// How a request ended, as the reader learned it.
pub(crate) enum Reply {
    Result(Value),
    Error(RpcError),
    /// The transport gave up on the request.
    Failed(String),
    /// The server forgot the session; the request was not processed.
    SessionExpired,
}

#[derive(Default)]
pub(crate) struct Tables {
    /// Requests awaiting an answer, by exact id.
    pub(crate) pending: HashMap<RequestId, oneshot::Sender<Reply>>,
    /// Progress routes, by token.
    pub(crate) progress: HashMap<RequestId, mpsc::UnboundedSender<Progress>>,
    pub(crate) closed: bool,
}

pub(crate) struct Shared {
    tables: Mutex<Tables>,
    pub(crate) transport: Arc<dyn Transport>,
    /// Reports of messages that were read but not used (late answers, invalid messages).
    pub(crate) ignored: Throttle,
    next_id: AtomicI64,
    /// The protocol version in force.
    pub(crate) version: Mutex<String>,
    /// Counts completed handshakes; held while one runs, so a session is renewed once.
    pub(crate) handshakes: tokio::sync::Mutex<u64>,
    /// What the server declared it can do (`initialize` or `server/discover`).
    pub(crate) server_capabilities: Mutex<Value>,
    /// Each tool's `execution.taskSupport` from `tools/list`; `None` until listed.
    pub(crate) task_support: Mutex<Option<HashMap<String, TaskSupport>>>,
}

impl Shared {
    /// The state of a new connection over `transport`.
    pub(crate) fn new(transport: Arc<dyn Transport>) -> Self {
        Self {
            tables: Mutex::default(),
            transport,
            ignored: Throttle::new("ignored messages from the server"),
            next_id: AtomicI64::new(0),
            version: Mutex::default(),
            handshakes: tokio::sync::Mutex::new(0),
            server_capabilities: Mutex::new(json!({})),
            task_support: Mutex::default(),
        }
    }

    /// A request id never used before on this connection.
    pub(crate) fn fresh_id(&self) -> RequestId {
        // Ids only grow, so none is ever reused, outstanding or not (RPC-03).
        RequestId::Int(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn send(&self, message: Value, kind: OutgoingKind) -> Result<(), CallError> {
        self.transport
            .send(Outgoing { message, kind })
            .map_err(|_| CallError::Closed)
    }
}

/// Removes a progress route when its request (or its task) ends, however it ends.
pub(crate) struct ProgressRoute<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) token: Option<RequestId>,
}

impl Drop for ProgressRoute<'_> {
    fn drop(&mut self) {
        if let Some(token) = &self.token {
            self.shared.lock().progress.remove(token);
        }
    }
}
