//! Every case against the freshly built reference server, one libtest trial per case, every
//! level enforced: the reference must be clean.
//!
//! Bless with `CONFORMANCE_BLESS=1 cargo test -p conformance --test reference -- <filter>`:
//! `<` lines that differ are rewritten from the actual run (refused when CI is set).

use conformance::case::{Case, Role, HANDSHAKE_VERSIONS};
use conformance::outcome::{Outcome, Severity};
use conformance::report;
use conformance::run::{run_case, Options};
use conformance::suite;
use conformance::target::Launch;
use libtest_mimic::{Arguments, Failed, Trial};
use std::path::Path;

/// The version a case runs at here: the default when the case applies to it, else the newest
/// version the case names.
fn version_for(case: &Case) -> String {
    let default = Options::default().protocol_version;
    if case.versions.contains(&default) {
        return default;
    }
    HANDSHAKE_VERSIONS
        .iter()
        .rev()
        .find(|v| case.versions.iter().any(|c| c == *v))
        .map(|v| v.to_string())
        .unwrap_or(default)
}

fn trial(case: Case, bless: bool) -> Trial {
    let name = case.id.clone();
    let kind = case.level.as_str();
    Trial::test(name, move || {
        let launch = Launch {
            argv: vec![env!("CARGO_BIN_EXE_conformance").into(), "reference-server".into()],
            env: vec![],
            cwd: None,
        };
        let options = Options { protocol_version: version_for(&case), ..Options::default() };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let report = runtime.block_on(run_case(&case, &launch, &options))?;
        let judged = report.findings.iter().any(|f| f.severity > Severity::Note);
        if !judged && report.outcome != Outcome::Skip {
            return Ok(());
        }
        if bless && !report.bless.is_empty() {
            suite::bless(&case, &report.bless)?;
            eprintln!("blessed {} ({} lines)", case.path, report.bless.len());
            return Ok(());
        }
        let next = format!(
            "if the reference is right and the case is stale, bless it: CONFORMANCE_BLESS=1 cargo test -p conformance --test reference -- {} (then review `git diff cases/`)",
            case.id
        );
        Err(Failed::from(format!("{}\n{}", report.outcome, report::explain(&case, &report, &next))))
    })
    .with_kind(kind)
}

fn main() {
    let args = Arguments::from_args();
    let bless = std::env::var_os("CONFORMANCE_BLESS").is_some_and(|v| v == "1");
    if bless && std::env::var_os("CI").is_some() {
        eprintln!("error: blessing is refused when CI is set; bless locally and commit the diff");
        std::process::exit(2);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cases");
    let cases = match suite::from_dir(&dir) {
        Ok(cases) => cases,
        Err(errors) => {
            for e in errors {
                eprintln!("error: bug in case: {e}");
            }
            std::process::exit(2);
        }
    };
    let trials = cases
        .into_iter()
        .filter(|c| c.role == Role::Server)
        .map(|c| trial(c, bless))
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
