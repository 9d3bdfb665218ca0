//! Every case against the freshly built reference server, one libtest trial per case, every
//! level enforced: the reference must be clean.
//!
//! Each case runs once per protocol version it names, as `<id> [version]`, and again as
//! `loaded/<id> [version]` with a busy loop on every core: the verdict must not move. Every
//! case that applies to Streamable HTTP also runs as `http/<id> [version]` against
//! `conformance reference-server --http 127.0.0.1:{port}` (a fresh server on a free port per
//! case), at each version that has Streamable HTTP (2025-03-26 and later, 2026-07-28
//! included), and loaded at the newest of each era.
//!
//! Bless with `CONFORMANCE_BLESS=1 cargo test -p conformance --test reference -- <filter>`:
//! `<` lines that differ are rewritten from the actual run, but only when nothing else went
//! wrong (refused when CI is set).

use conformance::case::{Case, Role, TransportKind};
use conformance::engine::server::{run_case, Connect};
use conformance::engine::Options;
use conformance::era::ProtocolVersion;
use conformance::harness;
use conformance::transport::http::HttpTarget;
use conformance::transport::process::Launch;
use libtest_mimic::Trial;
use std::path::Path;

/// Cases the reference does not serve over HTTP (at every version, or at one), with the
/// reason its skip must give: they test what a server may refuse, or a cancel message that
/// 2026-07-28 over HTTP does not have.
const HTTP_SKIPS: [(&str, Option<&str>, &str); 3] = [
    (
        "server/http-one-stream-per-message",
        None,
        "offers no GET stream (405",
    ),
    (
        "server/cancel-request-id-fidelity",
        Some("2026-07-28"),
        "the cancel is closing the request's stream",
    ),
    (
        "server/cancel-id-type-mismatch",
        Some("2026-07-28"),
        "the cancel is closing the request's stream",
    ),
];

/// Cases about servers that lack something the reference offers at some versions (`@needs
/// no-tasks`): there the reference must skip them, with the reason; at the other versions they
/// run strictly.
const NEEDS_SKIPS: [(&str, &str, &str); 1] = [(
    "server/task-ignored-without-capability",
    "2025-11-25",
    "declares the `tasks.requests.tools.call` capability",
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

/// One trial: a case at one version over one transport.
fn trial(
    case: Case,
    version: ProtocolVersion,
    transport: TransportKind,
    bless: bool,
    loaded: bool,
) -> Trial {
    let over = match transport {
        TransportKind::Stdio => "",
        TransportKind::Http => "http/",
    };
    let name = format!(
        "{}{over}{} [{version}]",
        if loaded { "loaded/" } else { "" },
        case.id
    );
    let kind = case.level.as_str();
    Trial::test(name, move || {
        // Every core busy: the reference must stay clean on a loaded machine too.
        let _load = loaded.then(harness::saturate_cpus);
        let options = Options {
            protocol_version: version,
            ..Options::default()
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let report = runtime.block_on(run_case(&case, &reference(transport), &options))?;
        let over_http = HTTP_SKIPS.iter().find(|(id, at, _)| {
            transport == TransportKind::Http
                && *id == case.id
                && at.is_none_or(|v| v == version.as_str())
        });
        let lacking = NEEDS_SKIPS
            .iter()
            .find(|(id, at, _)| *id == case.id && *at == version.as_str());
        let skip = over_http
            .map(|(_, _, reason)| *reason)
            .or(lacking.map(|(_, _, reason)| *reason));
        if let Some(reason) = skip {
            return match &report.skip_reason {
                Some(why) if why.contains(reason) => Ok(()),
                other => Err(format!(
                    "the reference should skip {} because it {reason}…); got {other:?}, outcome {}",
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
    let args = harness::test_arguments();
    let bless = harness::bless_requested().unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let cases = harness::cases(&dir, Role::Server).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let mut trials = vec![];
    for case in cases {
        let stdio = case.transports.contains(&TransportKind::Stdio);
        if stdio {
            for version in case.versions.clone() {
                trials.push(trial(
                    case.clone(),
                    version,
                    TransportKind::Stdio,
                    bless,
                    false,
                ));
                trials.push(trial(
                    case.clone(),
                    version,
                    TransportKind::Stdio,
                    false,
                    true,
                ));
            }
        }
        if case.transports.contains(&TransportKind::Http) {
            // The harness tests Streamable HTTP from 2025-03-26 (2024-11-05 had HTTP+SSE).
            let versions: Vec<ProtocolVersion> = case
                .versions
                .iter()
                .copied()
                .filter(|v| v.has_streamable_http())
                .collect();
            for &version in &versions {
                // Blessing rewrites a case once, from its stdio run where it has one.
                trials.push(trial(
                    case.clone(),
                    version,
                    TransportKind::Http,
                    bless && !stdio,
                    false,
                ));
            }
            // Loaded at the newest version of each era the case covers.
            let newest = [
                versions.iter().rfind(|v| !v.is_stateless()),
                versions.iter().rfind(|v| v.is_stateless()),
            ];
            for &version in newest.into_iter().flatten() {
                trials.push(trial(
                    case.clone(),
                    version,
                    TransportKind::Http,
                    false,
                    true,
                ));
            }
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
