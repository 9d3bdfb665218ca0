//! The harness judged against deliberately broken servers over Streamable HTTP: each mode of
//! a small HTTP server (`http_server/`) breaks exactly one rule or attacks the harness, and
//! the harness must give exactly the verdict the spec calls for, in bounded time and memory.
//!
//! This binary is also the server: with `BROKEN_HTTP_SERVER=<mode>` it serves MCP over HTTP
//! on the port given as its argument; otherwise it runs the trials, each of which starts this
//! same executable on a free port (`{port}`) and plays one case against it. Mode `correct`
//! (and `correct-json`, which answers with JSON instead of SSE) must pass every HTTP case, so
//! every other verdict is caused by the fault its mode adds. Every row also runs as `loaded/…`
//! with a busy loop on every core: the verdict must be the same on a loaded machine.

mod http_server;
#[path = "support/self_served.rs"]
pub mod self_served;
#[path = "support/shared_rows.rs"]
mod shared_rows;

use conformance::case::Case;
use conformance::engine::server::Connect;
use conformance::engine::Options;
use conformance::era::ProtocolVersion;
use conformance::harness;
use conformance::harness::expect::{Expect, On};
use conformance::outcome::{Outcome, Severity};
use conformance::requirement::Req;
use conformance::transport::http::HttpTarget;
use libtest_mimic::Failed;
use self_served::Target;
use std::time::Duration;

/// The test's defaults (the harness's default version); a row may ask for another version.
fn options(want: &Expect) -> Options {
    let version = Options::default().protocol_version;
    self_served::options(version.as_str(), Duration::from_millis(800), want)
}

/// A server this test started and the harness only connects to (as with `--url` and no
/// command): it is killed and reaped when dropped.
struct Running(std::process::Child);

impl Running {
    /// Starts this executable as the server of `mode` on a free port; returns it and its URL
    /// once it accepts connections.
    fn start(mode: &str) -> Result<(Running, String), Failed> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = std::process::Command::new(std::env::current_exe()?)
            .arg(port.to_string())
            .env("BROKEN_HTTP_SERVER", mode)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let running = Running(child);
        let began = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if began.elapsed() > Duration::from_secs(60) {
                return Err(
                    format!("the {mode} server did not listen on port {port} within 60 s").into(),
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok((running, format!("http://127.0.0.1:{port}/mcp")))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// This executable serving `mode` on a free port (`{port}`), started for the case.
fn target(mode: &str) -> Result<HttpTarget, Failed> {
    Ok(HttpTarget {
        url: "http://127.0.0.1:{port}/mcp".into(),
        launch: Some(self_served::this_binary(
            "BROKEN_HTTP_SERVER",
            mode,
            &["{port}"],
            &[],
        )?),
    })
}

/// The options of a row: at the version asked for, else the default, else the newest the case
/// covers when it does not cover the default.
fn row_options(case: &Case, want: &Expect) -> Options {
    let mut options = options(want);
    if want.version().is_none() && !case.versions.contains(&options.protocol_version) {
        options.protocol_version = case.last_version();
    }
    options
}

/// Plays `case` against a server of `mode` and judges the run by `want`. A server that served
/// earlier cases (the `remembers` modes) is started by the test and only connected to, as
/// with `--url` and no command.
fn check(case: &Case, mode: &str, want: &Expect, loaded: bool) -> Result<(), Failed> {
    let mut target = target(mode)?;
    let mut _running = None;
    if mode.starts_with("remembers") {
        let (running, url) = Running::start(mode)?;
        _running = Some(running);
        target = HttpTarget { url, launch: None };
    }
    let report = self_served::play(case, Target::Http(&target), &row_options(case, want))?;
    Ok(self_served::judge(case, mode, want, &report, &[], loaded)?)
}

/// Every case that runs over HTTP.
const HTTP_CASES: [&str; 29] = [
    "cancel-after-progress",
    "cancel-by-deadline",
    "cancel-id-type-mismatch",
    "cancel-initialize-ignored",
    "cancel-request-id-fidelity",
    "cancel-unknown-id",
    "concurrent-cancel-isolation",
    "late-cancel-after-completion",
    "late-cancel-sweep",
    "no-progress-without-token",
    "no-response-after-cancel",
    "notifications-never-answered",
    "ping-during-long-call",
    "progress-after-completion",
    "progress-monotonic",
    "progress-token-echoed",
    "server-alive-after-cancel",
    "unknown-method",
    "unknown-method-code",
    "http-abort-cycles",
    "http-cancel-accepted",
    "http-cancelled-stream",
    "http-cross-session-cancel",
    "http-disconnect-not-cancel",
    "http-malformed-input",
    "http-notifications-accepted",
    "http-one-stream-per-message",
    "http-origin-rejected",
    "http-origin-refused-before-2025-11-25",
];

/// Bounded by the options (reply 0.8 s, startup 2 s), which the harness stretches at most
/// tenfold while the machine is busy (`load.rs`); a hang would run into the case timeout.
/// How long a loaded run takes is not asserted, only what it concludes.
const FAST: Duration = Duration::from_secs(25);
/// A row's test process (it plays such a row alone, see `own_process_if`) stays far below
/// what a target sent (1 GiB, or endless streams): the harness keeps bounded streams. Alone,
/// each such row peaks at 13–18 MiB.
const PEAK_MIB: u64 = 48;
/// No sessions, headers that mirror the body, closing a stream is the cancel.
const STATELESS: ProtocolVersion = ProtocolVersion::V2026_07_28;

/// The table: mode, case, what the run must show.
#[rustfmt::skip]
fn table() -> Vec<(&'static str, &'static str, Expect)> {
    use Outcome::{Fail, Info, Pass, Skip};
    use Severity::{Note as N, Warn as W};
    type E = Expect;
    let info = ["cancel-id-type-mismatch", "cancel-initialize-ignored"];
    let mut rows = vec![];
    // Over JSON responses a running request has no stream for its progress: the cases that
    // wait for progress are skipped with the reason (PRG-08).
    let progress = ["cancel-after-progress", "progress-monotonic", "progress-token-echoed",
                    "http-cancelled-stream", "http-one-stream-per-message"];
    for mode in ["correct", "correct-json"] {
        for case in HTTP_CASES.iter().chain(&["http-session-deleted", "http-session-required", "http-version-header"]) {
            let outcome = if info.contains(case) {
                Info
            } else if mode == "correct-json" && progress.contains(case) {
                Skip
            } else {
                Pass
            };
            rows.push((mode, *case, E::outcome(outcome)));
        }
    }
    rows.extend([
        // The cancel of a running request: a -32800 on its stream is a response after the
        // cancel (AMB-03); a stream left open is allowed (AMB-04).
        ("answers-after-cancel",     "http-cancelled-stream",       E::warns(Req::Can05)),
        ("answers-after-cancel",     "http-cancel-accepted",        E::warns(Req::Can05)),
        ("leaves-stream-open",       "http-cancelled-stream",       E::caught(Req::Http17, N).exactly(Pass)),
        // A stream that carried its response and stays open: a SHOULD broken (HTTP-09).
        ("keeps-stream-after-response", "unknown-method",           E::warns(Req::Http09)),
        ("keeps-stream-after-response", "ping-during-long-call",    E::warns(Req::Http09)),
        // A server that sends a head only with its first message is waited for once: 22
        // cancels, each waiting the reply timeout for a head, would run past the case limit.
        ("holds-heads",              "server-alive-after-cancel",   E::outcome(Pass)),
        ("holds-heads",              "http-abort-cycles",           E::outcome(Pass)),
        ("ignores-cancel-post",      "http-cancel-accepted",        E::warns(Req::Can05)),
        // The 500 ms sleep ends within the grace window after the cancel's 202: over HTTP its
        // answer may have crossed the cancel, and is allowed (a note says so).
        ("ignores-cancel-post",      "no-response-after-cancel",    E::caught(Req::Can08, N).exactly(Pass)),
        ("cancel-on-disconnect",     "http-disconnect-not-cancel",  E::warns(Req::Http10)),
        // A running server whose witness lists requests 1 and 2 of earlier cases: only what
        // it lists since the case opened is this case's, either way.
        ("remembers",                "http-disconnect-not-cancel",  E::outcome(Pass)),
        ("remembers",                "http-cancel-accepted",        E::outcome(Pass)),
        ("remembers-ignores-cancel", "http-cancel-accepted",        E::warns(Req::Can05)),
        ("cross-session-cancel",     "http-cross-session-cancel",   E::warns(On::Case)),
        // The -32800 for the other session's request 1 is that session's business: no
        // expectation of the first session is touched.
        ("answers-after-cancel",     "http-cross-session-cancel",   E::warns(Req::Can05).without(On::Case)),
        ("no-origin-check",          "http-origin-rejected",        E::fails(On::Case)),
        ("no-origin-check",          "http-origin-refused-before-2025-11-25", E::fails(On::Case)),
        ("duplicate-on-two-streams", "http-one-stream-per-message", E::fails(Req::Http13)),
        ("ignores-delete",           "http-session-deleted",        E::fails(On::Case)),
        ("accepts-any-version",      "http-version-header",         E::fails(On::Case)),
        ("notifications-get-200",    "notifications-never-answered", E::fails(Req::Http07)),
        ("bad-session-id",           "cancel-unknown-id",           E::fails(Req::Http16)),
        // Hostile servers: a verdict in bounded time, with bounded memory, and the reason.
        ("never-finishes-headers",   "cancel-unknown-id",           E::fails(Req::Lif02).within_calm(FAST)),
        // How far an endless flood of comments gets before the reply timeout depends on the
        // machine: the verdict is a failure either way, the limit or the missing response.
        ("sse-forever",              "unknown-method",              E::fails(On::Limit).or_on(On::Case).within_calm(FAST).small(PEAK_MIB)),
        ("sse-trickle",              "unknown-method",              E::fails(On::Case).within_calm(FAST)),
        ("gigabyte-body",            "cancel-unknown-id",           E::fails(On::Limit).within_calm(FAST).small(PEAK_MIB)),
        ("answers-500",              "cancel-unknown-id",           E::fails(Req::Lif02).within_calm(FAST)),
        ("redirects",                "cancel-unknown-id",           E::fails(Req::Lif02).within_calm(FAST)),
        ("closes-mid-event",         "cancel-unknown-id",           E::caught(Req::Http09, W).exactly(Fail).within_calm(FAST)),
        ("events-for-other-streams", "cancel-unknown-id",           E::fails(Req::Rpc04).within_calm(FAST)),
        // A correct server behind a pass-through proxy that listens before the server does:
        // the harness waits for an HTTP answer, not only an accepted connection.
        ("starts-behind-proxy",      "cancel-unknown-id",           E::outcome(Pass)),
    ]);
    // 2026-07-28: no sessions, headers that mirror the body, closing a stream is the cancel.
    for case in STATELESS_CASES {
        rows.push(("correct", case, E::outcome(Pass).at(STATELESS)));
    }
    rows.extend([
        // The work goes on after its stream closed: the witness does not list it. Stopping is
        // a SHOULD (HTTP-11), so a warning; nothing can come on the closed stream.
        ("ignores-closed-stream",    "http-stateless-cancel",        E::warns(Req::Can05).at(STATELESS)),
        ("remembers",                "http-stateless-cancel",        E::outcome(Pass).at(STATELESS)),
        ("starts-behind-proxy",      "stateless-discover",           E::outcome(Pass).at(STATELESS)),
        ("ignores-closed-stream",    "http-stateless-abort-cycles",  E::warns(Req::Can05).at(STATELESS)),
        ("ignores-closed-stream",    "cancel-by-deadline",           E::warns(Req::Can05).at(STATELESS)),
        ("ignores-closed-stream",    "cancel-after-progress",        E::warns(Req::Can05).at(STATELESS)),
        ("no-result-type",           "stateless-result-type",        E::fails(Req::Rpc14).at(STATELESS)),
        ("requests-client",          "stateless-no-server-requests", E::fails(Req::Rpc15).at(STATELESS)),
        ("mints-session-id",         "http-stateless-no-sessions",   E::warns(Req::Http20).at(STATELESS)),
        ("no-header-check",          "http-stateless-headers",       E::fails(On::Case).at(STATELESS)),
        // 404 is the MUST for an unknown method in this era over HTTP (RPC-09); the code
        // alone passes the cases that ask only for the code.
        ("unknown-method-200",       "http-stateless-unknown-method", E::fails(On::Case).at(STATELESS)),
        ("unknown-method-200",       "unknown-method-code",          E::outcome(Pass).at(STATELESS)),
    ]);
    rows
}

/// The cases of 2026-07-28 over HTTP that the broken server's `correct` mode must pass.
const STATELESS_CASES: [&str; 20] = [
    "cancel-after-progress",
    "cancel-by-deadline",
    "concurrent-cancel-isolation",
    "late-cancel-after-completion",
    "late-cancel-sweep",
    "no-response-after-cancel",
    "progress-monotonic",
    "unknown-method",
    "unknown-method-code",
    "http-stateless-unknown-method",
    "stateless-alive-after-cancel",
    "stateless-discover",
    "stateless-missing-meta",
    "stateless-unsupported-version",
    "stateless-result-type",
    "stateless-no-server-requests",
    "http-stateless-cancel",
    "http-stateless-abort-cycles",
    "http-stateless-headers",
    "http-stateless-no-sessions",
];

fn main() {
    if let Ok(mode) = std::env::var("BROKEN_HTTP_SERVER") {
        let port = std::env::args()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .expect("the port is the first argument");
        http_server::serve(&mode, port);
    }
    let args = harness::test_arguments();
    let cases = self_served::server_cases();
    let mut trials = vec![];
    // Per mode, its rows on one shared server (a running server's modes have nothing to share).
    let shareable = table()
        .into_iter()
        .filter(|(mode, _, _)| !mode.starts_with("remembers"))
        .collect();
    trials.extend(shared_rows::trials(
        &cases,
        shareable,
        |mode| Ok(Connect::Http(target(mode)?)),
        row_options,
    ));
    trials.extend(self_served::trials(&cases, table(), check));
    libtest_mimic::run(&args, trials).exit();
}
