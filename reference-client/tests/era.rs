//! The two eras over stdio, against scripted peers: 2026-07-28 when the server speaks it
//! (`server/discover` first, every request stamped, cancels still `notifications/cancelled`,
//! `resultType` checked), and the fall back to `initialize` on any other answer (LIF-14).

use reference_client::{
    CallError, Client, ClientOptions, ConnectError, Era, Progress, RequestOptions,
};
use reference_wire::{LineReader, Message, RequestId};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

type Lines = LineReader<ReadHalf<DuplexStream>>;
type Out = WriteHalf<DuplexStream>;

/// Connects a client with `options` to a peer running `script`; the peer's task is
/// returned so its assertions are checked when it is awaited.
async fn connect<F, Fut>(
    options: ClientOptions,
    script: F,
) -> (Result<Client, ConnectError>, JoinHandle<()>)
where
    F: FnOnce(Lines, Out) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let (client_side, peer_side) = tokio::io::duplex(64 * 1024);
    let (peer_read, peer_write) = tokio::io::split(peer_side);
    let peer = tokio::spawn(async move { script(LineReader::new(peer_read), peer_write).await });
    let (read, write) = tokio::io::split(client_side);
    (Client::connect(read, write, options).await, peer)
}

async fn next(lines: &mut Lines) -> Option<Value> {
    let line = lines.next_line().await?.expect("readable");
    Some(serde_json::from_str(&line).expect("json"))
}

async fn send(out: &mut Out, message: Value) {
    let mut line = message.to_string();
    line.push('\n');
    out.write_all(line.as_bytes()).await.expect("write");
}

fn answer(request: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": request["id"], "result": result})
}

fn error(request: &Value, code: i64, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": "no", "data": data}})
}

/// LIF-10: the version, capabilities and client info on a request.
fn assert_stamped(request: &Value) {
    let meta = &request["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
        "{request}"
    );
    assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "reference-client"
    );
}

fn discover_result() -> Value {
    json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}}})
}

#[tokio::test]
async fn a_stateless_server_is_spoken_to_in_2026() {
    let (client, peer) = connect(ClientOptions::default(), |mut lines, mut out| async move {
        let mut ids = HashSet::new();
        let mut request = |value: &Value| {
            assert!(ids.insert(value["id"].to_string()), "reused id: {value}");
            assert_stamped(value);
        };
        let discover = next(&mut lines).await.expect("discover");
        assert_eq!(discover["method"], "server/discover");
        request(&discover);
        send(&mut out, answer(&discover, discover_result())).await;

        let work = next(&mut lines).await.expect("work");
        assert_eq!(work["params"]["name"], "work");
        request(&work);
        let token = work["params"]["_meta"]["progressToken"].clone();
        assert!(token.is_string());
        send(
            &mut out,
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 0, "message": "Started"}}),
        )
        .await;
        // On stdio a cancel is still notifications/cancelled with the exact id.
        let cancel = next(&mut lines).await.expect("cancel");
        assert_eq!(cancel["method"], "notifications/cancelled");
        assert_eq!(cancel["params"]["requestId"], work["id"]);

        let text = json!({"content": [{"type": "text", "text": "Server: still available"}]});
        for (kind, result_type) in [
            ("ping", json!("complete")),
            ("shapeless", Value::Null),
            ("bogus", json!("bogus")),
        ] {
            let call = next(&mut lines).await.expect("a call");
            assert_eq!(call["params"]["name"], kind);
            request(&call);
            let mut result = text.clone();
            if !result_type.is_null() {
                result["resultType"] = result_type;
            }
            send(&mut out, answer(&call, result)).await;
        }
        // `ping` is gone in 2026-07-28: liveness is server/discover.
        let probe = next(&mut lines).await.expect("liveness probe");
        assert_eq!(probe["method"], "server/discover");
        request(&probe);
        send(&mut out, answer(&probe, discover_result())).await;
        assert!(next(&mut lines).await.is_none(), "nothing after close");
    })
    .await;
    let client = client.expect("connect");
    assert_eq!(client.era(), Era::Stateless);
    assert_eq!(client.protocol_version(), "2026-07-28");

    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let mut on_progress = |_: &Progress| canceller.cancel();
    let options = RequestOptions::default()
        .progress(&mut on_progress)
        .cancel(cancel);
    let outcome = client.call_tool("work", json!({}), options).await;
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");

    let none = || RequestOptions::default();
    let ping = client
        .call_tool("ping", json!({}), none())
        .await
        .expect("ping");
    assert_eq!(ping.text(), "Server: still available");
    // RPC-14: an absent resultType means complete; an unknown one is invalid.
    client
        .call_tool("shapeless", json!({}), none())
        .await
        .expect("a result without resultType is complete");
    let bogus = client.call_tool("bogus", json!({}), none()).await;
    assert!(
        matches!(bogus, Err(CallError::InvalidResult(ref why)) if why.contains("bogus")),
        "{bogus:?}"
    );
    client.ping().await.expect("liveness");
    client.close().await.expect("close");
    peer.await.expect("the peer's checks");
}

/// A handshake-era peer that answers the discover probe with `probe_answer` (or not at
/// all), then expects `initialize`.
async fn legacy_peer(mut lines: Lines, mut out: Out, probe_answer: Option<Value>, asked: &str) {
    let discover = next(&mut lines).await.expect("discover");
    assert_eq!(discover["method"], "server/discover");
    if let Some(mut reply) = probe_answer {
        reply["id"] = discover["id"].clone();
        send(&mut out, reply).await;
    }
    let init = next(&mut lines).await.expect("initialize");
    assert_eq!(init["method"], "initialize", "{init}");
    assert_eq!(init["params"]["protocolVersion"], asked);
    assert_ne!(init["id"], discover["id"], "a new id");
    let version = init["params"]["protocolVersion"].clone();
    send(
        &mut out,
        answer(
            &init,
            json!({"protocolVersion": version, "capabilities": {},
                "serverInfo": {"name": "legacy", "version": "0"}}),
        ),
    )
    .await;
    let initialized = next(&mut lines).await.expect("initialized");
    assert_eq!(initialized["method"], "notifications/initialized");
    while next(&mut lines).await.is_some() {}
}

#[tokio::test]
async fn any_other_answer_to_the_probe_falls_back_to_initialize() {
    let options = ClientOptions {
        discover_timeout: Duration::from_millis(200),
        ..ClientOptions::default()
    };
    let not_found = json!({"jsonrpc": "2.0", "error": {"code": -32601, "message": "unknown"}});
    let invalid =
        json!({"jsonrpc": "2.0", "error": {"code": -32602, "message": "not initialized"}});
    let sloppy = json!({"jsonrpc": "2.0", "result": {"protocolVersion": "2025-11-25"}});
    for probe_answer in [Some(not_found), Some(invalid), Some(sloppy), None] {
        let shown = format!("{probe_answer:?}");
        let (client, peer) = connect(options.clone(), move |lines, out| async move {
            legacy_peer(lines, out, probe_answer, "2025-11-25").await
        })
        .await;
        let client = client.unwrap_or_else(|e| panic!("{shown}: {e}"));
        assert_eq!(client.era(), Era::Handshake, "{shown}");
        assert_eq!(client.protocol_version(), "2025-11-25", "{shown}");
        client.close().await.expect("close");
        peer.await.expect("the peer's checks");
    }
}

#[tokio::test]
async fn an_unsupported_version_error_names_what_to_speak() {
    // -32022 is a stateless-era error: pick from what it names, here a handshake version.
    let reply = json!({"jsonrpc": "2.0", "error": {"code": -32022, "message": "unsupported",
        "data": {"supported": ["2025-06-18"], "requested": "2026-07-28"}}});
    let (client, peer) = connect(ClientOptions::default(), move |lines, out| async move {
        legacy_peer(lines, out, Some(reply), "2025-06-18").await
    })
    .await;
    let client = client.expect("connect");
    assert_eq!(client.protocol_version(), "2025-06-18");
    client.close().await.expect("close");
    peer.await.expect("the peer's checks");

    // Nothing this client speaks: no fall back, a clear error.
    let (client, peer) = connect(ClientOptions::default(), |mut lines, mut out| async move {
        let discover = next(&mut lines).await.expect("discover");
        let data = json!({"supported": ["2099-01-01"], "requested": "2026-07-28"});
        send(&mut out, error(&discover, -32022, data)).await;
        assert!(
            next(&mut lines).await.is_none(),
            "no initialize after -32022"
        );
    })
    .await;
    let outcome = client.err().expect("no version in common");
    assert!(
        matches!(outcome, ConnectError::UnsupportedVersion(ref v) if v.contains("2099-01-01")),
        "{outcome:?}"
    );
    peer.await.expect("the peer's checks");
}

#[tokio::test]
async fn a_pinned_2026_client_does_not_fall_back() {
    let options = ClientOptions {
        protocol_version: Some("2026-07-28".into()),
        ..ClientOptions::default()
    };
    let (client, peer) = connect(options, |mut lines, mut out| async move {
        let discover = next(&mut lines).await.expect("discover");
        send(&mut out, error(&discover, -32601, Value::Null)).await;
        assert!(next(&mut lines).await.is_none(), "no initialize");
    })
    .await;
    let outcome = client.err().expect("a handshake-era server");
    assert!(
        matches!(outcome, ConnectError::Rpc(ref e) if e.code == -32601),
        "{outcome:?}"
    );
    peer.await.expect("the peer's checks");
}

#[tokio::test]
async fn a_handshake_era_version_asks_initialize_without_a_probe() {
    let options = ClientOptions {
        protocol_version: Some("2025-03-26".into()),
        ..ClientOptions::default()
    };
    let (client, peer) = connect(options, |mut lines, mut out| async move {
        let first = next(&mut lines).await.expect("initialize");
        assert_eq!(first["method"], "initialize");
        assert_eq!(first["params"]["protocolVersion"], "2025-03-26");
        let Ok(Message::Request { id, .. }) = Message::from_value(first.clone()) else {
            panic!("a request")
        };
        assert_eq!(id, RequestId::Int(0));
        send(
            &mut out,
            answer(
                &first,
                json!({"protocolVersion": "2025-03-26", "capabilities": {},
                    "serverInfo": {"name": "old", "version": "0"}}),
            ),
        )
        .await;
        while next(&mut lines).await.is_some() {}
    })
    .await;
    let client = client.expect("connect");
    assert_eq!(client.protocol_version(), "2025-03-26");
    client.close().await.expect("close");
    peer.await.expect("the peer's checks");
}
