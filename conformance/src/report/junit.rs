//! `--junit PATH`: JUnit XML, the format GitHub, GitLab and Jenkins all read. One testcase per
//! case; failures carry the diff, skips are skipped, warnings are failures only with `--strict`.

use super::gate::{failing, BaselineState, Verdict};
use crate::outcome::Outcome;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

/// The JUnit document of a run against the target named `name` (a stable name, no path: CI
/// keeps a test's history by it).
pub fn render(name: &str, verdicts: &[Verdict], strict: bool) -> String {
    let mut suite = TestSuite::new(format!("conformance ({name})"));
    for v in verdicts {
        let failing = failing(v.outcome, strict);
        let mut status = if v.baseline == Some(BaselineState::Stale) {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(v.message.clone());
            s
        } else if failing && v.baseline.is_none() {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(v.message.clone())
                .set_description(v.details.clone());
            s.set_type(v.outcome.as_str());
            s
        } else if v.outcome == Outcome::Skip {
            let mut s = TestCaseStatus::skipped();
            s.set_message(v.message.clone());
            s
        } else {
            TestCaseStatus::success()
        };
        if v.baseline == Some(BaselineState::ExpectedFailure) {
            status = TestCaseStatus::skipped();
            status.set_message(format!("expected failure (baseline): {}", v.message));
        }
        let (class, name) = v.id.rsplit_once('/').unwrap_or(("", &v.id));
        // A case run at several versions (`--protocol-version all`) is one test per version.
        let repeated = verdicts.iter().filter(|w| w.id == v.id).count() > 1;
        let name = match (&v.version, repeated) {
            (Some(version), true) => format!("{name} [{version}]"),
            _ => name.to_string(),
        };
        let mut case = TestCase::new(name, status);
        if let Some(version) = &v.version {
            case.add_property(("protocolVersion", version.as_str()));
        }
        case.set_classname(class.replace('/', "."));
        case.set_time(Duration::from_millis(v.duration_ms));
        if v.runs.len() > 1 {
            let runs: Vec<&str> = v.runs.iter().map(|o| o.as_str()).collect();
            case.add_property(("runs", runs.join(",").as_str()));
            case.add_property(("flaky", if v.flaky { "true" } else { "false" }));
        }
        if !v.details.is_empty() && !failing {
            case.set_system_out(v.details.clone());
        }
        suite.add_test_case(case);
    }
    let mut report = Report::new("conformance");
    report.add_test_suite(suite);
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- cannot render JUnit: {e} -->"))
}

/// The JUnit document of a run that could not test its target at all: one test, in error,
/// with the reason and the target's stderr.
pub fn render_untestable(name: &str, why: &str, stderr: &str) -> String {
    let mut suite = TestSuite::new(format!("conformance ({name})"));
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status
        .set_message(why.to_string())
        .set_type("untestable")
        .set_description(stderr.to_string());
    let mut case = TestCase::new("opening", status);
    case.set_classname("target");
    suite.add_test_case(case);
    let mut report = Report::new("conformance");
    report.add_test_suite(suite);
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- cannot render JUnit: {e} -->"))
}
