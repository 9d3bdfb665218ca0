//! One test of [`super::Server::run`]: a case at its version against the server, judged by
//! the gate the command line uses, and what is said after the run. The state all tests
//! share (the cases, the target, what the server speaks, the notes) has one owner here.

use crate::baseline::Baseline;
use crate::case::Case;
use crate::case_report::CaseResult;
use crate::case_report::Report;
use crate::engine::server::{run_case, Connect};
use crate::engine::Options;
use crate::era::ProtocolVersion;
use crate::error::StartError;
use crate::outcome::Outcome;
use crate::pattern::Captures;
use crate::report::dump;
use crate::report::gate::{self, BaselineState, Gate, Verdict};
use crate::versions::{self, Choice, Spoken, Unit};
use crate::{runner, spoken, suite};
use libtest_mimic::{Completion, Failed};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// What the user asked of the gate, beyond the target.
pub(super) struct Wishes {
    pub strict: bool,
    pub bless: bool,
    pub dump: Option<PathBuf>,
}

/// What every test of a run shares.
pub(super) struct Shared {
    pub cases: Vec<Case>,
    pub baseline: Option<Baseline>,
    pub choice: Choice,
    connect: Connect,
    options: Options,
    wishes: Wishes,
    /// What the server speaks, asked by the first test that needs it.
    spoken: OnceLock<Result<Spoken, StartError>>,
    notes: Mutex<Notes>,
}

/// What the tests saw, for the lines after libtest's own.
#[derive(Default)]
struct Notes {
    /// Tests that got as far as planning their case.
    played: usize,
    /// Tests whose case ran (was not skipped).
    verified: usize,
    /// The versions cases ran at.
    versions: Vec<ProtocolVersion>,
    /// `id [version]: message` of each warning that passed.
    warnings: Vec<String>,
    /// Baseline cases that still fail.
    expected: usize,
    blessed: usize,
}

impl Shared {
    pub fn new(
        cases: Vec<Case>,
        baseline: Option<Baseline>,
        connect: Connect,
        choice: Choice,
        options: Options,
        wishes: Wishes,
    ) -> Shared {
        Shared {
            cases,
            baseline,
            choice,
            connect,
            options,
            wishes,
            spoken: OnceLock::new(),
            notes: Mutex::new(Notes::default()),
        }
    }

    /// Tests at once: as many as the command line runs cases at once (four per CPU, at
    /// least 8, for servers started per case; one for a running server they share).
    pub fn jobs(&self) -> usize {
        match &self.connect {
            Connect::Http(target) if !target.isolated() => 1,
            _ => crate::runner::default_jobs(),
        }
    }

    /// How long case `index`'s own steps wait at least (the longest start first).
    pub fn scripted_wait(&self, index: usize) -> Duration {
        runner::scripted_wait(&self.cases[index].steps, &Captures::new())
    }

    fn notes(&self) -> std::sync::MutexGuard<'_, Notes> {
        self.notes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Plays case `index` (at `version`, for a run of every version) and judges it.
    pub fn play(
        &self,
        index: usize,
        version: Option<ProtocolVersion>,
    ) -> Result<Completion, Failed> {
        let case = &self.cases[index];
        let spoken = self.spoken()?;
        let unit = match self.unit(case, version, spoken) {
            Ok(unit) => unit,
            Err(ignored) => return Ok(ignored),
        };
        let result = self.run(case, &unit, spoken)?;
        let report = result.as_ref().map_err(|e| Failed::from(e.to_string()))?;
        if let Some(dir) = &self.wishes.dump {
            dump::dump(dir, case, report, version.map(ProtocolVersion::as_str))
                .map_err(|e| format!("cannot write the dump into {}: {e}", dir.display()))?;
        }
        let gate = Gate {
            strict: self.wishes.strict,
            bless: self.wishes.bless,
            baseline: self.baseline.as_ref(),
        };
        let verdict = gate::verdict(case, &result, &gate, &self.next(case));
        if verdict.outcome == Outcome::Skip {
            return Ok(Completion::ignored_with(verdict.message));
        }
        {
            let mut notes = self.notes();
            notes.verified += 1;
            if !notes.versions.contains(&unit.version) {
                notes.versions.push(unit.version);
            }
        }
        self.conclude(case, &unit, report, &verdict)
    }

    /// What the server speaks, asked by the first test that needs it; a server that cannot
    /// be asked, or answered none of the openings, fails every test.
    fn spoken(&self) -> Result<&Spoken, Failed> {
        let spoken = self
            .spoken
            .get_or_init(|| spoken::spoken_by(&self.connect, &self.choice, &self.options))
            .as_ref()
            .map_err(|e| format!("cannot ask the server which versions it speaks: {e}"))?;
        if let Some(untestable) = &spoken.untestable {
            return Err(format!(
                "cannot test the server: it answered none of the opening requests ({}); stderr: {}",
                untestable.why.join("; "),
                untestable.stderr.join(" | ")
            )
            .into());
        }
        Ok(spoken)
    }

    /// The case at `version` (or the version the plan picks) as a unit to run; `Err` is the
    /// test ignored, with why, when the server does not speak it or the case does not apply.
    fn unit(
        &self,
        case: &Case,
        version: Option<ProtocolVersion>,
        spoken: &Spoken,
    ) -> Result<Unit, Completion> {
        let units = versions::plan(std::slice::from_ref(case), &self.choice, spoken);
        let unit = match version {
            Some(v) => units.into_iter().find(|u| u.version == v),
            None => units.into_iter().next(),
        };
        self.notes().played += 1;
        let Some(unit) = unit else {
            return Err(Completion::ignored_with(format!(
                "the server does not speak {} ({})",
                version.map_or("", ProtocolVersion::as_str),
                spoken.evidence.join("; ")
            )));
        };
        match unit.skip {
            Some(reason) => Err(Completion::ignored_with(reason)),
            None => Ok(unit),
        }
    }

    /// Runs the unit's case against the server, on a runtime of its own.
    fn run(&self, case: &Case, unit: &Unit, spoken: &Spoken) -> Result<CaseResult, Failed> {
        // Without a target file, the server's own tools play the roles they fit; either way
        // the cases know what the server declared of its tools.
        let fixtures = Some(crate::discovery::fixtures_for(
            self.options.fixtures.clone(),
            &spoken.listings,
        ));
        let options = Options {
            protocol_version: unit.version,
            fixtures,
            ..self.options.clone()
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
        Ok(runtime.block_on(run_case(case, &self.connect, &options)))
    }

    /// What a verdict that was not a skip means for the test: blessed, an expected failure
    /// or a stale baseline entry, a failure, or a pass (a warning noted for after the run).
    fn conclude(
        &self,
        case: &Case,
        unit: &Unit,
        report: &Report,
        verdict: &Verdict,
    ) -> Result<Completion, Failed> {
        if verdict.bless {
            suite::bless(case, &report.bless)
                .map_err(|e| format!("cannot rewrite {}: {e}", case.path))?;
            eprintln!(
                "blessed {} ({} lines); review with `git diff`",
                case.path,
                report.bless.len()
            );
            self.notes().blessed += 1;
            return Ok(Completion::Completed);
        }
        match verdict.baseline {
            Some(BaselineState::ExpectedFailure) => {
                self.notes().expected += 1;
                return Ok(Completion::Completed);
            }
            Some(BaselineState::Stale) => return Err(verdict.message.clone().into()),
            None => {}
        }
        if verdict.fails_run(self.wishes.strict) {
            return Err(format!(
                "{} at {}: {}\n{}",
                verdict.outcome, unit.version, verdict.message, verdict.details
            )
            .into());
        }
        if verdict.outcome == Outcome::Warn {
            let shown = format!("{} [{}]", case.id, unit.version);
            self.notes()
                .warnings
                .push(format!("{shown}: {}", verdict.message));
        }
        Ok(Completion::Completed)
    }

    /// The advice that ends a failure's explanation.
    fn next(&self, case: &Case) -> String {
        let listed = match &self.baseline {
            Some(b) => format!("list it in {}", b.path),
            None => "list it in a baseline file (.baseline(FILE))".into(),
        };
        format!(
            "fix the server, or, if the failure is known, {listed}; rerun this case alone with `cargo test --test {} -- {}`",
            test_name(),
            case.id
        )
    }

    /// Says what the run verified, after libtest's summary. Returns false when nothing was:
    /// a version asked for by name that the server does not speak skips every case, and that
    /// must not pass.
    pub fn summarize(&self) -> bool {
        let mut notes = self.notes();
        notes.warnings.sort();
        if notes.played == 0 {
            return true;
        }
        let spoken = match self.spoken.get() {
            _ if versions::to_probe(&self.choice).is_empty() => String::new(),
            Some(Ok(spoken)) if !spoken.versions.is_empty() => {
                format!(
                    "; the server speaks {}",
                    ProtocolVersion::joined(&spoken.versions)
                )
            }
            _ => "; the probes found no version the server speaks".into(),
        };
        let mut used = notes.versions.clone();
        used.sort();
        println!(
            "conformance: {} of {} tests ran a case against {} (protocol {}: {}{spoken}){}",
            notes.verified,
            notes.played,
            self.connect.display(),
            self.choice.as_str(),
            if used.is_empty() {
                "none".into()
            } else {
                ProtocolVersion::joined(&used)
            },
            if notes.blessed > 0 {
                format!(", {} blessed", notes.blessed)
            } else {
                String::new()
            }
        );
        if notes.expected > 0 {
            println!(
                "{} baseline case(s) still fail, as the baseline expects",
                notes.expected
            );
        }
        if !notes.warnings.is_empty() {
            println!(
                "{} warning(s), which pass (a broken SHOULD; .strict() makes them fail):",
                notes.warnings.len()
            );
            for warning in &notes.warnings {
                println!("  {warning}");
            }
        }
        if matches!(self.choice, Choice::Exact(_)) && notes.verified == 0 {
            eprintln!(
                "error: nothing was verified at {}: every case was skipped (the ignored tests give each reason)",
                self.choice.as_str()
            );
            return false;
        }
        true
    }
}

/// The test binary's name as `cargo test --test NAME` takes it (without cargo's hash).
fn test_name() -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_ref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "NAME".into());
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            name.to_string()
        }
        _ => stem,
    }
}
