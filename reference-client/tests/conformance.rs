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

use conformance::case::{Case, Role, TransportKind};
use conformance::engine::client::{run_client_case, ClientTransport};
use conformance::engine::{Options, Report};
use conformance::outcome::{Outcome, Severity};
use conformance::report::gate;
use conformance::transport::process::Launch;
use conformance::transport::relay::{run_if_relay, RELAY_FLAG};
use conformance::{harness, report};
use libtest_mimic::{Arguments, Failed, Trial};
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
        protocol_version: case.versions.last().cloned().unwrap_or_default(),
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
        Ok(harness::expect_clean(&case, &report, false, &next)?)
    })
    .with_kind(kind)
}

/// What a run of a broken (or fair but unusual) client must show.
#[derive(Clone, Default)]
struct Expect {
    /// A finding on this requirement, of this severity, whose message contains the text.
    finding: Option<(&'static str, Severity, &'static str)>,
    /// No finding above a note on any of these requirements.
    absent: Vec<&'static str>,
    /// No finding above a note whose message contains this text.
    never_saying: Option<&'static str>,
    /// The run must be clean (every finding a note).
    clean: bool,
    /// The console and JSON message (the headline) contains this text.
    headline: Option<&'static str>,
    /// The run's outcome is exactly this.
    outcome: Option<Outcome>,
}

impl Expect {
    fn caught(requirement: &'static str, severity: Severity) -> Expect {
        Expect {
            finding: Some((requirement, severity, "")),
            ..Expect::default()
        }
    }

    fn saying(mut self, text: &'static str) -> Expect {
        if let Some(f) = self.finding.as_mut() {
            f.2 = text;
        }
        self
    }

    fn clean() -> Expect {
        Expect {
            clean: true,
            ..Expect::default()
        }
    }

    fn without(mut self, requirement: &'static str) -> Expect {
        self.absent.push(requirement);
        self
    }

    /// The run's outcome must be exactly `outcome`.
    fn exactly(mut self, outcome: Outcome) -> Expect {
        self.outcome = Some(outcome);
        self
    }

    /// A note (or other finding of this severity) on `requirement` saying `text`, in a run
    /// that is otherwise as `self` says.
    fn noting(
        mut self,
        requirement: &'static str,
        severity: Severity,
        text: &'static str,
    ) -> Expect {
        self.finding = Some((requirement, severity, text));
        self
    }

    /// What is wrong with `report`, if anything.
    fn check(&self, report: &Report) -> Option<String> {
        if let Some((requirement, severity, saying)) = self.finding {
            let caught = report.findings.iter().any(|f| {
                f.severity == severity
                    && f.requirement() == requirement
                    && f.message.contains(saying)
            });
            let pass_allowed = self.outcome == Some(Outcome::Pass) || self.clean;
            if (report.outcome == Outcome::Pass && !pass_allowed) || !caught {
                return Some(format!(
                    "expected a {severity:?} on {requirement} saying `{saying}`"
                ));
            }
        }
        let counted = report
            .findings
            .iter()
            .filter(|f| f.severity > Severity::Note);
        for f in counted {
            if self.absent.contains(&f.requirement()) {
                return Some(format!("expected nothing on {}", f.requirement()));
            }
            if self.never_saying.is_some_and(|t| f.message.contains(t)) {
                return Some(format!(
                    "expected no finding saying `{}`",
                    self.never_saying.unwrap_or("")
                ));
            }
        }
        if self.clean && !gate::clean(report) {
            return Some("expected a clean run".into());
        }
        if let Some(outcome) = self.outcome.filter(|o| *o != report.outcome) {
            return Some(format!("expected the outcome {outcome}"));
        }
        if let Some(text) = self.headline {
            if !gate::headline(report).contains(text) {
                return Some(format!(
                    "expected the headline to say `{text}`: {}",
                    gate::headline(report)
                ));
            }
        }
        None
    }
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
        match expect.check(&report) {
            None => Ok(()),
            Some(problem) => Err(format!(
                "{problem}, got {}\n{}",
                report.outcome,
                report::explain(&case, &report, "fix the client engine's standing rules")
            )
            .into()),
        }
    })
}

/// The reference client on `case`, judged by `expect` beyond being clean.
fn reference_says(case: Case, expect: Expect) -> Trial {
    Trial::test(format!("says/{}", case.id), move || {
        let launch = Launch::argv(vec![env!("CARGO_BIN_EXE_reference-client").into()]);
        let report = run(&case, &launch)?;
        match expect.check(&report) {
            None => Ok(()),
            Some(problem) => Err(format!(
                "{problem}\n{}",
                report::explain(&case, &report, "fix the report")
            )
            .into()),
        }
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
        } else if !broken_stateless::client(&mode) {
            broken::client(&mode);
        }
        return;
    }
    let args = Arguments::from_args();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cases");
    let cases = harness::cases(&dir, Role::Client);
    let find = |id: &str| {
        cases
            .iter()
            .find(|c| c.id == format!("client/{id}"))
            .cloned()
            .unwrap_or_else(|| panic!("case client/{id} is missing"))
    };
    let mut trials = vec![
        broken_trial(
            "cancels-initialize",
            find("cancel-initialize-never-sent"),
            Expect::caught("CAN-04", Severity::Fail),
        ),
        broken_trial(
            "string-request-id",
            find("client-cancel-after-progress"),
            Expect::caught("CAN-01", Severity::Fail),
        ),
        broken_trial(
            "cancels-at-once",
            find("client-cancel-on-deadline"),
            Expect::caught("case", Severity::Warn).saying("allows 50 to 550 ms"),
        ),
        broken_trial(
            "cancels-after-answer",
            find("client-progress-tolerance"),
            Expect::caught("CAN-03", Severity::Warn),
        ),
        broken_trial(
            "gives-up-before-starting",
            find("cancel-initialize-never-sent"),
            Expect::clean(),
        ),
        broken_trial(
            "omits-initialized",
            find("client-shutdown-sequence"),
            Expect::caught("LIF-03", Severity::Fail).saying("never sent"),
        ),
        broken_trial(
            "lists-tools-early",
            find("client-handshake-order"),
            Expect::caught("LIF-04", Severity::Warn).saying("tools/list"),
        ),
        broken_trial(
            "reuses-answered-id",
            find("client-ids-unique"),
            Expect::caught("RPC-03", Severity::Fail).saying("already answered"),
        ),
        broken_trial(
            "sigterms-server",
            find("client-shutdown-sequence"),
            Expect::caught("STD-06", Severity::Warn)
                .saying("SIGTERM")
                .without("TMO-02"),
        ),
        broken_trial(
            "exits-with-cancel-in-flight",
            find("cancel-initialize-never-sent"),
            Expect::caught("CAN-04", Severity::Fail),
        ),
        broken_trial(
            "exits-without-closing",
            find("client-shutdown-sequence"),
            Expect::clean(),
        ),
        broken_trial(
            "probes-first",
            find("client-shutdown-sequence"),
            Expect::clean(),
        ),
        broken_trial(
            "answers-cancelled-request",
            find("client-server-cancels-request"),
            Expect::caught("CAN-13", Severity::Warn),
        ),
        broken_trial(
            "bad-progress",
            find("client-server-cancels-request"),
            Expect::caught("PRG-05", Severity::Fail),
        ),
        broken_trial(
            "resets-forever",
            find("client-max-timeout"),
            Expect::caught("case", Severity::Warn).saying("no message matching"),
        ),
        broken_trial(
            "times-out-silently",
            find("client-max-timeout"),
            Expect::caught("case", Severity::Warn).saying("no message matching"),
        ),
        broken_trial(
            "hangs-on-server-exit",
            find("client-server-exits"),
            Expect::caught("TMO-02", Severity::Fail),
        ),
        broken_trial(
            "never-cancels",
            find("client-cancel-after-progress"),
            Expect {
                never_saying: Some("never reported"),
                ..Expect::caught("case", Severity::Fail).saying("no message matching")
            },
        ),
        broken_trial(
            "http-cancel-without-session",
            find("client-http-session"),
            Expect::caught("HTTP-16", Severity::Fail).saying("the cancel POST"),
        ),
        broken_trial(
            "http-no-version",
            find("client-http-session"),
            Expect::caught("HTTP-18", Severity::Fail),
        ),
        broken_trial(
            "http-accepts-json-only",
            find("client-http-session"),
            Expect::caught("HTTP-05", Severity::Fail),
        ),
        broken_trial(
            "http-no-delete",
            find("client-http-session"),
            Expect::caught("HTTP-16", Severity::Warn).saying("DELETE"),
        ),
        broken_trial(
            "http-oversized",
            find("client-http-session"),
            Expect::caught("limit", Severity::Fail),
        ),
        broken_trial(
            "http-ignores-404",
            find("client-http-expired-session"),
            Expect::caught("HTTP-16", Severity::Fail).saying("next request"),
        ),
        reference_says(
            find("client-timeout-reset-on-progress"),
            Expect {
                headline: Some("ended as `timeout`; the client cancelled request"),
                ..Expect::clean()
            },
        ),
    ];
    // The stateless era (2026-07-28): one rule broken per client, each verdict exact, calm
    // and loaded.
    let stateless = broken_stateless::rows();
    for (mode, case, expect) in stateless {
        trials.extend(broken_trials(mode, find(case), expect));
    }
    for transport in [TransportKind::Stdio, TransportKind::Http] {
        let applies = cases.iter().filter(|c| c.transports.contains(&transport));
        for case in applies {
            trials.push(reference_trial(case.clone(), false, transport));
            trials.push(reference_trial(case.clone(), true, transport));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
