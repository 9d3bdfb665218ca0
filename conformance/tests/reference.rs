//! Every case against the freshly built reference server, one libtest trial per case, every
//! level enforced: the reference must be clean.
//!
//! Each case also runs as `loaded/<id>` with a busy loop on every core: the verdict must not
//! move.
//!
//! Bless with `CONFORMANCE_BLESS=1 cargo test -p conformance --test reference -- <filter>`:
//! `<` lines that differ are rewritten from the actual run, but only when nothing else went
//! wrong (refused when CI is set).

use conformance::case::{Case, Role};
use conformance::engine::server::run_server_case;
use conformance::engine::Options;
use conformance::harness;
use conformance::transport::process::Launch;
use libtest_mimic::{Arguments, Trial};
use std::path::Path;

/// One trial per case and version it names (the reference speaks them all), so every case is
/// checked in each era it covers.
fn trial(case: Case, version: String, bless: bool, loaded: bool) -> Trial {
    let name = format!(
        "{}{} [{version}]",
        if loaded { "loaded/" } else { "" },
        case.id
    );
    let kind = case.level.as_str();
    Trial::test(name, move || {
        // Every core busy: the reference must stay clean on a loaded machine too.
        let _load = loaded.then(harness::saturate_cpus);
        let launch = Launch::argv(vec![
            env!("CARGO_BIN_EXE_conformance").into(),
            "reference-server".into(),
        ]);
        let options = Options {
            protocol_version: version.clone(),
            ..Options::default()
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let report = runtime.block_on(run_server_case(&case, &launch, &options))?;
        let next = format!(
            "if the reference is right and the case is stale, bless it: CONFORMANCE_BLESS=1 cargo test -p conformance --test reference -- {} (then review `git diff cases/`)",
            case.id
        );
        Ok(harness::expect_clean(&case, &report, bless && !loaded, &next)?)
    })
    .with_kind(kind)
}

fn main() {
    let args = Arguments::from_args();
    let bless = harness::bless_requested().unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let cases = harness::cases(&dir, Role::Server);
    let mut trials = vec![];
    for case in cases {
        for version in case.versions.clone() {
            trials.push(trial(case.clone(), version.clone(), bless, false));
            trials.push(trial(case.clone(), version, false, true));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
