//! Every case against the freshly built reference server, one libtest trial per case, every
//! level enforced: the reference must be clean.
//!
//! Each case also runs as `loaded/<id>` with a busy loop on every core: the verdict must not
//! move. Every case that applies to Streamable HTTP also runs as `http/<id>` (and
//! `loaded/http/<id>`) against `conformance reference-server --http 127.0.0.1:{port}`, a
//! fresh server on a free port per case.
//!
//! Bless with `CONFORMANCE_BLESS=1 cargo test -p conformance --test reference -- <filter>`:
//! `<` lines that differ are rewritten from the actual run, but only when nothing else went
//! wrong (refused when CI is set).

use conformance::case::{Case, Role, TransportKind, HANDSHAKE_VERSIONS};
use conformance::engine::server::{run_case, Connect};
use conformance::engine::Options;
use conformance::harness;
use conformance::transport::http::HttpTarget;
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

/// Cases the reference does not serve over HTTP, with the reason its skip must give: they
/// test what a server may refuse.
const HTTP_SKIPS: [(&str, &str); 1] = [(
    "server/http-one-stream-per-message",
    "offers no GET stream (405",
)];

/// The reference server over a transport.
fn reference(transport: TransportKind) -> Connect {
    let exe: String = env!("CARGO_BIN_EXE_conformance").into();
    match transport {
        TransportKind::Stdio => Connect::Stdio(Launch::argv(vec![exe, "reference-server".into()])),
        TransportKind::Http => Connect::Http(HttpTarget {
            url: "http://127.0.0.1:{port}/mcp".into(),
            launch: Some(Launch::argv(vec![
                exe,
                "reference-server".into(),
                "--http".into(),
                "127.0.0.1:{port}".into(),
            ])),
        }),
    }
}

fn trial(case: Case, transport: TransportKind, bless: bool, loaded: bool) -> Trial {
    let over = match transport {
        TransportKind::Stdio => "",
        TransportKind::Http => "http/",
    };
    let name = format!("{}{over}{}", if loaded { "loaded/" } else { "" }, case.id);
    let kind = case.level.as_str();
    Trial::test(name, move || {
        // Every core busy: the reference must stay clean on a loaded machine too.
        let _load = loaded.then(harness::saturate_cpus);
        let options = Options {
            protocol_version: version_for(&case),
            ..Options::default()
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let report = runtime.block_on(run_case(&case, &reference(transport), &options))?;
        let skip = HTTP_SKIPS
            .iter()
            .find(|(id, _)| transport == TransportKind::Http && *id == case.id);
        if let Some((_, reason)) = skip {
            return match &report.skip_reason {
                Some(why) if why.contains(reason) => Ok(()),
                other => Err(format!(
                    "the reference over HTTP should skip {} because it {reason}…); got {other:?}, outcome {}",
                    case.id, report.outcome
                )
                .into()),
            };
        }
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
    for loaded in [false, true] {
        for transport in [TransportKind::Stdio, TransportKind::Http] {
            for case in cases.iter().filter(|c| c.transports.contains(&transport)) {
                // Blessing rewrites a case once, from its stdio run where it has one.
                let blesses = bless
                    && (transport == TransportKind::Stdio
                        || case.transports == [TransportKind::Http]);
                trials.push(trial(case.clone(), transport, blesses, loaded));
            }
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
