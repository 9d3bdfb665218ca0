//! `conformance check` on real recordings (tests/fixtures/traces/real/README.md): each finds
//! exactly the defects of those SDKs that were read in the SDKs' sources, at the trace lines
//! of the messages that show them, and nothing else: no finding that is not real.

#[path = "support/findings.rs"]
mod findings;

use conformance::check::{check, Checked};
use conformance::outcome::{Finding, Severity};
use conformance::trace::Trace;
use findings::judged;
use std::path::Path;

fn checked(name: &str) -> Checked {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces/real")
        .join(name);
    check(&Trace::read(&path).unwrap_or_else(|e| panic!("{e}")))
}

/// The message of the first finding above a note.
fn first_judged(findings: &[Finding]) -> &str {
    let found = findings.iter().find(|f| f.severity > Severity::Note);
    &found.expect("a finding above a note").message
}

/// Warnings of `requirement` at these lines.
fn warns(requirement: &'static str, lines: &[usize]) -> Vec<(Severity, &'static str, usize)> {
    lines
        .iter()
        .map(|&l| (Severity::Warn, requirement, l))
        .collect()
}

/// server-everything's `trigger-long-running-operation` never reads its abort signal
/// (`dist/tools/trigger-long-running-operation.js:43-55`): progress goes on after the cancel.
/// On stdio the answer to the later `echo` proves the cancel read; the progress that came
/// just after that proof may have been written before it, and is a note.
#[test]
fn server_everything_sends_progress_after_a_cancel_over_stdio() {
    let c = checked("ts-everything-stdio-progress-cancel.jsonl");
    assert_eq!(
        judged(&c.server),
        warns("CAN-05", &[13, 14, 15, 17, 18, 19])
    );
    assert_eq!(judged(&c.client), []);
    assert!(first_judged(&c.server).contains("an answer to a later request proved it"));

    let c = checked("py-everything-stdio-deadline.jsonl");
    assert_eq!(
        judged(&c.server),
        warns("CAN-05", &[16, 17, 18, 19, 21, 22, 23])
    );
    assert_eq!(judged(&c.client), []);
}

/// Over Streamable HTTP the same progress comes on the call's SSE stream; the cancel's `202`
/// and the grace prove it read.
#[test]
fn server_everything_sends_progress_after_a_cancel_over_http() {
    let c = checked("ts-everything-http-progress-cancel.jsonl");
    assert_eq!(judged(&c.server), warns("CAN-05", &[31, 32]));
    assert_eq!(judged(&c.client), []);
    assert!(first_judged(&c.server).contains("the cancel's 202 plus a 500 ms grace"));
}

/// The Python SDK's 2025-era Streamable HTTP transport answers a cancelled request with
/// `-32800` to end its stream (`mcp/server/streamable_http.py:446-457`).
#[test]
fn the_python_sdk_answers_a_cancelled_request_over_http() {
    let c = checked("ts-python-http-progress-cancel.jsonl");
    assert_eq!(judged(&c.server), warns("CAN-05", &[21]));
    assert_eq!(judged(&c.client), []);
    assert!(first_judged(&c.server).contains("error -32800"));
}

/// The TypeScript SDK's `request()` leaves its abort listener in place after the response
/// (`dist/esm/shared/protocol.js:737-739`): aborting a finished call's signal cancels it.
#[test]
fn the_typescript_sdk_client_cancels_a_request_it_had_the_answer_to() {
    let c = checked("ts-everything-stdio-late-cancel.jsonl");
    assert_eq!(judged(&c.client), warns("CAN-03", &[9]));
    assert_eq!(judged(&c.server), []);
    assert!(first_judged(&c.client).contains("1002 ms after"));
}

/// Sessions where both sides behaved: a deadline cancel, a cancel after progress in the
/// 2026-07-28 era (over HTTP by closing the call's stream), and one whose client fell back
/// from `server/discover` to `initialize`.
#[test]
fn sessions_where_both_sides_behaved_have_nothing_against_either() {
    for (name, version) in [
        ("ts-python-stdio-deadline.jsonl", "2025-11-25"),
        ("py-python-stdio-progress-cancel.jsonl", "2026-07-28"),
        ("py-python-http-progress-cancel.jsonl", "2026-07-28"),
        ("py-typescript-stdio-progress-cancel.jsonl", "2025-11-25"),
    ] {
        let c = checked(name);
        assert_eq!(judged(&c.server), [], "{name}: {:?}", c.server);
        assert_eq!(judged(&c.client), [], "{name}: {:?}", c.client);
        assert_eq!(c.version().as_deref(), Some(version), "{name}");
    }
}

/// A client that probes with `server/discover` (2026-07-28 `_meta`) and falls back to
/// `initialize` speaks the version `initialize` agreed to: its later requests are not held
/// to 2026-07-28's rules, nor the server's results.
#[test]
fn a_fallback_from_server_discover_speaks_the_version_initialize_agreed() {
    let c = checked("py-everything-stdio-deadline.jsonl");
    assert_eq!(c.version().as_deref(), Some("2025-11-25"));
    assert!(
        c.server.iter().all(|f| f.severity < Severity::Fail),
        "{:?}",
        c.server
    );
}
