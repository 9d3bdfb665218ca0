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

use conformance::case::{Case, Role};
use conformance::engine::server::run_http_server_case;
use conformance::engine::{Options, Report};
use conformance::outcome::{Outcome, Severity};
use conformance::transport::http::HttpTarget;
use conformance::transport::process::Launch;
use conformance::{harness, report};
use libtest_mimic::{Arguments, Failed, Trial};
use std::path::Path;
use std::time::Duration;

/// What a trial asserts about a run.
#[derive(Clone, Copy)]
struct Verdict {
    outcome: Outcome,
    /// A finding that must be there: requirement id (or `limit`, `case`) and severity.
    finding: Option<(&'static str, Severity)>,
    /// The run must end faster than this.
    within: Option<Duration>,
    /// The harness's peak memory must stay small.
    small: bool,
    /// A requirement (or `case`) no finding above a note may rest on.
    absent: Option<&'static str>,
    /// The protocol version to run at (the harness's default otherwise).
    version: Option<&'static str>,
}

const fn verdict(outcome: Outcome) -> Verdict {
    Verdict {
        outcome,
        finding: None,
        within: None,
        small: false,
        absent: None,
        version: None,
    }
}

const fn with(outcome: Outcome, requirement: &'static str, severity: Severity) -> Verdict {
    Verdict {
        outcome,
        finding: Some((requirement, severity)),
        within: None,
        small: false,
        absent: None,
        version: None,
    }
}

fn options(version: Option<&str>) -> Options {
    let defaults = Options::default();
    Options {
        protocol_version: version.map_or(defaults.protocol_version.clone(), str::to_string),
        case_timeout: Duration::from_secs(12),
        reply_timeout: Duration::from_millis(800),
        startup_timeout: Duration::from_secs(2),
        ..defaults
    }
}

/// This process's peak resident memory (`VmHWM`), in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn play(case: &Case, mode: &str, version: Option<&str>) -> Result<Report, Failed> {
    let exe = std::env::current_exe()?;
    let target = HttpTarget {
        url: "http://127.0.0.1:{port}/mcp".into(),
        launch: Some(Launch {
            argv: vec![exe.display().to_string(), "{port}".into()],
            env: vec![("BROKEN_HTTP_SERVER".into(), mode.into())],
            cwd: None,
        }),
    };
    // At the version asked for, else the default, else the newest the case covers when it
    // does not cover the default.
    let mut options = options(version);
    if version.is_none() && !case.versions.contains(&options.protocol_version) {
        if let Some(newest) = case.versions.last() {
            options.protocol_version = newest.clone();
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(run_http_server_case(case, &target, &options))?)
}

fn check(case: &Case, mode: &str, want: Verdict) -> Result<(), Failed> {
    let report = play(case, mode, want.version)?;
    let explain = || {
        let findings: Vec<String> = report
            .findings
            .iter()
            .map(|f| {
                format!(
                    "  {:?} [{}] line {}: {}",
                    f.severity,
                    f.requirement(),
                    f.line,
                    f.message
                )
            })
            .collect();
        format!(
            "{mode} × {}: outcome {} in {:?}\nfindings:\n{}\n{}\ntranscript:\n{}",
            case.id,
            report.outcome,
            report.duration,
            findings.join("\n"),
            report::explain(case, &report, "this is a test of the harness"),
            conformance::transcript::render(&report.transcript, &report.log, true)
        )
    };
    if report.outcome != want.outcome {
        return Err(format!("expected outcome {}\n{}", want.outcome, explain()).into());
    }
    if let Some((requirement, severity)) = want.finding {
        // `a|b`: a finding on either requirement.
        let found = report.findings.iter().any(|f| {
            requirement.split('|').any(|r| f.requirement() == r) && f.severity == severity
        });
        if !found {
            return Err(format!(
                "expected a {severity:?} finding on {requirement}\n{}",
                explain()
            )
            .into());
        }
    }
    if let Some(limit) = want.within {
        if report.duration >= limit {
            return Err(format!(
                "the run took {:?}, over {limit:?}\n{}",
                report.duration,
                explain()
            )
            .into());
        }
    }
    if let Some(requirement) = want.absent {
        let found = report
            .findings
            .iter()
            .any(|f| f.requirement() == requirement && f.severity > Severity::Note);
        if found {
            return Err(format!("expected no finding on {requirement}\n{}", explain()).into());
        }
    }
    if want.small {
        // The whole test process, all trials together, stays far below what a target sent
        // (1 GiB, or endless streams): the harness keeps bounded streams.
        let peak = peak_rss_kib();
        if peak > 160 * 1024 {
            return Err(format!("the harness's peak RSS is {peak} KiB\n{}", explain()).into());
        }
    }
    Ok(())
}

/// Every case that runs over HTTP.
const HTTP_CASES: [&str; 28] = [
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

/// The table: mode, case, verdict.
#[rustfmt::skip]
fn table() -> Vec<(&'static str, &'static str, Verdict)> {
    use Outcome::{Fail, Info, Pass, Skip, Warn};
    use Severity::{Fail as F, Note as N, Warn as W};
    // Bounded by the options (reply 0.8 s, startup 2 s), which the harness stretches at most
    // tenfold while the machine is busy (`load.rs`); a hang would run into the case timeout.
    let fast = |v: Verdict| Verdict { within: Some(Duration::from_secs(25)), ..v };
    let small = |v: Verdict| Verdict { small: true, ..v };
    let only = |v: Verdict, absent| Verdict { absent: Some(absent), ..v };
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
            rows.push((mode, *case, verdict(outcome)));
        }
    }
    rows.extend([
        // The cancel of a running request: a -32800 on its stream is a response after the
        // cancel (AMB-03); a stream left open is allowed (AMB-04).
        ("answers-after-cancel",     "http-cancelled-stream",       with(Warn, "CAN-05", W)),
        ("answers-after-cancel",     "http-cancel-accepted",        with(Warn, "CAN-05", W)),
        ("leaves-stream-open",       "http-cancelled-stream",       with(Pass, "HTTP-17", N)),
        // A stream that carried its response and stays open: a SHOULD broken (HTTP-09).
        ("keeps-stream-after-response", "unknown-method",           with(Warn, "HTTP-09", W)),
        ("keeps-stream-after-response", "ping-during-long-call",    with(Warn, "HTTP-09", W)),
        // A server that sends a head only with its first message is waited for once: 22
        // cancels, each waiting the reply timeout for a head, would run past the case limit.
        ("holds-heads",              "server-alive-after-cancel",   verdict(Pass)),
        ("holds-heads",              "http-abort-cycles",           verdict(Pass)),
        ("ignores-cancel-post",      "http-cancel-accepted",        with(Warn, "CAN-05", W)),
        // The 500 ms sleep ends within the grace window after the cancel's 202: over HTTP its
        // answer may have crossed the cancel, and is allowed (a note says so).
        ("ignores-cancel-post",      "no-response-after-cancel",    with(Pass, "CAN-08", N)),
        ("cancel-on-disconnect",     "http-disconnect-not-cancel",  with(Warn, "HTTP-10", W)),
        ("cross-session-cancel",     "http-cross-session-cancel",   with(Warn, "case", W)),
        // The -32800 for the other session's request 1 is that session's business: no
        // expectation of the first session is touched.
        ("answers-after-cancel",     "http-cross-session-cancel",   only(with(Warn, "CAN-05", W), "case")),
        ("no-origin-check",          "http-origin-rejected",        with(Fail, "case", F)),
        ("no-origin-check",          "http-origin-refused-before-2025-11-25", with(Fail, "case", F)),
        ("duplicate-on-two-streams", "http-one-stream-per-message", with(Fail, "HTTP-13", F)),
        ("ignores-delete",           "http-session-deleted",        with(Fail, "case", F)),
        ("accepts-any-version",      "http-version-header",         with(Fail, "case", F)),
        ("notifications-get-200",    "notifications-never-answered", with(Fail, "HTTP-07", F)),
        ("bad-session-id",           "cancel-unknown-id",           with(Fail, "HTTP-16", F)),
        // Hostile servers: a verdict in bounded time, with bounded memory, and the reason.
        ("never-finishes-headers",   "cancel-unknown-id",           fast(with(Fail, "LIF-02", F))),
        // How far an endless flood of comments gets before the reply timeout depends on the
        // machine: the verdict is a failure either way, the limit or the missing response.
        ("sse-forever",              "unknown-method",              small(fast(with(Fail, "limit|case", F)))),
        ("sse-trickle",              "unknown-method",              fast(with(Fail, "case", F))),
        ("gigabyte-body",            "cancel-unknown-id",           small(fast(with(Fail, "limit", F)))),
        ("answers-500",              "cancel-unknown-id",           fast(with(Fail, "LIF-02", F))),
        ("redirects",                "cancel-unknown-id",           fast(with(Fail, "LIF-02", F))),
        ("closes-mid-event",         "cancel-unknown-id",           fast(with(Fail, "HTTP-09", W))),
        ("events-for-other-streams", "cancel-unknown-id",           fast(with(Fail, "RPC-04", F))),
    ]);
    // 2026-07-28: no sessions, headers that mirror the body, closing a stream is the cancel.
    let stateless = |v: Verdict| Verdict { version: Some("2026-07-28"), ..v };
    for case in STATELESS_CASES {
        rows.push(("correct", case, stateless(verdict(Pass))));
    }
    rows.extend([
        // The work goes on after its stream closed: the witness does not list it. Stopping is
        // a SHOULD (HTTP-11), so a warning; nothing can come on the closed stream.
        ("ignores-closed-stream",    "http-stateless-cancel",        stateless(with(Warn, "CAN-05", W))),
        ("ignores-closed-stream",    "http-stateless-abort-cycles",  stateless(with(Warn, "CAN-05", W))),
        ("ignores-closed-stream",    "cancel-by-deadline",           stateless(with(Warn, "CAN-05", W))),
        ("ignores-closed-stream",    "cancel-after-progress",        stateless(with(Warn, "CAN-05", W))),
        ("no-result-type",           "stateless-result-type",        stateless(with(Fail, "RPC-14", F))),
        ("requests-client",          "stateless-no-server-requests", stateless(with(Fail, "RPC-15", F))),
        ("mints-session-id",         "http-stateless-no-sessions",   stateless(with(Warn, "HTTP-20", W))),
        ("no-header-check",          "http-stateless-headers",       stateless(with(Fail, "case", F))),
    ]);
    rows
}

/// The cases of 2026-07-28 over HTTP that the broken server's `correct` mode must pass.
const STATELESS_CASES: [&str; 18] = [
    "cancel-after-progress",
    "cancel-by-deadline",
    "concurrent-cancel-isolation",
    "late-cancel-after-completion",
    "late-cancel-sweep",
    "no-response-after-cancel",
    "progress-monotonic",
    "unknown-method",
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
    let args = Arguments::from_args();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let cases = harness::cases(&dir, Role::Server);
    let mut trials = vec![];
    for (mode, name, want) in table() {
        let id = format!("server/{name}");
        let case = cases
            .iter()
            .find(|c| c.id == id)
            .cloned()
            .unwrap_or_else(|| panic!("no case {id} in {}", dir.display()));
        // The same verdict with a busy loop on every core (how long the run takes under load
        // is not asserted, only what it concludes).
        let loaded_case = case.clone();
        let loaded = Verdict {
            within: None,
            ..want
        };
        let at = want.version.map(|v| format!(" [{v}]")).unwrap_or_default();
        trials.push(Trial::test(format!("{mode}/{name}{at}"), move || {
            check(&case, mode, want)
        }));
        trials.push(Trial::test(
            format!("loaded/{mode}/{name}{at}"),
            move || {
                let _load = harness::saturate_cpus();
                check(&loaded_case, mode, loaded)
            },
        ));
    }
    libtest_mimic::run(&args, trials).exit();
}
