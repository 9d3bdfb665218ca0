//! A client connected to an in-process reference server through a tap that records every
//! line each way, so a test can say what went over the wire, not only what came out.

use reference_client::{Client, ClientOptions, RequestOptions};
use reference_server::{serve, ServeOptions};
use reference_wire::LineReader;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// Which way a line went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Client to server.
    Sent,
    /// Server to client.
    Received,
}

/// Everything that went over the wire, in order.
#[derive(Clone, Default)]
pub struct Wire(Arc<Mutex<Vec<(Dir, Value)>>>);

impl Wire {
    pub fn all(&self) -> Vec<(Dir, Value)> {
        self.0.lock().unwrap().clone()
    }

    /// What the client sent with `method`.
    pub fn sent(&self, method: &str) -> Vec<Value> {
        self.all()
            .into_iter()
            .filter(|(dir, m)| *dir == Dir::Sent && m["method"] == method)
            .map(|(_, m)| m)
            .collect()
    }

    /// The request ids the client cancelled with `notifications/cancelled`.
    pub fn cancelled_ids(&self) -> Vec<Value> {
        self.sent("notifications/cancelled")
            .into_iter()
            .map(|m| m["params"]["requestId"].clone())
            .collect()
    }

    /// The id of the one `method` request the client sent.
    pub fn id_of(&self, method: &str) -> Value {
        let sent = self.sent(method);
        assert_eq!(sent.len(), 1, "one {method} expected: {sent:?}");
        sent[0]["id"].clone()
    }

    /// The task id the server created.
    pub fn task_id(&self) -> String {
        self.all()
            .into_iter()
            .filter(|(dir, _)| *dir == Dir::Received)
            .find_map(|(_, m)| {
                let result = &m["result"];
                result["task"]["taskId"]
                    .as_str()
                    .or_else(|| {
                        (result["resultType"] == "task").then(|| result["taskId"].as_str())?
                    })
                    .map(str::to_owned)
            })
            .expect("a CreateTaskResult")
    }

    /// The client never cancelled a `tools/call` (or a poll) with
    /// `notifications/cancelled` (TSK-03, CAN-15).
    pub fn assert_no_cancel_of(&self, methods: &[&str]) {
        for method in methods {
            for request in self.sent(method) {
                assert!(
                    !self.cancelled_ids().contains(&request["id"]),
                    "the client cancelled its {method} {}: {:#?}",
                    request["id"],
                    self.all()
                );
            }
        }
    }
}

/// A client of an in-process reference server, speaking `version`, with its tap.
pub async fn connect(version: &str) -> (Client, Wire) {
    let options = ClientOptions {
        protocol_version: Some(version.into()),
        ..ClientOptions::default()
    };
    let wire = Wire::default();
    let (client_side, tap_client) = tokio::io::duplex(1 << 20);
    let (tap_server, server_side) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_side);
    tokio::spawn(serve(server_read, server_write, ServeOptions::default()));
    let (from_client, to_client) = tokio::io::split(tap_client);
    let (from_server, to_server) = tokio::io::split(tap_server);
    tokio::spawn(pump(from_client, to_server, Dir::Sent, wire.clone()));
    tokio::spawn(pump(from_server, to_client, Dir::Received, wire.clone()));
    let (read, write) = tokio::io::split(client_side);
    let client = Client::connect(read, write, options)
        .await
        .expect("connect");
    (client, wire)
}

async fn pump<R, W>(from: R, mut to: W, dir: Dir, wire: Wire)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = LineReader::new(from);
    while let Some(Ok(line)) = lines.next_line().await {
        if let Ok(value) = serde_json::from_str(&line) {
            wire.0.lock().unwrap().push((dir, value));
        }
        let mut line = line;
        line.push('\n');
        if to.write_all(line.as_bytes()).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// Returns once everything the client sent so far went through the tap: a round trip
/// after it, on the same ordered pipe.
pub async fn settle(client: &Client) {
    client.ping().await.expect("the server answers");
}

/// What the server's `cancellations` witness lists.
pub async fn witness(client: &Client) -> Value {
    let result = client
        .call_tool("cancellations", json!({}), RequestOptions::default())
        .await
        .expect("cancellations");
    serde_json::from_str(&result.text()).expect("json")
}
