//! Streamable HTTP in the handshake era (2025-03-26 … 2025-11-25), over
//! real HTTP against the real binary: response streams, sessions, version
//! header, Origin, cancellation, and the limits that keep hostile clients
//! from exhausting the server.

mod common_http;

use common_http::*;
use reqwest::header::HeaderValue;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

#[tokio::test]
async fn listens_on_loopback_and_prints_one_line() {
    let server = HttpServer::start(&[]);
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    assert!(server.url.ends_with("/mcp"), "{}", server.url);
    let port: u16 = server
        .authority()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .expect("port");
    assert_ne!(port, 0, "port 0 must be replaced by the bound port");
    let mut client = server.client();
    client.initialize("2025-11-25").await;
    assert!(
        server.stderr.try_recv().is_err(),
        "only one stderr line when not verbose"
    );
}

#[tokio::test]
async fn sse_mode_streams_progress_then_the_response_and_ends() {
    let server = HttpServer::start(&[]);
    for version in VERSIONS {
        let mut client = server.client();
        let init = client.initialize(version).await;
        assert_eq!(init["result"]["protocolVersion"], version);
        let session = client.session.clone().expect("session");
        assert_eq!(session.len(), 32, "{session}");
        assert!(
            session.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "{session}"
        );

        let response = client
            .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "ticker", "arguments": {"interval_ms": 1},
                    "_meta": {"progressToken": "t"}}}))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(content_type(&response).starts_with("text/event-stream"));
        assert_eq!(response.headers()["x-accel-buffering"], "no");
        let mut events = Events::new(response);
        for n in 1..=3 {
            let progress = events.next().await.expect("progress");
            assert_eq!(progress["method"], "notifications/progress", "{progress}");
            assert_eq!(progress["params"]["progress"], n);
        }
        // The response arrives on the request's own stream, which then ends.
        let slept = client
            .request(
                json!(2),
                "tools/call",
                json!({"name": "sleep", "arguments": {"ms": 1}}),
            )
            .await;
        assert_eq!(slept.len(), 1, "{slept:?}");
        assert_eq!(text_of(&slept[0]), "slept");
        assert_eq!(client.cancel(json!(1)).await.status(), StatusCode::ACCEPTED);
        while let Some(message) = events.next().await {
            assert_eq!(message["method"], "notifications/progress", "{message}");
        }
    }
}

#[tokio::test]
async fn json_mode_answers_with_one_body() {
    let server = HttpServer::start(&["--json-response"]);
    let mut client = server.client();
    client.initialize("2025-06-18").await;
    let response = client
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"ms": 20}, "_meta": {"progressToken": 1}}}))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(content_type(&response).starts_with("application/json"));
    let body: Value = serde_json::from_slice(&response.bytes().await.expect("body")).expect("json");
    assert_eq!((body["id"].clone(), text_of(&body)), (json!(1), "slept"));
    let list = client.request(json!(2), "tools/list", json!({})).await;
    assert_eq!(list[0]["result"]["tools"].as_array().map(Vec::len), Some(6));
    let ping = client.request(json!(3), "ping", json!({})).await;
    assert_eq!(ping, [json!({"jsonrpc": "2.0", "id": 3, "result": {}})]);
}

#[tokio::test]
async fn json_mode_cancel_ends_the_request_with_no_content() {
    let server = HttpServer::start(&["--json-response"]);
    let mut client = server.client();
    client.initialize("2025-11-25").await;
    let call = json!({"jsonrpc": "2.0", "id": "w", "method": "tools/call",
        "params": {"name": "work", "arguments": {}}});
    let work = client.post(&call);
    let cancel = async {
        // The witness answers once the cancel below has been observed, so
        // poll until `work` is in flight (its id is taken), then cancel it.
        loop {
            let probe = client
                .request(
                    json!("w"),
                    "tools/call",
                    json!({"name": "echo", "arguments": {"text": "x"}}),
                )
                .await;
            if probe[0]["error"]["code"] == -32600 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(
            client.cancel(json!("w")).await.status(),
            StatusCode::ACCEPTED
        );
    };
    let (response, ()) = tokio::join!(work, cancel);
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert!(response.bytes().await.expect("body").is_empty());
    assert_eq!(client.cancellations(json!("c")).await, json!(["w"]));
}

#[tokio::test]
async fn notifications_and_responses_get_202_with_no_body() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize("2025-11-25").await;
    for message in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/x-unknown", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 404}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": null}}),
        json!({"jsonrpc": "2.0", "id": 9, "result": {}}),
    ] {
        let response = client.post(&message).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED, "{message}");
        assert!(
            response.bytes().await.expect("body").is_empty(),
            "{message}"
        );
    }
}

#[tokio::test]
async fn sessions_are_required_ended_by_delete_and_then_unknown() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize("2025-11-25").await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});

    let mut without = client.headers();
    without.remove("mcp-session-id");
    let response = client.post_with(&ping, without).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).expect("json");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Mcp-Session-Id"),
        "{body}"
    );

    let mut forged = client.headers();
    forged.insert(
        "mcp-session-id",
        HeaderValue::from_static("0123456789abcdef0123456789abcdef"),
    );
    assert_eq!(
        client.post_with(&ping, forged).await.status(),
        StatusCode::NOT_FOUND
    );

    assert_eq!(
        client.request(json!(2), "ping", json!({})).await[0]["result"],
        json!({})
    );
    let delete = |client: &Client| {
        client
            .http
            .delete(&client.url)
            .header("mcp-session-id", client.session.clone().unwrap())
            .send()
    };
    assert_eq!(
        delete(&client).await.unwrap().status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(client.post(&ping).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        delete(&client).await.unwrap().status(),
        StatusCode::NOT_FOUND
    );

    // A new initialize, without the old id, starts a new session.
    client.session = None;
    client.initialize("2025-11-25").await;
    assert_eq!(
        client.request(json!(3), "ping", json!({})).await[0]["result"],
        json!({})
    );
}

#[tokio::test]
async fn delete_ends_the_sessions_running_requests() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize("2025-11-25").await;
    let response = client
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "work", "arguments": {}, "_meta": {"progressToken": 1}}}))
        .await;
    let mut events = Events::new(response);
    assert_eq!(
        events.next().await.expect("progress")["method"],
        "notifications/progress"
    );
    let deleted = client
        .http
        .delete(&client.url)
        .header("mcp-session-id", client.session.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        events.next().await,
        None,
        "the stream ends without a response"
    );
}

#[tokio::test]
async fn the_protocol_version_header_is_checked() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize("2025-06-18").await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    // Another handshake-era version than the session's is served (a client should send the
    // negotiated one); one of the stateless era, or none at all, is refused.
    for (value, status) in [
        ("banana", StatusCode::BAD_REQUEST),
        ("2026-07-28", StatusCode::BAD_REQUEST),
        ("2025-11-25", StatusCode::OK),
        ("2025-03-26", StatusCode::OK),
        ("2025-06-18", StatusCode::OK),
    ] {
        let mut headers = client.headers();
        headers.insert("mcp-protocol-version", HeaderValue::from_static(value));
        let response = client.post_with(&ping, headers).await;
        assert_eq!(response.status(), status, "{value}");
    }
    let mut absent = client.headers();
    absent.remove("mcp-protocol-version");
    assert_eq!(
        client.post_with(&ping, absent).await.status(),
        StatusCode::OK
    );
    // Also on initialize itself.
    let mut fresh = server.client();
    fresh.version = Some("banana".into());
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    assert_eq!(fresh.post(&init).await.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn foreign_origins_get_403_and_allowed_ones_are_served() {
    let server = HttpServer::start(&["--allow-origin", "https://app.example"]);
    let client = server.client();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    for (origin, status) in [
        (Some("http://attacker.example"), StatusCode::FORBIDDEN),
        (Some("null"), StatusCode::FORBIDDEN),
        (
            Some("http://localhost.attacker.example"),
            StatusCode::FORBIDDEN,
        ),
        (Some("http://localhost:5173"), StatusCode::OK),
        (Some("http://127.0.0.1"), StatusCode::OK),
        (Some("http://[::1]:8080"), StatusCode::OK),
        (Some("https://app.example"), StatusCode::OK),
        (None, StatusCode::OK),
    ] {
        let mut headers = client.headers();
        if let Some(origin) = origin {
            headers.insert("origin", HeaderValue::from_static(origin));
        }
        let response = client.post_with(&init, headers).await;
        assert_eq!(response.status(), status, "{origin:?}");
        if status == StatusCode::FORBIDDEN {
            let body: Value =
                serde_json::from_slice(&response.bytes().await.unwrap()).expect("json");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("--allow-origin"),
                "{body}"
            );
        }
    }
    // Also on DELETE and GET.
    let forbidden = client
        .http
        .get(&client.url)
        .header("origin", "http://attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(forbidden.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_posted_cancel_stops_the_work_and_closes_its_stream_without_a_response() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize("2025-11-25").await;
    let response = client
        .post(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "work", "arguments": {}, "_meta": {"progressToken": "p"}}}))
        .await;
    let mut events = Events::new(response);
    let started = events.next().await.expect("progress");
    assert_eq!(started["params"]["message"], "Started");
    assert_eq!(client.cancel(json!(7)).await.status(), StatusCode::ACCEPTED);
    assert_eq!(
        events.next().await,
        None,
        "no response, and the stream is closed"
    );
    assert_eq!(client.cancellations(json!("w")).await, json!([7]));
    // The session goes on serving.
    let echo = client
        .tool(json!(8), "echo", json!({"text": "alive"}))
        .await;
    assert_eq!(text_of(&echo), "alive");
}

#[tokio::test]
async fn closing_a_stream_without_a_cancel_does_not_stop_the_work() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize("2025-11-25").await;
    // `work` runs until cancelled: drop its stream after its first event.
    let response = client
        .post(&json!({"jsonrpc": "2.0", "id": "w", "method": "tools/call",
            "params": {"name": "work", "arguments": {}, "_meta": {"progressToken": "p"}}}))
        .await;
    let mut events = Events::new(response);
    assert!(events.next().await.is_some());
    drop(events);
    // Not cancelled: the witness is empty, and the id is still taken.
    assert_eq!(client.cancellations(json!("c1")).await, json!([]));
    let taken = client.tool(json!("w"), "echo", json!({"text": "x"})).await;
    assert_eq!(taken["error"]["code"], -32600, "{taken}");
    // It is still running: a later cancel reaches it and it observes it (HTTP-10).
    assert_eq!(
        client.cancel(json!("w")).await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(client.cancellations(json!("c2")).await, json!(["w"]));

    // `sleep` whose stream is dropped at once still runs to completion.
    let response = client
        .post(&json!({"jsonrpc": "2.0", "id": "s", "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"ms": 200}}}))
        .await;
    drop(response);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let probe = client
            .tool(json!("s"), "echo", json!({"text": "free?"}))
            .await;
        if text_of(&probe) == "free?" {
            break; // the id was released: the sleep ended
        }
        assert!(Instant::now() < deadline, "the sleep never ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        client.cancellations(json!("c3")).await,
        json!(["w"]),
        "the sleep completed rather than being cancelled"
    );
}

#[tokio::test]
async fn cancels_are_scoped_to_their_session() {
    let server = HttpServer::start(&[]);
    let (mut a, mut b) = (server.client(), server.client());
    a.initialize("2025-11-25").await;
    b.initialize("2025-11-25").await;
    assert_ne!(a.session, b.session);
    let work = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "work", "arguments": {}, "_meta": {"progressToken": "p"}}});
    let mut a_events = Events::new(a.post(&work).await);
    let mut b_events = Events::new(b.post(&work).await);
    assert!(a_events.next().await.is_some());
    assert!(b_events.next().await.is_some());
    assert_eq!(b.cancel(json!(1)).await.status(), StatusCode::ACCEPTED);
    assert_eq!(b_events.next().await, None);
    assert_eq!(b.cancellations(json!("w")).await, json!([1]));
    assert_eq!(
        a.cancellations(json!("w")).await,
        json!([]),
        "A's request 1 was touched"
    );
    // A's id 1 is still in flight.
    let taken = a.tool(json!(1), "echo", json!({"text": "x"})).await;
    assert_eq!(taken["error"]["code"], -32600);
    assert_eq!(a.cancel(json!(1)).await.status(), StatusCode::ACCEPTED);
    assert_eq!(a_events.next().await, None);
}

#[tokio::test]
async fn get_has_no_stream_and_other_paths_are_not_found() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let get = client
        .http
        .get(&client.url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(get.headers()["allow"].to_str().unwrap().contains("POST"));
    let other = client
        .http
        .post(client.url.replace("/mcp", "/other"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bad_bodies_and_headers_get_clear_4xx() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize("2025-11-25").await;
    type Case = (&'static str, Vec<(&'static str, &'static str)>, StatusCode);
    let cases: Vec<Case> = vec![
        ("{", vec![], StatusCode::BAD_REQUEST),
        ("[]", vec![], StatusCode::BAD_REQUEST),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            vec![("content-type", "text/plain")],
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            vec![("accept", "application/json")],
            StatusCode::NOT_ACCEPTABLE,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            vec![("accept", "text/*")],
            StatusCode::OK,
        ),
    ];
    for (body, overrides, status) in cases {
        let mut headers = client.headers();
        for (name, value) in overrides {
            headers.insert(name, HeaderValue::from_static(value));
        }
        let response = client
            .http
            .post(&client.url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{body}");
    }
}

#[tokio::test]
async fn an_oversized_body_gets_413() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize("2025-11-25").await;
    let text = "x".repeat(5 * 1024 * 1024);
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}}});
    assert_eq!(
        client.post(&big).await.status(),
        StatusCode::PAYLOAD_TOO_LARGE
    );
    let echo = client
        .tool(json!(2), "echo", json!({"text": "still here"}))
        .await;
    assert_eq!(text_of(&echo), "still here");
}

#[tokio::test]
async fn oversized_request_heads_get_431() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let mut long = client.headers();
    long.insert(
        "x-long",
        HeaderValue::from_str(&"x".repeat(20_000)).unwrap(),
    );
    let response = client.post_with(&ping, long).await;
    assert_eq!(
        response.status(),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );
    let mut many = client.headers();
    for n in 0..70 {
        many.insert(
            reqwest::header::HeaderName::from_bytes(format!("x-h{n}").as_bytes()).unwrap(),
            HeaderValue::from_static("1"),
        );
    }
    let response = client.post_with(&ping, many).await;
    assert_eq!(
        response.status(),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );
}

#[tokio::test]
async fn the_session_table_is_bounded() {
    let server = HttpServer::start(&["--max-sessions", "2"]);
    let (mut a, mut b, mut c) = (server.client(), server.client(), server.client());
    a.initialize("2025-11-25").await;
    b.initialize("2025-11-25").await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let full = c.post(&init).await;
    assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = serde_json::from_slice(&full.bytes().await.unwrap()).expect("json");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too many sessions"),
        "{body}"
    );
    let deleted = a
        .http
        .delete(&a.url)
        .header("mcp-session-id", a.session.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    c.initialize("2025-11-25").await;
}

#[tokio::test]
async fn idle_sessions_end_and_free_their_slot() {
    let server = HttpServer::start(&["--max-sessions", "1", "--session-idle-secs", "1"]);
    let mut first = server.client();
    first.initialize("2025-11-25").await;
    let started = Instant::now();
    let mut second = server.client();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    loop {
        let response = second.post(&init).await;
        if response.status() == StatusCode::OK {
            break;
        }
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(started.elapsed() < PATIENCE, "the idle session never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "ended before it was idle"
    );
    let gone = first
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    second.session = None;
}

#[test]
fn slow_and_silent_connections_are_closed_after_the_header_timeout() {
    let server = HttpServer::start(&["--header-timeout-ms", "300"]);
    let started = Instant::now();
    // One that trickles a request head and never finishes it ...
    let mut slow = TcpStream::connect(server.authority()).expect("connect");
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
        .expect("write");
    // ... and one that sends nothing at all.
    let mut silent = TcpStream::connect(server.authority()).expect("connect");
    for socket in [&mut slow, &mut silent] {
        socket.set_read_timeout(Some(PATIENCE)).expect("timeout");
        let mut buf = [0u8; 512];
        // The server closes the connection (maybe after a 408 response).
        loop {
            match socket.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("the connection stayed open: {e}"),
            }
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // And the server is still serving.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = server.client();
        client.initialize("2025-11-25").await;
    });
}

#[test]
fn sigterm_ends_the_server_with_streams_open() {
    let mut server = HttpServer::start(&[]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let events = runtime.block_on(async {
        let mut client = server.client();
        client.initialize("2025-11-25").await;
        let response = client
            .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "work", "arguments": {}, "_meta": {"progressToken": 1}}}))
            .await;
        let mut events = Events::new(response);
        assert!(events.next().await.is_some());
        events
    });
    server.terminate();
    assert!(server.wait_exit(Duration::from_secs(5)).success());
    drop(events);
}
