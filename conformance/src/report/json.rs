//! `--json PATH`: one document a CI step or a dashboard can read.

use super::gate::{Summary, Verdict};
use serde_json::{json, Value};

/// The JSON report of a run.
pub fn render(
    target: &str,
    transport: &str,
    protocol_version: &str,
    spoken: &[String],
    verdicts: &[Verdict],
    summary: &Summary,
) -> Value {
    let era = |v: &Option<String>| {
        v.as_deref()
            .and_then(crate::era::ProtocolVersion::parse)
            .map(|p| match p.era() {
                crate::era::Era::Handshake => "handshake",
                crate::era::Era::Stateless => "stateless",
            })
    };
    json!({
        "harness": {"name": "conformance", "version": env!("CARGO_PKG_VERSION")},
        "target": target,
        "transport": transport,
        "protocolVersion": protocol_version,
        "targetVersions": spoken,
        "cases": verdicts.iter().map(|v| json!({
            "id": v.id,
            "outcome": v.outcome.as_str(),
            "level": v.level,
            "requirements": v.requirements,
            "message": v.message,
            "duration_ms": v.duration_ms,
            "baseline": v.baseline.map(|b| b.as_str()),
            "runs": v.runs.iter().map(|o| o.as_str()).collect::<Vec<_>>(),
            "protocolVersion": v.version,
            "era": era(&v.version),
            "flaky": v.flaky,
        })).collect::<Vec<_>>(),
        "summary": {
            "pass": summary.pass,
            "fail": summary.fail,
            "warn": summary.warn,
            "info": summary.info,
            "skip": summary.skip,
        },
    })
}

/// The JSON report of a run that could not test its target at all: no cases, the reason.
pub fn render_untestable(
    target: &str,
    transport: &str,
    protocol_version: &str,
    why: &[String],
) -> Value {
    json!({
        "harness": {"name": "conformance", "version": env!("CARGO_PKG_VERSION")},
        "target": target,
        "transport": transport,
        "protocolVersion": protocol_version,
        "targetVersions": [],
        "error": {"kind": "untestable", "message": why.join("; ")},
        "cases": [],
        "summary": {"pass": 0, "fail": 0, "warn": 0, "info": 0, "skip": 0},
    })
}
