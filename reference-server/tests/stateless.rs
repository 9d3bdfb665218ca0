//! The stateless 2026-07-28 era on both transports: era detection, the
//! per-request `_meta`, `server/discover`, version errors, `resultType`,
//! the HTTP header checks and statuses, and cancellation (a notification on
//! stdio, closing the request's stream on HTTP).

mod common;
mod common_http;

use common::Server;
use common_http::{
    messages, stamp, stamped, stateless_headers, text_of, Events, HttpServer, PATIENCE,
};
use reqwest::header::HeaderValue;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const ALL_VERSIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// The server never writes a request to the client in this era (RPC-15).
fn assert_not_a_request(message: &Value) {
    assert!(
        message.get("method").is_none() || message.get("id").is_none(),
        "the server sent a request: {message}"
    );
}

/// A stamped result: `resultType` and the server's identity in `_meta`.
fn assert_complete(response: &Value) {
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(
        response["result"]["_meta"][SERVER_INFO]["name"], "reference-server",
        "{response}"
    );
}

// stdio

/// Sends a stamped request on stdio and returns its response.
fn stdio_request(server: &mut Server, id: Value, method: &str, params: Value) -> Value {
    server.send(stamped(id.clone(), method, params));
    let line = server.next();
    assert_not_a_request(&line);
    assert_eq!(line["id"], id, "{line}");
    line
}

fn stdio_witness(server: &mut Server, id: &str) -> Value {
    let response = stdio_request(
        server,
        json!(id),
        "tools/call",
        json!({"name": "cancellations", "arguments": {}}),
    );
    serde_json::from_str(text_of(&response)).expect("witness is json")
}

#[test]
fn stdio_discover_needs_no_handshake_and_lists_every_version() {
    let mut server = Server::spawn();
    let discovered = stdio_request(&mut server, json!(1), "server/discover", json!({}));
    assert_complete(&discovered);
    let result = &discovered["result"];
    assert_eq!(result["supportedVersions"], json!(ALL_VERSIONS));
    assert_eq!(
        result["capabilities"],
        json!({"tools": {"listChanged": true}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    assert_eq!(
        (result["ttlMs"].clone(), result["cacheScope"].clone()),
        (json!(0), json!("public"))
    );
    let list = stdio_request(&mut server, json!(2), "tools/list", json!({}));
    assert_complete(&list);
    // The fixture profile, `job` and `work_required`, which only run as tasks (TASKS.md).
    assert_eq!(list["result"]["tools"].as_array().map(Vec::len), Some(8));
    assert_eq!(list["result"]["ttlMs"], 0);
    let echo = stdio_request(
        &mut server,
        json!(3),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "stateless"}}),
    );
    assert_complete(&echo);
    assert_eq!(text_of(&echo), "stateless");
    let bad = stdio_request(
        &mut server,
        json!(4),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": 5}}),
    );
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert_complete(&bad);
}

#[test]
fn stdio_missing_meta_fields_are_invalid_params() {
    let mut server = Server::spawn();
    let partial = [
        json!({"io.modelcontextprotocol/clientCapabilities": {}}),
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
    ];
    for (n, meta) in partial.into_iter().enumerate() {
        server.send_request(json!(n), "tools/list", json!({"_meta": meta}));
        let reply = server.next();
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
    }
    // server/discover is stateless by name, so its missing `_meta` is -32602 too.
    server.send_request(json!("d"), "server/discover", json!({}));
    assert_eq!(server.next()["error"]["code"], -32602);
}

#[test]
fn stdio_unsupported_versions_get_32022_with_the_supported_list() {
    let mut server = Server::spawn();
    let mut params = json!({"_meta": stamp("1900-01-01")});
    server.send_request(json!(1), "tools/list", params.take());
    let reply = server.next();
    assert_eq!(reply["error"]["code"], -32022, "{reply}");
    assert_eq!(
        reply["error"]["data"],
        json!({"supported": ALL_VERSIONS, "requested": "1900-01-01"})
    );
    // A handshake-era version in a stamp is spoken only after initialize.
    server.send_request(
        json!(2),
        "tools/list",
        json!({"_meta": stamp("2025-11-25")}),
    );
    let reply = server.next();
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .contains("initialize"));
}

#[test]
fn stdio_ping_and_initialize_are_unknown_methods_in_the_stateless_era() {
    let mut server = Server::spawn();
    for method in ["ping", "initialize", "harness/nonexistent"] {
        let reply = stdio_request(&mut server, json!(method), method, json!({}));
        assert_eq!(reply["error"]["code"], -32601, "{reply}");
    }
}

#[test]
fn stdio_a_cancel_notification_stops_a_stamped_request() {
    let mut server = Server::spawn();
    server.send(stamped(
        json!(1),
        "tools/call",
        json!({"name": "work", "arguments": {}, "_meta": {"progressToken": "p"}}),
    ));
    let progress = server.next();
    assert_eq!(progress["params"]["message"], "Started", "{progress}");
    server.cancel(json!(1));
    // The barrier probe of this era is server/discover: nothing for request 1
    // may come after the cancel has been read.
    let discovered = stdio_request(&mut server, json!("b"), "server/discover", json!({}));
    assert_complete(&discovered);
    assert_eq!(stdio_witness(&mut server, "w"), json!([1]));
}

#[test]
fn stdio_serves_both_eras_in_one_process() {
    let mut server = Server::initialized("2025-06-18");
    let legacy = server.tool(json!(1), "echo", json!({"text": "legacy"}));
    assert_eq!(legacy["result"].get("resultType"), None, "{legacy}");
    let modern = stdio_request(
        &mut server,
        json!(2),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "modern"}}),
    );
    assert_complete(&modern);
    // The handshake still holds for unstamped requests.
    assert_eq!(
        server.request(json!(3), "ping", json!({}))["result"],
        json!({})
    );
}

// Streamable HTTP

#[tokio::test]
async fn http_discover_and_tools_answer_without_a_session() {
    for args in [&[][..], &["--json-response"][..]] {
        let server = HttpServer::start(args);
        let client = server.client();
        let discover = stamped(json!(1), "server/discover", json!({}));
        let response = client.post_stateless(&discover).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            response.headers().get("mcp-session-id").is_none(),
            "no session ids (HTTP-20)"
        );
        let discovered = messages(response).await;
        assert_complete(&discovered[0]);
        assert_eq!(
            discovered[0]["result"]["supportedVersions"],
            json!(ALL_VERSIONS)
        );
        let echo = client
            .stateless_tool(json!(2), "echo", json!({"text": "hi"}))
            .await;
        assert_complete(&echo[0]);
        assert_eq!(text_of(&echo[0]), "hi");
        // A stray session id is ignored, not checked.
        let list = stamped(json!(3), "tools/list", json!({}));
        let mut headers = stateless_headers(&list);
        headers.insert("mcp-session-id", HeaderValue::from_static("not-a-session"));
        let response = client.post_with(&list, headers).await;
        assert_eq!(response.status(), StatusCode::OK, "{args:?}");
        for message in messages(response).await {
            assert_not_a_request(&message);
        }
    }
}

#[tokio::test]
#[allow(
    clippy::too_many_lines,
    reason = "one request per error, each with the status it maps to"
)]
async fn http_statuses_follow_the_error() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let error_of = |body: &Value| body["error"]["code"].as_i64().unwrap_or_default();
    let post = |request: Value, headers| {
        let client = &client;
        async move {
            let response = client.post_with(&request, headers).await;
            let status = response.status();
            let body: Value =
                serde_json::from_slice(&response.bytes().await.unwrap()).expect("json body");
            (status, body)
        }
    };

    // Missing `_meta` fields: 400 with -32602 (LIF-10).
    let unstamped = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let (status, body) = post(unstamped.clone(), stateless_headers(&unstamped)).await;
    assert_eq!(
        (status, error_of(&body)),
        (StatusCode::BAD_REQUEST, -32602),
        "{body}"
    );

    // Unsupported version: 400 with -32022 and the list (LIF-12).
    let mut old = stamped(json!(2), "tools/list", json!({}));
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let (status, body) = post(old.clone(), stateless_headers(&old)).await;
    assert_eq!(
        (status, error_of(&body)),
        (StatusCode::BAD_REQUEST, -32022),
        "{body}"
    );
    assert_eq!(body["error"]["data"]["supported"], json!(ALL_VERSIONS));
    assert_eq!(body["error"]["data"]["requested"], "1900-01-01");

    // Unknown methods, ping included: 404 with -32601 (RPC-09, PING-03).
    for method in ["ping", "resources/list"] {
        let request = stamped(json!(3), method, json!({}));
        let (status, body) = post(request.clone(), stateless_headers(&request)).await;
        assert_eq!(
            (status, error_of(&body)),
            (StatusCode::NOT_FOUND, -32601),
            "{method}: {body}"
        );
    }

    // Headers that do not mirror the body: 400 with -32020 (HTTP-19).
    let call = stamped(
        json!(4),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    let tampered: Vec<(&str, Option<&str>)> = vec![
        ("mcp-protocol-version", None),
        ("mcp-protocol-version", Some("2025-11-25")),
        ("mcp-method", None),
        ("mcp-method", Some("tools/list")),
        ("mcp-name", None),
        ("mcp-name", Some("sleep")),
        ("mcp-name", Some("=?base64?c2xlZXA=?=")),
    ];
    for (header, value) in tampered {
        let mut headers = stateless_headers(&call);
        match value {
            Some(value) => {
                headers.insert(header, HeaderValue::from_static(value));
            }
            None => {
                headers.remove(header);
            }
        }
        let (status, body) = post(call.clone(), headers).await;
        assert_eq!(
            (status, error_of(&body)),
            (StatusCode::BAD_REQUEST, -32020),
            "{header}: {value:?}: {body}"
        );
        assert_eq!(body["id"], 4);
    }
    // The base64 form of the right name is accepted.
    let mut headers = stateless_headers(&call);
    headers.insert("mcp-name", HeaderValue::from_static("=?base64?ZWNobw==?="));
    let response = client.post_with(&call, headers).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(text_of(&messages(response).await[0]), "x");

    // A tool error is an ordinary 200 response.
    let unknown = stamped(
        json!(5),
        "tools/call",
        json!({"name": "nope", "arguments": {}}),
    );
    let response = client.post_stateless(&unknown).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(messages(response).await[0]["error"]["code"], -32602);
}

#[tokio::test]
async fn http_get_and_delete_are_405_and_notifications_202() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let get = client
        .http
        .get(&client.url)
        .header("mcp-protocol-version", "2026-07-28")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    let delete = client
        .http
        .delete(&client.url)
        .header("mcp-protocol-version", "2026-07-28")
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), StatusCode::METHOD_NOT_ALLOWED);
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let response = client.post_with(&cancel, stateless_headers(&cancel)).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
    let response = client.post_with(&answer, stateless_headers(&answer)).await;
    assert_eq!(
        response.status(),
        StatusCode::BAD_REQUEST,
        "clients send no responses (RPC-15)"
    );
}

/// Polls the per-process witness until it holds `expected` (the server
/// learns of a closed stream a moment after the client closes it).
async fn witness_becomes(client: &common_http::Client, expected: Value) {
    let deadline = Instant::now() + PATIENCE;
    let mut n = 0;
    loop {
        n += 1;
        let witness = client.stateless_cancellations(json!(format!("w{n}"))).await;
        if witness == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "witness stuck at {witness}, expected {expected}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn http_closing_the_sse_stream_cancels_the_request() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let work = stamped(
        json!("job"),
        "tools/call",
        json!({"name": "work", "arguments": {}, "_meta": {"progressToken": "p"}}),
    );
    let mut events = Events::new(client.post_stateless(&work).await);
    assert_eq!(
        events.next().await.expect("progress")["params"]["message"],
        "Started"
    );
    drop(events);
    witness_becomes(&client, json!(["job"])).await;
    // A request that completes is not cancelled by its stream's end.
    let slept = client
        .stateless_tool(json!("s"), "sleep", json!({"ms": 1}))
        .await;
    assert_eq!(text_of(&slept[0]), "slept");
    witness_becomes(&client, json!(["job"])).await;
}

#[tokio::test]
async fn http_closing_a_pending_json_request_cancels_it() {
    let server = HttpServer::start(&["--json-response"]);
    let client = server.client();
    let work = stamped(
        json!(9),
        "tools/call",
        json!({"name": "work", "arguments": {}}),
    );
    // The request is abandoned before its response could ever come.
    let abandoned =
        tokio::time::timeout(Duration::from_millis(300), client.post_stateless(&work)).await;
    assert!(abandoned.is_err(), "work answered on its own");
    witness_becomes(&client, json!([9])).await;
}

#[tokio::test]
async fn http_the_stateless_witness_is_per_process_and_ids_may_coincide() {
    let server = HttpServer::start(&[]);
    let (a, b) = (server.client(), server.client());
    let work = stamped(
        json!(1),
        "tools/call",
        json!({"name": "work", "arguments": {}, "_meta": {"progressToken": 1}}),
    );
    let mut a_events = Events::new(a.post_stateless(&work).await);
    let mut b_events = Events::new(b.post_stateless(&work).await);
    assert!(a_events.next().await.is_some());
    assert!(
        b_events.next().await.is_some(),
        "the same id from another client runs too"
    );
    drop(b_events);
    // B's close cancels B's request only; A's stream is still open.
    witness_becomes(&a, json!([1])).await;
    let echo = a
        .stateless_tool(json!(2), "echo", json!({"text": "a"}))
        .await;
    assert_eq!(text_of(&echo[0]), "a");
    drop(a_events);
    witness_becomes(&b, json!([1, 1])).await;
}

#[tokio::test]
async fn http_serves_both_eras_at_once() {
    let server = HttpServer::start(&[]);
    let mut legacy = server.client();
    legacy.initialize("2025-11-25").await;
    let modern = server.client();
    let echo = modern
        .stateless_tool(json!(1), "echo", json!({"text": "modern"}))
        .await;
    assert_complete(&echo[0]);
    let old = legacy
        .tool(json!(1), "echo", json!({"text": "legacy"}))
        .await;
    assert_eq!(old["result"].get("resultType"), None);
    assert_eq!(text_of(&old), "legacy");
}
