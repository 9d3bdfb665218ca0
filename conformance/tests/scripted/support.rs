//! What every scripted test needs: a case from its text, a run of it against a scripted
//! target on tokio's paused clock, and the verdict in a form an assertion can read.

use conformance::case::Case;
use conformance::case_report::Report;
use conformance::engine::client::play_client;
use conformance::engine::server::play;
use conformance::engine::Options;
use conformance::era::ProtocolVersion;
use conformance::outcome::{Outcome, Severity};
use conformance::transport::scripted::{Heard, Role, Script, Scripted};
use std::time::Duration;

/// `n` milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A server case: its headers (`@requirement`, `@level`, …) and steps, as a case file has
/// them.
pub fn server_case(text: &str) -> Case {
    conformance::case::parse(
        "server/scripted",
        "scripted.mcpt",
        &format!("# scripted\n{text}"),
    )
    .unwrap_or_else(|e| panic!("the case does not parse: {e}"))
}

/// A client case.
pub fn client_case(text: &str) -> Case {
    conformance::case::parse(
        "client/scripted",
        "scripted.mcpt",
        &format!("# scripted\n{text}"),
    )
    .unwrap_or_else(|e| panic!("the case does not parse: {e}"))
}

/// The options of a client run at `version`: the harness's defaults, with the case limit
/// `conformance client` gives an adapter (30 s).
pub fn client_options(version: &str) -> Options {
    Options {
        case_timeout: Duration::from_secs(30),
        ..options(version)
    }
}

/// A case of the repository's `cases/` folder, by id (`server/no-response-after-cancel`).
pub fn shipped_case(id: &str) -> Case {
    let path = format!("{}/../cases/{id}.mcpt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    conformance::case::parse(id, &path, &text).unwrap_or_else(|e| panic!("{e}"))
}

/// The options of a run at `version`, with the harness's defaults otherwise.
pub fn options(version: &str) -> Options {
    Options {
        protocol_version: ProtocolVersion::parse(version).expect("a version the harness knows"),
        ..Options::default()
    }
}

/// What a run gave: the report, and what the target read.
pub struct Played {
    pub report: Report,
    pub heard: Vec<Heard>,
}

impl Played {
    /// The findings, one line each: `warn CAN-05 @7: message`.
    pub fn findings(&self) -> Vec<String> {
        self.report
            .findings
            .iter()
            .map(|f| {
                let severity = match f.severity {
                    Severity::Fail => "fail",
                    Severity::Warn => "warn",
                    Severity::Note => "note",
                    _ => "info",
                };
                format!("{severity} {} @{}: {}", f.requirement(), f.line, f.message)
            })
            .collect()
    }

    /// Whether a finding of `severity` cites `requirement`.
    pub fn has(&self, severity: Severity, requirement: &str) -> bool {
        self.report
            .findings
            .iter()
            .any(|f| f.severity == severity && f.requirement() == requirement)
    }

    /// Everything a failed assertion should show: the outcome, the findings, the transcript.
    pub fn shown(&self) -> String {
        let mut text = format!("outcome {:?}\n", self.report.outcome);
        for f in self.findings() {
            text.push_str(&format!("  {f}\n"));
        }
        for entry in &self.report.transcript {
            text.push_str(&format!(
                "  +{:>5} ms {:?} {} {}\n",
                entry.at.as_millis(),
                entry.direction,
                entry.channel,
                entry.text
            ));
        }
        text
    }

    /// Asserts the outcome, showing the run when it differs.
    pub fn outcome(&self, want: Outcome) -> &Played {
        assert_eq!(self.report.outcome, want, "\n{}", self.shown());
        self
    }

    /// Asserts a finding of `severity` citing `requirement`.
    pub fn cites(&self, severity: Severity, requirement: &str) -> &Played {
        assert!(
            self.has(severity, requirement),
            "no {severity:?} {requirement}:\n{}",
            self.shown()
        );
        self
    }

    /// Asserts a finding of `severity` citing `requirement` at case line `line`.
    pub fn cites_at(&self, severity: Severity, requirement: &str, line: usize) -> &Played {
        let cited =
            self.report.findings.iter().any(|f| {
                f.severity == severity && f.requirement() == requirement && f.line == line
            });
        assert!(
            cited,
            "no {severity:?} {requirement} at line {line}:\n{}",
            self.shown()
        );
        self
    }

    /// Asserts that no finding cites `requirement`.
    pub fn never_cites(&self, requirement: &str) -> &Played {
        let cited = self
            .report
            .findings
            .iter()
            .any(|f| f.requirement() == requirement);
        assert!(!cited, "{requirement} cited:\n{}", self.shown());
        self
    }

    /// Asserts that some finding's message contains `text`.
    pub fn says(&self, text: &str) -> &Played {
        let said = self
            .report
            .findings
            .iter()
            .any(|f| f.message.contains(text));
        assert!(said, "no finding says {text:?}:\n{}", self.shown());
        self
    }
}

/// Plays a server case at `version` against a server that does what `script` says.
pub async fn serve(case: &Case, version: &str, role: Role, script: Script) -> Played {
    serve_with(case, &options(version), role, script).await
}

/// [`serve`] with options of the test's own.
pub async fn serve_with(case: &Case, options: &Options, role: Role, script: Script) -> Played {
    let target = Scripted::new(role, script).patience(options.reply_timeout);
    let heard = target.heard();
    let report = play(case, options, target, "scripted".into()).await;
    let heard = heard.lock().unwrap().clone();
    Played { report, heard }
}

/// Plays a client case against a client that does what `script` says.
pub async fn client(case: &Case, options: &Options, role: Role, script: Script) -> Played {
    let target = Scripted::new(role, script).patience(options.reply_timeout);
    let heard = target.heard();
    let report = play_client(case, options, target, "scripted".into()).await;
    let heard = heard.lock().unwrap().clone();
    Played { report, heard }
}
