//! `conformance record --listen --to` over Streamable HTTP, in front of the reference server:
//! requests and responses pass with their status and body, an SSE stream is passed as it
//! arrives, a client that closes a stream closes the server's (the 2026-07-28 cancel, which
//! the server's witness sees) and the trace says so, secrets stay out of the trace.

#![allow(unsafe_code)] // libc: signals the recorder it starts

#[path = "support/cli.rs"]
pub mod cli;
#[path = "support/record.rs"]
pub mod record;

use bytes::Bytes;
use cli::TempDir;
use conformance::trace::{EndBy, Event, Party, Transport, REDACTED};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use record::{events, messages, summary, trace_in, wait, CONFORMANCE};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A process killed when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` and reads its stderr until a line holding `listening on http://`; returns the
/// process and the URL the line names.
fn listening(mut cmd: Command) -> (Running, String) {
    let mut child = cmd.stderr(Stdio::piped()).spawn().expect("starts");
    let mut err = BufReader::new(child.stderr.take().expect("piped"));
    let mut line = String::new();
    while !line.contains("listening on http://") {
        line.clear();
        assert!(
            err.read_line(&mut line).expect("stderr") > 0,
            "ended before listening"
        );
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let url = line
        .split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a URL")
        .to_string();
    (Running(child), url)
}

fn reference() -> (Running, String) {
    reference_with(&[])
}

fn reference_with(extra: &[&str]) -> (Running, String) {
    let mut cmd = Command::new(CONFORMANCE);
    cmd.args(["reference-server", "--http", "127.0.0.1:0"])
        .args(extra);
    listening(cmd)
}

fn recorder(to: &str, dir: &TempDir, extra: &[&str]) -> (Running, String) {
    let mut cmd = Command::new(CONFORMANCE);
    cmd.args(["record", "--listen", "127.0.0.1:0", "--to", to, "-o"])
        .arg(dir.path())
        .args(extra);
    listening(cmd)
}

/// A 2026-07-28 request (stateless: its version and capabilities in `_meta`), with the
/// headers that name its method and, for a tool call, the tool.
struct Stateless {
    body: String,
    method: &'static str,
    name: Option<&'static str>,
}

fn stateless(id: u64, method: &'static str) -> Stateless {
    let meta = r#""_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{meta}}}}}"#);
    Stateless {
        body,
        method,
        name: None,
    }
}

fn call(id: u64, tool: &'static str) -> Stateless {
    let meta = r#""_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}},{meta}}}}}"#
    );
    Stateless {
        body,
        method: "tools/call",
        name: Some(tool),
    }
}

async fn post(url: &str, message: Stateless, auth: Option<&str>) -> Response<Incoming> {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let mut request = Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", message.method);
    if let Some(name) = message.name {
        request = request.header("mcp-name", name);
    }
    if let Some(auth) = auth {
        request = request
            .header("authorization", auth)
            .header("x-api-key", auth);
    }
    let request = request
        .body(Full::new(Bytes::from(message.body)))
        .expect("a request");
    client.request(request).await.expect("an answer")
}

async fn whole(response: Response<Incoming>) -> (u16, String) {
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The request ids the server's witness saw cancelled, asked through `url`.
async fn cancelled(url: &str) -> String {
    whole(post(url, call(99, "cancellations"), None).await)
        .await
        .1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_gets_what_the_server_answers() {
    let (_server, direct) = reference();
    let dir = TempDir::new("http-same");
    let (_recorder, through) = recorder(&direct, &dir, &[]);
    for url in [&direct, &through] {
        let (status, body) = whole(post(url, stateless(1, "server/discover"), None).await).await;
        assert_eq!(status, 200, "{url}: {body}");
        assert!(body.contains("supportedVersions"), "{url}: {body}");
    }
    let (status, _) = whole(post(&through, stateless(2, "no/such"), None).await).await;
    assert_eq!(status, 404, "an unknown method's status passes");
    let trace = trace_in(dir.path());
    assert_eq!(trace.header.transport, Transport::Http);
    assert_eq!(trace.header.server.url.as_deref(), Some(direct.as_str()));
    assert_eq!(messages(&trace, Party::Client).len(), 2);
    assert!(events(&trace).iter().any(|e| matches!(
        e,
        Event::Response {
            exchange: 2,
            status: 404,
            ..
        }
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_the_client_closes_is_closed_upstream_and_recorded_as_ended_by_the_client() {
    let (_server, direct) = reference();
    let dir = TempDir::new("http-cancel");
    let (_recorder, through) = recorder(&direct, &dir, &["--redact", "header:x-api-key"]);
    let response = post(&through, call(1, "work"), Some("Bearer s3cret")).await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut seen = String::new();
    while !seen.contains("notifications/progress") {
        let frame = body
            .frame()
            .await
            .expect("the stream goes on")
            .expect("a frame");
        if let Some(data) = frame.data_ref() {
            seen.push_str(&String::from_utf8_lossy(data));
        }
    }
    drop(body);
    let witness = saw_cancelled(&direct).await;
    assert!(
        witness.contains("[1]"),
        "the server saw its stream closed: {witness}"
    );
    let end = Event::End {
        exchange: 1,
        by: EndBy::Client,
        error: None,
    };
    let all = recorded(&dir, &end).await;
    let trace = trace_in(dir.path());
    assert!(all.contains(&end), "{all:#?}");
    let progress = all.iter().position(|e| matches!(e, Event::Message { from: Party::Server, text, exchange: Some(1), .. } if text.contains("notifications/progress")));
    let ended = all.iter().position(|e| *e == end);
    assert!(
        progress < ended,
        "the progress is recorded before the end: {all:#?}"
    );
    let text = std::fs::read_to_string(&trace.path).expect("the trace");
    assert!(!text.contains("s3cret"), "{text}");
    let Some(Event::Request { headers, .. }) = all.first() else {
        panic!("{all:#?}")
    };
    assert_eq!(headers["authorization"], REDACTED);
    assert_eq!(headers["x-api-key"], REDACTED);
    assert_eq!(trace.header.redacted, ["header:x-api-key"]);
}

/// Sends `method` to `url` with `headers` and an empty body, or `body` as JSON.
async fn send(
    url: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Response<Incoming> {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let mut request = Request::builder().method(method).uri(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = Full::new(Bytes::from(body.unwrap_or("").to_string()));
    client
        .request(request.body(body).expect("a request"))
        .await
        .expect("an answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_delete_pass_with_their_statuses_and_headers() {
    let (_server, direct) = reference();
    let dir = TempDir::new("http-get-delete");
    let (_recorder, through) = recorder(&direct, &dir, &[]);
    let json = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let opened = send(&through, "POST", &json, Some(initialize)).await;
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .expect("text")
        .to_string();
    let _ = whole(opened).await;
    let get = send(&through, "GET", &[("accept", "text/event-stream")], None).await;
    assert_eq!(get.status(), 405);
    assert_eq!(get.headers()["allow"], "POST, DELETE");
    let with_session = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let deleted = send(&through, "DELETE", &with_session, None).await;
    assert_eq!(deleted.status(), 204);
    let again = send(&through, "DELETE", &with_session, None).await;
    assert_eq!(again.status(), 404, "the server's session ended");
    let all = events(&trace_in(dir.path()));
    let requests: Vec<(u64, &str)> = all
        .iter()
        .filter_map(|e| match e {
            Event::Request {
                exchange, method, ..
            } => Some((*exchange, method.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        requests,
        [(1, "POST"), (2, "GET"), (3, "DELETE"), (4, "DELETE")]
    );
    let statuses: Vec<u16> = all
        .iter()
        .filter_map(|e| match e {
            Event::Response { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(statuses, [200, 405, 204, 404]);
}

/// Waits (at most 10 s) until the witness behind `url` saw request 1 cancelled.
async fn saw_cancelled(url: &str) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    let mut witness = cancelled(url).await;
    while !witness.contains("[1]") && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
        witness = cancelled(url).await;
    }
    witness
}

/// Waits (at most 10 s) until the trace in `dir` holds an event that `wanted` picks;
/// returns its events.
async fn recorded_that(dir: &TempDir, wanted: impl Fn(&Event) -> bool) -> Vec<Event> {
    let until = Instant::now() + Duration::from_secs(10);
    while !events(&trace_in(dir.path())).iter().any(&wanted) && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    events(&trace_in(dir.path()))
}

/// Waits (at most 10 s) until the trace in `dir` holds `event`; returns its events.
async fn recorded(dir: &TempDir, event: &Event) -> Vec<Event> {
    recorded_that(dir, |e| e == event).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_before_the_answer_began_ends_the_exchange_upstream_too() {
    let (_server, direct) = reference_with(&["--json-response"]);
    let dir = TempDir::new("http-leave");
    let (_recorder, through) = recorder(&direct, &dir, &[]);
    let waited = tokio::time::timeout(
        Duration::from_millis(300),
        post(&through, call(1, "work"), None),
    )
    .await;
    assert!(waited.is_err(), "`work` never answers");
    let witness = saw_cancelled(&direct).await;
    assert!(
        witness.contains("[1]"),
        "the server saw the request go: {witness}"
    );
    let end = Event::End {
        exchange: 1,
        by: EndBy::Client,
        error: None,
    };
    let all = recorded(&dir, &end).await;
    assert!(all.contains(&end), "{all:#?}");
    assert!(
        !all.iter().any(|e| matches!(e, Event::Response { .. })),
        "{all:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_stream_leaves_the_stream_cut_and_an_error_in_the_trace() {
    let (mut server, direct) = reference();
    let dir = TempDir::new("http-crash");
    let (_recorder, through) = recorder(&direct, &dir, &[]);
    let response = post(&through, call(1, "work"), None).await;
    let mut body = response.into_body();
    let mut seen = String::new();
    while !seen.contains("notifications/progress") {
        let frame = body
            .frame()
            .await
            .expect("the stream goes on")
            .expect("a frame");
        if let Some(data) = frame.data_ref() {
            seen.push_str(&String::from_utf8_lossy(data));
        }
    }
    server.0.kill().expect("the server is killed");
    let rest = tokio::time::timeout(Duration::from_secs(10), body.collect()).await;
    assert!(matches!(rest, Ok(Err(_))), "the client sees its stream cut");
    let all = recorded_that(&dir, |e| matches!(e, Event::End { exchange: 1, .. })).await;
    let cut = all
        .iter()
        .find(|e| matches!(e, Event::End { exchange: 1, .. }));
    assert!(
        matches!(
            cut,
            Some(Event::End {
                by: EndBy::Error,
                error: Some(_),
                ..
            })
        ),
        "{all:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_be_reached_is_a_502_and_an_error_in_the_trace() {
    let dir = TempDir::new("http-unreachable");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let to = format!("http://{}/mcp", closed.local_addr().expect("its address"));
    drop(closed);
    let (_recorder, through) = recorder(&to, &dir, &[]);
    let (status, body) = whole(post(&through, stateless(1, "ping"), None).await).await;
    assert_eq!(status, 502, "{body}");
    assert!(body.contains("could not be reached"), "{body}");
    let all = events(&trace_in(dir.path()));
    assert!(
        all.iter().any(|e| matches!(
            e,
            Event::End {
                exchange: 1,
                by: EndBy::Error,
                error: Some(_)
            }
        )),
        "{all:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_stops_the_recorder_cleanly_with_open_exchanges_ended() {
    let (_server, direct) = reference();
    let dir = TempDir::new("http-stop");
    let (mut recorder, through) = recorder(&direct, &dir, &[]);
    let response = post(&through, call(1, "work"), None).await;
    let mut body = response.into_body();
    let _first = body.frame().await;
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    unsafe { libc::kill(recorder.0.id() as i32, libc::SIGINT) };
    let status = wait(&mut recorder.0, Duration::from_secs(20)).expect("the recorder stops");
    assert_eq!(status.code(), Some(0));
    let all = events(&trace_in(dir.path()));
    assert!(
        matches!(all.last(), Some(Event::Note { text }) if text.contains("SIGINT")),
        "{all:#?}"
    );
    assert!(
        all.iter().any(|e| matches!(
            e,
            Event::End {
                exchange: 1,
                by: EndBy::Error,
                ..
            }
        )),
        "{all:#?}"
    );
}

/// Not a check: measures what the recorder adds to an HTTP round trip (`server/discover` to
/// the reference server, one at a time, on one kept-alive connection). Run with
/// `cargo test --test record_http -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check: prints the recorder's latency"]
async fn measure_the_latency_the_recorder_adds() {
    const ROUNDS: usize = 1000;
    let (_server, direct) = reference_with(&["--json-response"]);
    let dir = TempDir::new("http-latency");
    let (_recorder, through) = recorder(&direct, &dir, &[]);
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    for (what, url) in [
        ("HTTP direct", &direct),
        ("HTTP through the recorder", &through),
    ] {
        let mut times = vec![];
        for id in 0..ROUNDS {
            let message = stateless(id as u64, "server/discover");
            let request = Request::post(url.as_str())
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", message.method)
                .body(Full::new(Bytes::from(message.body)))
                .expect("a request");
            let began = Instant::now();
            let response = client.request(request).await.expect("an answer");
            let (status, _) = whole(response).await;
            times.push(began.elapsed());
            assert_eq!(status, 200);
        }
        println!("{}", summary(what, times));
    }
}
