//! Client library rules: distinct outcomes, cancels with exact ids, late
//! answers ignored, unique progress tokens, and the shutdown ladder.

use reference_client::{CallError, Client, ClientOptions, ConnectError, Progress, RequestOptions};
use reference_server::{serve, ServeOptions};
use reference_wire::{LineReader, Message, RequestId};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio_util::sync::CancellationToken;

/// Options that speak the handshake era without the `server/discover` probe, as the
/// scripted peers here expect `initialize` first.
fn handshake_era() -> ClientOptions {
    ClientOptions {
        protocol_version: Some(reference_client::PROTOCOL_VERSION.into()),
        ..ClientOptions::default()
    }
}

/// A client connected to an in-process reference server.
async fn in_process() -> Client {
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_side);
    tokio::spawn(serve(server_read, server_write, ServeOptions::default()));
    let (read, write) = tokio::io::split(client_side);
    Client::connect(read, write, handshake_era())
        .await
        .expect("connect")
}

async fn witness(client: &Client) -> Value {
    let result = client
        .call_tool("cancellations", json!({}), RequestOptions::default())
        .await
        .expect("cancellations");
    serde_json::from_str(&result.text()).expect("json")
}

#[tokio::test]
async fn cancellation_is_its_own_outcome() {
    let client = in_process().await;
    assert_eq!(client.protocol_version(), "2025-11-25");
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let mut seen = Vec::new();
    let mut on_progress = |p: &Progress| {
        seen.push(p.clone());
        canceller.cancel();
    };
    let options = RequestOptions::default()
        .progress(&mut on_progress)
        .cancel(cancel);
    let outcome = client.call_tool("work", json!({}), options).await;
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].message.as_deref(), Some("Started"));
    // initialize was id 0, work id 1, so the server saw a cancel for 1.
    assert_eq!(witness(&client).await, json!([1]));
}

#[tokio::test]
async fn tool_errors_and_protocol_errors_are_not_cancellations() {
    let client = in_process().await;
    let tool_error = client
        .call_tool("echo", json!({"text": 5}), RequestOptions::default())
        .await
        .expect("a result");
    assert!(tool_error.is_error);
    let unknown = client
        .call_tool("nope", json!({}), RequestOptions::default())
        .await;
    assert!(
        matches!(unknown, Err(CallError::Rpc(ref e)) if e.code == -32602),
        "{unknown:?}"
    );
    let fine = client
        .call_tool("echo", json!({"text": "ok"}), RequestOptions::default())
        .await
        .expect("echo");
    assert!(!fine.is_error);
    assert_eq!(fine.text(), "ok");
}

#[tokio::test]
async fn timeout_sends_a_cancel() {
    let client = in_process().await;
    let outcome = client
        .request(
            "tools/call",
            json!({"name": "work", "arguments": {}}),
            RequestOptions::default().timeout(Duration::from_millis(20)),
        )
        .await;
    assert!(
        matches!(outcome, Err(CallError::TimedOut(_))),
        "{outcome:?}"
    );
    assert_eq!(witness(&client).await, json!([1]));
    client.ping().await.expect("still alive");
}

/// A scripted peer: answers initialize, then runs `script` on the rest.
async fn scripted<F, Fut>(script: F) -> Client
where
    F: FnOnce(
            LineReader<tokio::io::ReadHalf<DuplexStream>>,
            tokio::io::WriteHalf<DuplexStream>,
        ) -> Fut
        + Send
        + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let (client_side, peer_side) = tokio::io::duplex(64 * 1024);
    let (peer_read, mut peer_write) = tokio::io::split(peer_side);
    tokio::spawn(async move {
        let mut lines = LineReader::new(peer_read);
        let init = next_message(&mut lines).await;
        let Message::Request { id, .. } = init else {
            panic!("expected initialize")
        };
        let result = json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "0"}});
        send(&mut peer_write, reference_wire::response(&id, result)).await;
        script(lines, peer_write).await;
    });
    let (read, write) = tokio::io::split(client_side);
    Client::connect(read, write, handshake_era())
        .await
        .expect("connect")
}

async fn next_message<R: tokio::io::AsyncRead + Unpin>(lines: &mut LineReader<R>) -> Message {
    let line = lines.next_line().await.expect("a line").expect("readable");
    Message::parse(&line).expect("valid message")
}

async fn send<W: tokio::io::AsyncWrite + Unpin>(w: &mut W, mut line: String) {
    line.push('\n');
    w.write_all(line.as_bytes()).await.expect("write");
}

#[tokio::test]
async fn cancel_carries_the_exact_id_and_a_late_answer_is_ignored() {
    let client = scripted(|mut lines, mut out| async move {
        assert!(matches!(next_message(&mut lines).await, Message::Notification { method, .. } if method == "notifications/initialized"));
        let Message::Request { id, params, .. } = next_message(&mut lines).await else {
            panic!("expected tools/call")
        };
        let token = params.as_ref().and_then(|p| p["_meta"].get("progressToken")).cloned();
        let token = token.expect("a progress token");
        let progress = json!({"progressToken": token, "progress": 0, "message": "Started"});
        send(&mut out, reference_wire::notification("notifications/progress", Some(progress))).await;
        let Message::Notification { method, params } = next_message(&mut lines).await else {
            panic!("expected the cancel")
        };
        assert_eq!(method, "notifications/cancelled");
        let params = params.expect("params");
        assert_eq!(RequestId::from_value(&params["requestId"]), Some(id.clone()));
        assert!(params["reason"].is_string());
        // Answer anyway, late, then serve the next request normally.
        send(&mut out, reference_wire::response(&id, json!({"content": []}))).await;
        let Message::Request { id, method, .. } = next_message(&mut lines).await else {
            panic!("expected ping")
        };
        assert_eq!(method, "ping");
        send(&mut out, reference_wire::response(&id, json!({}))).await;
        assert!(lines.next_line().await.is_none(), "nothing after close");
    })
    .await;
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let mut on_progress = |_: &Progress| canceller.cancel();
    let options = RequestOptions::default()
        .progress(&mut on_progress)
        .cancel(cancel);
    let outcome = client.call_tool("work", json!({}), options).await;
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");
    client.ping().await.expect("ping after a late answer");
    client.close().await.expect("close");
}

#[tokio::test]
async fn concurrent_calls_get_unique_progress_tokens() {
    let client = scripted(|mut lines, mut out| async move {
        next_message(&mut lines).await; // notifications/initialized
        let mut tokens = Vec::new();
        let mut ids = Vec::new();
        while tokens.len() < 3 {
            if let Message::Request { id, params, .. } = next_message(&mut lines).await {
                tokens.push(params.expect("params")["_meta"]["progressToken"].clone());
                ids.push(id);
            }
        }
        for (id, token) in ids.iter().zip(&tokens) {
            let progress = json!({"progressToken": token, "progress": 0.5, "total": 1.0});
            send(
                &mut out,
                reference_wire::notification("notifications/progress", Some(progress)),
            )
            .await;
            send(
                &mut out,
                reference_wire::response(
                    id,
                    json!({"content": [{"type": "text", "text": token.to_string()}]}),
                ),
            )
            .await;
        }
    })
    .await;
    let call = |name: &'static str| {
        let client = &client;
        async move {
            let mut updates = 0;
            let mut on_progress = |p: &Progress| {
                assert_eq!((p.progress, p.total), (0.5, Some(1.0)));
                updates += 1;
            };
            let result = client
                .call_tool(
                    name,
                    json!({}),
                    RequestOptions::default().progress(&mut on_progress),
                )
                .await
                .expect("result");
            (result.text(), updates)
        }
    };
    let (a, b, c) = tokio::join!(call("a"), call("b"), call("c"));
    assert!(a.0 != b.0 && b.0 != c.0 && a.0 != c.0, "{a:?} {b:?} {c:?}");
    assert_eq!((a.1, b.1, c.1), (1, 1, 1));
}

#[tokio::test]
async fn server_exit_fails_pending_calls() {
    let client = scripted(|mut lines, out| async move {
        next_message(&mut lines).await;
        next_message(&mut lines).await;
        drop(out);
        drop(lines);
    })
    .await;
    let outcome = client
        .call_tool("work", json!({}), RequestOptions::default())
        .await;
    assert!(matches!(outcome, Err(CallError::Closed)), "{outcome:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn close_escalates_from_stdin_to_sigterm_to_sigkill() {
    use std::os::unix::process::ExitStatusExt;
    // Answers initialize, then ignores both stdin EOF and SIGTERM.
    let script = r#"trap '' TERM; read line; printf '%s\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"stubborn","version":"0"}}}'; while :; do sleep 1; done"#;
    let argv = ["sh", "-c", script].map(Into::into);
    let options = ClientOptions {
        shutdown_grace: Duration::from_millis(100),
        ..handshake_era()
    };
    let client = Client::spawn(&argv, options).await.expect("spawn");
    let start = std::time::Instant::now();
    let status = client.close().await.expect("close").expect("a status");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn close_of_a_well_behaved_server_is_a_clean_exit() {
    let me = env!("CARGO_BIN_EXE_reference-client");
    let argv = [me, "--serve"].map(Into::into);
    let client = Client::spawn(&argv, ClientOptions::default())
        .await
        .expect("spawn");
    let status = client.close().await.expect("close").expect("status");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn dropping_a_call_cancels_it() {
    let client = in_process().await;
    let call = client.call_tool("sleep", json!({"ms": 60_000}), RequestOptions::default());
    let gave_up = tokio::time::timeout(Duration::from_millis(20), call).await;
    assert!(gave_up.is_err(), "the sleep cannot have finished");
    assert_eq!(witness(&client).await, json!([1]));
}

#[tokio::test]
async fn connect_errors_are_typed() {
    // A server that never answers initialize: the connect times out, typed as such.
    let (client_side, _silent_peer) = tokio::io::duplex(1024);
    let (read, write) = tokio::io::split(client_side);
    let options = ClientOptions {
        initialize_timeout: Duration::from_millis(50),
        ..handshake_era()
    };
    let outcome = Client::connect(read, write, options).await;
    assert!(
        matches!(outcome, Err(ConnectError::TimedOut(d)) if d == Duration::from_millis(50)),
        "{:?}",
        outcome.err()
    );
    // A missing program is a spawn failure, not a timeout.
    let argv = ["/nonexistent/mcp-server"].map(Into::into);
    let outcome = Client::spawn(&argv, ClientOptions::default()).await;
    assert!(
        matches!(outcome, Err(ConnectError::Spawn(_))),
        "{:?}",
        outcome.err()
    );
    // A server that exits at once: the connection closed during the handshake.
    let argv = ["true"].map(Into::into);
    let outcome = Client::spawn(&argv, ClientOptions::default()).await;
    assert!(
        matches!(outcome, Err(ConnectError::Closed)),
        "{:?}",
        outcome.err()
    );
}

#[tokio::test]
async fn a_refused_or_foreign_handshake_is_typed() {
    for (answer, expect) in [
        (json!({"error": {"code": -32602, "message": "no"}}), "rpc"),
        (json!({"result": {"capabilities": {}}}), "invalid"),
        (
            json!({"result": {"protocolVersion": "1900-01-01", "capabilities": {}}}),
            "version",
        ),
    ] {
        let (client_side, peer_side) = tokio::io::duplex(64 * 1024);
        let (peer_read, mut peer_write) = tokio::io::split(peer_side);
        let answer2 = answer.clone();
        tokio::spawn(async move {
            let mut lines = LineReader::new(peer_read);
            let Message::Request { id, .. } = next_message(&mut lines).await else {
                panic!("expected initialize")
            };
            let mut reply = answer2;
            reply["jsonrpc"] = json!("2.0");
            reply["id"] = id.to_value();
            send(&mut peer_write, reply.to_string()).await;
            // Keep the pipe open until the client closes it.
            while lines.next_line().await.is_some() {}
        });
        let (read, write) = tokio::io::split(client_side);
        let outcome = Client::connect(read, write, handshake_era()).await;
        let ok = match (expect, &outcome) {
            ("rpc", Err(ConnectError::Rpc(e))) => e.code == -32602,
            ("invalid", Err(ConnectError::InvalidResult(_))) => true,
            ("version", Err(ConnectError::UnsupportedVersion(v))) => v == "1900-01-01",
            _ => false,
        };
        assert!(ok, "{answer}: {:?}", outcome.err());
    }
}
