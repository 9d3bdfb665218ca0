//! Every case against the freshly built reference server, one libtest trial per case, every
//! level enforced: the reference must be clean.
//!
//! Each case also runs as `loaded/<id>` with a busy loop on every core: the verdict must not
//! move.
//!
//! Bless with `CONFORMANCE_BLESS=1 cargo test -p conformance --test reference -- <filter>`:
//! `<` lines that differ are rewritten from the actual run, but only when nothing else went
//! wrong (refused when CI is set).

use conformance::case::{Case, Role, TransportKind, HANDSHAKE_VERSIONS};
use conformance::engine::server::run_server_case;
use conformance::engine::Options;
use conformance::harness;
use conformance::transport::process::Launch;
use libtest_mimic::{Arguments, Trial};
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

fn trial(case: Case, bless: bool, loaded: bool) -> Trial {
    let name = if loaded {
        format!("loaded/{}", case.id)
    } else {
        case.id.clone()
    };
    let kind = case.level.as_str();
    Trial::test(name, move || {
        // Every core busy: the reference must stay clean on a loaded machine too.
        let _load = loaded.then(harness::saturate_cpus);
        let launch = Launch::argv(vec![
            env!("CARGO_BIN_EXE_conformance").into(),
            "reference-server".into(),
        ]);
        let options = Options {
            protocol_version: version_for(&case),
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
    // Cases over Streamable HTTP run against the reference once it serves HTTP; until then
    // the stdio cases.
    let cases: Vec<Case> = harness::cases(&dir, Role::Server)
        .into_iter()
        .filter(|c| c.transports.contains(&TransportKind::Stdio))
        .collect();
    let loaded: Vec<Trial> = cases
        .iter()
        .cloned()
        .map(|c| trial(c, false, true))
        .collect();
    let trials = cases
        .into_iter()
        .map(|c| trial(c, bless, false))
        .chain(loaded)
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
