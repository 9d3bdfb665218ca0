//! Speed of the real binary over Streamable HTTP: startup to the first
//! initialize response, the round trip of a JSON-RPC `ping` POSTed over one
//! keep-alive connection (p50 and p99), in SSE and in JSON mode, and peak
//! RSS after the run.
//!
//! Run with `cargo bench -p reference-server --bench http`. The client is
//! reqwest on a single-threaded runtime, so its own cost is in the numbers.
//!
//! To measure another Streamable HTTP server the same way, set
//! `BENCH_HTTP_SERVER` to its binary and `BENCH_HTTP_ARGS` to its
//! space-separated arguments, with `{port}` where a free loopback port goes
//! (the endpoint is then `http://127.0.0.1:{port}/mcp`, or `BENCH_HTTP_URL`).
//! Such a server is measured in its default mode only (SSE, or whatever it
//! answers with).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const REQUESTS: usize = 5_000;
const WARMUP: usize = 200;
const SPAWNS: usize = 20;

struct Server {
    child: Child,
    url: String,
}

/// Another server to measure instead of this package's own: its binary, arguments and URL,
/// each with `{port}` still in them.
struct Other {
    binary: String,
    args: Vec<String>,
    url: String,
}

impl Other {
    fn from_env() -> Option<Other> {
        let binary = std::env::var("BENCH_HTTP_SERVER").ok()?;
        let args = std::env::var("BENCH_HTTP_ARGS").unwrap_or_default();
        let url = std::env::var("BENCH_HTTP_URL")
            .unwrap_or_else(|_| "http://127.0.0.1:{port}/mcp".to_owned());
        Some(Other {
            binary,
            args: args.split_whitespace().map(str::to_owned).collect(),
            url,
        })
    }

    /// Starts it on a free port and waits until the port accepts connections.
    fn spawn(&self) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port()
            .to_string();
        let child = Command::new(&self.binary)
            .args(self.args.iter().map(|a| a.replace("{port}", &port)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.binary));
        let server = Server {
            child,
            url: self.url.replace("{port}", &port),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).is_err() {
            assert!(
                Instant::now() < deadline,
                "{} did not listen on {port}",
                self.binary
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        server
    }
}

impl Server {
    fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_reference-server"))
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn reference-server --http");
        let mut line = String::new();
        BufReader::new(child.stderr.take().expect("stderr"))
            .read_line(&mut line)
            .expect("read the listening line");
        let url = line
            .trim()
            .strip_prefix("reference-server: listening on ")
            .unwrap_or_else(|| panic!("unexpected stderr line: {line}"))
            .to_owned();
        Self { child, url }
    }

    fn peak_rss_mib(&self) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let kib: f64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib / 1024.0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: String,
) -> reqwest::RequestBuilder {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body);
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    request
}

const INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","#,
    r#""capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#
);

/// Initializes and returns the session id.
async fn initialize(client: &reqwest::Client, url: &str) -> String {
    let response = post(client, url, None, INITIALIZE.to_owned())
        .send()
        .await
        .expect("initialize");
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let body = response.bytes().await.expect("initialize body");
    assert!(
        String::from_utf8_lossy(&body).contains("protocolVersion"),
        "{body:?}"
    );
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let accepted = post(client, url, Some(&session), initialized.to_owned())
        .send()
        .await
        .expect("notifications/initialized");
    assert_eq!(accepted.status(), 202, "notifications/initialized");
    session
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = reqwest::Client::new();
    let other = Other::from_env();
    let spawn = |args: &[&str]| match &other {
        Some(other) => other.spawn(),
        None => Server::spawn(args),
    };

    let mut startups = Vec::with_capacity(SPAWNS);
    for _ in 0..SPAWNS {
        let start = Instant::now();
        let server = spawn(&[]);
        runtime.block_on(initialize(&client, &server.url));
        startups.push(start.elapsed());
    }
    startups.sort();
    let name = other
        .as_ref()
        .map_or("reference-server", |o| o.binary.as_str());
    println!("{name} over Streamable HTTP (HTTP/1.1 keep-alive, reqwest client)");
    println!(
        "  startup to initialize response: median {} over {SPAWNS} spawns",
        micros(percentile(&startups, 0.5))
    );

    let modes: &[(&str, &[&str])] = match other {
        Some(_) => &[("SSE", &[])],
        None => &[("SSE", &[]), ("JSON", &["--json-response"])],
    };
    for &(mode, args) in modes {
        let server = spawn(args);
        let rtts = runtime.block_on(async {
            let session = initialize(&client, &server.url).await;
            let mut rtts = Vec::with_capacity(REQUESTS);
            for n in 0..WARMUP + REQUESTS {
                let ping = format!(r#"{{"jsonrpc":"2.0","id":{},"method":"ping"}}"#, n + 1);
                let start = Instant::now();
                let response = post(&client, &server.url, Some(&session), ping)
                    .send()
                    .await
                    .expect("ping");
                let body = response.bytes().await.expect("ping body");
                let elapsed = start.elapsed();
                debug_assert!(String::from_utf8_lossy(&body).contains(r#""result":{}"#));
                if n >= WARMUP {
                    rtts.push(elapsed);
                }
            }
            rtts
        });
        let mut rtts = rtts;
        rtts.sort();
        println!(
            "  {mode:<4} ping round trip: p50 {}, p99 {} over {REQUESTS} requests; peak rss {}",
            micros(percentile(&rtts, 0.5)),
            micros(percentile(&rtts, 0.99)),
            server
                .peak_rss_mib()
                .map_or_else(|| "unavailable".to_owned(), |mib| format!("{mib:.2} MiB")),
        );
    }
}
