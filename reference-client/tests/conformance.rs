//! Every client case of `conformance` against this package's program in adapter mode, one
//! libtest trial per case, every level enforced: the reference client must be clean.
//!
//! The server the client starts is this test binary re-run as the relay, so no other
//! package's binary is needed. Deliberately broken clients (this binary again, speaking raw
//! JSON; see `conformance/broken.rs`) check that the harness catches what it claims to
//! catch, and fair but unusual ones that it blames nothing they did not do.

#[path = "conformance/broken.rs"]
mod broken;
#[path = "conformance/broken_http.rs"]
mod broken_http;
#[path = "conformance/broken_http_stateless.rs"]
mod broken_http_stateless;
#[path = "conformance/broken_stateless.rs"]
mod broken_stateless;
#[path = "conformance/broken_tasks.rs"]
mod broken_tasks;

use conformance::case::{Case, Role, TransportKind};
use conformance::case_report::Report;
use conformance::engine::client::{run_client_case, ClientTransport};
use conformance::engine::Options;
use conformance::harness;
use conformance::harness::expect::{Expect, On, Run};
use conformance::outcome::{Outcome, Severity};
use conformance::requirement::Req;
use conformance::transport::process::Launch;
use conformance::transport::relay::{run_if_relay, RELAY_FLAG};
use libtest_mimic::{Failed, Trial};
use std::path::Path;
use std::time::Duration;

fn stdio() -> ClientTransport {
    let me = std::env::current_exe().expect("the test binary knows its path");
    ClientTransport::Stdio {
        relay: vec![me.display().to_string(), RELAY_FLAG.into()],
    }
}

fn run(case: &Case, launch: &Launch) -> Result<Report, Failed> {
    run_over(case, launch, &stdio())
}

/// One run of `case` at the newest version it covers, as `conformance client` runs it by
/// default.
fn run_over(case: &Case, launch: &Launch, transport: &ClientTransport) -> Result<Report, Failed> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let options = Options {
        protocol_version: case.last_version(),
        ..Options::default()
    };
    Ok(runtime.block_on(run_client_case(case, launch, transport, &options))?)
}

fn reference_trial(case: Case, loaded: bool, transport: TransportKind) -> Trial {
    let kind = case.level.as_str();
    let over = match transport {
        TransportKind::Stdio => String::new(),
        TransportKind::Http => "@http".into(),
    };
    let name = if loaded {
        format!("loaded/{}{over}", case.id)
    } else {
        format!("{}{over}", case.id)
    };
    Trial::test(name, move || {
        // Every core busy: the reference client must stay clean on a loaded machine too.
        let _load = loaded.then(harness::saturate_cpus);
        let launch = Launch {
            argv: vec![env!("CARGO_BIN_EXE_reference-client").into()],
            env: vec![],
            cwd: None,
        };
        let report = match transport {
            TransportKind::Stdio => run(&case, &launch)?,
            TransportKind::Http => run_over(&case, &launch, &ClientTransport::Http)?,
        };
        // The binary this test ran, wherever the target folder is (CARGO_TARGET_DIR).
        let next = format!(
            "run it by hand: cargo run -p conformance -- client --cases cases --transport {} --dump /tmp/dump {} -- {}",
            transport.as_str(),
            case.id,
            env!("CARGO_BIN_EXE_reference-client")
        );
        if NOT_OFFERED.contains(&case.id.as_str()) {
            // The case asks the client for what it does not offer: skipped, saying so.
            let why = report.skip_reason.as_deref().unwrap_or_default();
            if report.outcome != Outcome::Skip || !why.contains("did not declare `roots`") {
                return Err(format!("{}: expected a skip for the roots it does not offer, got {} ({why})", case.id, report.outcome).into());
            }
            return Ok(());
        }
        Ok(harness::expect_clean(&case, &report, false, &next)?)
    })
    .with_kind(kind)
}

/// Client cases whose server asks for a capability this client does not declare (`roots`):
/// the harness may not send it that request, so the case is skipped with the reason.
const NOT_OFFERED: [&str; 1] = ["client/client-server-cancels-request"];

/// Broken (and fair but unusual) clients over stdio and HTTP (the `http-` modes): mode, case,
/// what the run must show. Each runs on a calm machine.
#[rustfmt::skip]
fn table() -> Vec<(&'static str, &'static str, Expect)> {
    use Severity::{Fail as F, Warn as W};
    type E = Expect;
    vec![
        ("cancels-initialize",          "cancel-initialize-never-sent",  E::caught(Req::Can04, F)),
        ("string-request-id",           "client-cancel-after-progress",  E::caught(Req::Can01, F)),
        ("cancels-at-once",             "client-cancel-on-deadline",     E::caught(On::Case, W).saying("allows 50 to 550 ms")),
        ("cancels-after-answer",        "client-progress-tolerance",     E::caught(Req::Can03, W)),
        ("gives-up-before-starting",    "cancel-initialize-never-sent",  E::clean()),
        ("omits-initialized",           "client-shutdown-sequence",      E::caught(Req::Lif03, F).saying("never sent")),
        ("lists-tools-early",           "client-handshake-order",        E::caught(Req::Lif04, W).saying("tools/list")),
        ("reuses-answered-id",          "client-ids-unique",             E::caught(Req::Rpc03, F).saying("already answered")),
        ("sigterms-server",             "client-shutdown-sequence",      E::caught(Req::Std06, W).saying("SIGTERM").without(Req::Tmo02)),
        ("exits-with-cancel-in-flight", "cancel-initialize-never-sent",  E::caught(Req::Can04, F)),
        ("exits-without-closing",       "client-shutdown-sequence",      E::clean()),
        ("probes-first",                "client-shutdown-sequence",      E::clean()),
        ("stray-connections",           "client-cancel-after-progress",  E::clean()),
        ("answers-cancelled-request",   "client-server-cancels-request", E::caught(Req::Can13, W)),
        ("bad-progress",                "client-server-cancels-request", E::caught(Req::Prg05, F)),
        ("resets-forever",              "client-max-timeout",            E::caught(On::Case, W).saying("no message matching")),
        ("times-out-silently",          "client-max-timeout",            E::caught(On::Case, W).saying("no message matching")),
        ("hangs-on-server-exit",        "client-server-exits",           E::caught(Req::Tmo02, F)),
        ("never-cancels",               "client-cancel-after-progress",  E::caught(On::Case, F).saying("no message matching").never_saying("never reported")),
        ("http-cancel-without-session", "client-http-session",           E::caught(Req::Http16, F).saying("the cancel POST")),
        ("http-no-version",             "client-http-session",           E::caught(Req::Http18, F)),
        ("http-accepts-json-only",      "client-http-session",           E::caught(Req::Http05, F)),
        ("http-no-delete",              "client-http-session",           E::caught(Req::Http16, W).saying("DELETE")),
        ("http-oversized",              "client-http-session",           E::caught(On::Limit, F)),
        ("http-ignores-404",            "client-http-expired-session",   E::caught(Req::Http16, F).saying("next request|never started a new session")),
    ]
}

/// A raw client playing `mode` on `case` (over HTTP when the mode starts with `http-`),
/// judged by `expect`.
fn broken_trial(mode: &'static str, case: Case, expect: Expect) -> Trial {
    broken_run(mode, case, expect, false)
}

/// [`broken_trial`], calm and with every core busy: the verdict must be the same.
fn broken_trials(mode: &'static str, case: Case, expect: Expect) -> [Trial; 2] {
    [
        broken_run(mode, case.clone(), expect.clone(), false),
        broken_run(mode, case, expect, true),
    ]
}

fn broken_run(mode: &'static str, case: Case, expect: Expect, loaded: bool) -> Trial {
    let name = format!("broken/{mode}/{}", case.id.trim_start_matches("client/"));
    let name = if loaded {
        format!("loaded/{name}")
    } else {
        name
    };
    Trial::test(name, move || {
        let _load = loaded.then(harness::saturate_cpus);
        let me = std::env::current_exe()?;
        let launch = Launch {
            argv: vec![me.display().to_string()],
            env: vec![(broken::BROKEN.into(), mode.into())],
            cwd: None,
        };
        let report = if mode.starts_with("http-") {
            run_over(&case, &launch, &ClientTransport::Http)?
        } else {
            run(&case, &launch)?
        };
        judge(&case, &report, &expect, loaded)
    })
}

/// What `expect` says of one run of `case`: the one judgement of every table here.
fn judge(case: &Case, report: &Report, expect: &Expect, loaded: bool) -> Result<(), Failed> {
    let run = Run {
        case,
        report,
        pids: &[],
        loaded,
    };
    Ok(expect.check(&run)?)
}

/// The reference client on `case`, judged by `expect` beyond being clean.
fn reference_says(case: Case, expect: Expect) -> Trial {
    Trial::test(format!("says/{}", case.id), move || {
        let launch = Launch::argv(vec![env!("CARGO_BIN_EXE_reference-client").into()]);
        let report = run(&case, &launch)?;
        judge(&case, &report, &expect, false)
    })
}

fn main() {
    run_if_relay();
    if let Ok(hold) = std::env::var(broken::PROXY) {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        broken::proxy(Duration::from_millis(hold.parse().unwrap_or(0)), &argv);
        return;
    }
    if let Ok(mode) = std::env::var(broken::BROKEN) {
        if mode.starts_with("http-") {
            if !broken_http_stateless::client(&mode) {
                broken_http::client(&mode);
            }
        } else if !broken_stateless::client(&mode) && !broken_tasks::client(&mode) {
            broken::client(&mode);
        }
        return;
    }
    let args = harness::test_arguments();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cases");
    let cases = harness::cases(&dir, Role::Client).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let find = |id: &str| {
        cases
            .iter()
            .find(|c| c.id == format!("client/{id}"))
            .cloned()
            .unwrap_or_else(|| panic!("case client/{id} is missing"))
    };
    let mut trials: Vec<Trial> = table()
        .into_iter()
        .map(|(mode, case, expect)| broken_trial(mode, find(case), expect))
        .collect();
    trials.push(reference_says(
        find("client-timeout-reset-on-progress"),
        Expect::clean().headline("ended as `timeout`; the client cancelled request"),
    ));
    // The stateless era (2026-07-28): one rule broken per client, each verdict exact, calm
    // and loaded.
    let stateless = broken_stateless::rows();
    for (mode, case, expect) in stateless {
        trials.extend(broken_trials(mode, find(case), expect));
    }
    // Task clients: one task rule broken per client, calm and loaded.
    for (mode, case, expect) in broken_tasks::rows() {
        trials.extend(broken_trials(mode, find(case), expect));
    }
    for transport in [TransportKind::Stdio, TransportKind::Http] {
        let applies = cases.iter().filter(|c| c.transports.contains(&transport));
        for case in applies {
            trials.push(reference_trial(case.clone(), false, transport));
            trials.push(harness::loaded_replay(reference_trial(
                case.clone(),
                true,
                transport,
            )));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
