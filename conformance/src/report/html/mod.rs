//! `--html FILE` and `conformance report`: one self-contained page (inline CSS, script and
//! SVG; nothing fetched) from one or several JSON reports. The matrix, the problems and each
//! case's findings and diff are laid out by the template (`page.html`, minijinja, escaped);
//! the sequence diagrams are drawn by the page's small script (`page.js`) from the
//! transcripts embedded as JSON, only when a case is opened, so a large run stays usable.

mod view;

use super::json::RunReport;
use minijinja::value::Serde;
use minijinja::{context, Environment, Value};
use serde_json::json;
pub use view::{family_of, page, Page};

const TEMPLATE: &str = include_str!("page.html");
const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// The page for these reports, each named by the file it came from.
pub fn render(reports: Vec<(String, RunReport)>) -> Result<String, RenderError> {
    let page = view::page(reports);
    let data = embedded(&page);
    let mut env = Environment::new();
    env.add_template("page.html", TEMPLATE)
        .map_err(RenderError::Template)?;
    let template = env
        .get_template("page.html")
        .map_err(RenderError::Template)?;
    let generated = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    template
        .render(context! {
            page => Value::from(Serde(&page)),
            title => title(&page),
            generated => generated,
            harness => env!("CARGO_PKG_VERSION"),
            style => Value::from_safe_string(STYLE.to_string()),
            script => Value::from_safe_string(SCRIPT.to_string()),
            data => Value::from_safe_string(data),
        })
        .map_err(RenderError::Render)
}

/// Why the page could not be made: a bug in the harness, not in the reports.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The template does not parse.
    #[error("the HTML template is broken: {0}")]
    Template(#[source] minijinja::Error),
    /// The template does not render these reports.
    #[error("cannot render the HTML report: {0:#}")]
    Render(#[source] minijinja::Error),
}

/// What the page is about, in a few words: the target of a single run, or how many runs of
/// how many targets.
fn title(page: &Page) -> String {
    let mut targets: Vec<&str> = page.columns.iter().map(|c| c.target.as_str()).collect();
    targets.sort_unstable();
    targets.dedup();
    match (targets.as_slice(), page.columns.len()) {
        ([one], 1) => format!("MCP conformance: {one}"),
        ([one], n) => format!("MCP conformance: {one}, {n} runs"),
        (many, n) => format!("MCP conformance: {} targets, {n} runs", many.len()),
    }
}

/// The transcripts the diagrams are drawn from, as JSON safe inside a `<script>` element:
/// per cell, the target's name, its role, the cancels, the findings as `[line, severity,
/// requirement]`, and each entry as
/// `[atMs, direction, channel, session, flags, line, mark, text]` (flags: 1 internal,
/// 2 stamped; 0 for an absent line or mark; direction `s`, `r` or `t`).
fn embedded(page: &Page) -> String {
    let cells: Vec<serde_json::Value> = page
        .diagrams
        .iter()
        .map(|d| {
            let entries: Vec<serde_json::Value> = d
                .entries
                .iter()
                .map(|e| {
                    let flags = u8::from(e.internal) | (u8::from(e.stamped) << 1);
                    json!([
                        e.at_ms,
                        &e.direction[..1],
                        if e.channel == "stdio" {
                            json!(0)
                        } else {
                            json!(e.channel)
                        },
                        e.session,
                        flags,
                        e.line.unwrap_or(0),
                        e.mark.as_deref().map_or(json!(0), |m| json!(m)),
                        e.text,
                    ])
                })
                .collect();
            json!({
                "target": d.target,
                "role": d.role,
                "cancels": d.cancels,
                "findings": d.findings,
                "entries": entries,
            })
        })
        .collect();
    // `<` only ever appears inside JSON strings, where `\u003c` means the same: no `</script>`
    // or `<!--` can end the element early.
    serde_json::Value::Array(cells)
        .to_string()
        .replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_a_target_wrote_cannot_break_out_of_the_page() {
        let stats = json!({"count": 0, "medianMs": null, "p95Ms": null, "maxMs": null});
        let hostile = "</script><script>alert(1)</script><!--";
        let report: RunReport = serde_json::from_value(json!({
            "schemaVersion": 1, "harness": {"name": "conformance", "version": "0"},
            "startedAt": "2026-12-02T00:00:00Z", "durationMs": 1, "role": "server",
            "target": {"command": hostile, "name": hostile, "version": null},
            "transport": "stdio", "protocolVersion": "auto", "targetVersions": [],
            "summary": {"pass": 0, "fail": 1, "warn": 0, "info": 0, "skip": 0},
            "timings": {"cancelToQuiet": stats, "startup": stats, "roundTrip": stats},
            "cases": [{
                "id": "server/x", "intent": hostile, "outcome": "fail", "level": "must",
                "requirements": ["RPC-01"], "message": hostile, "durationMs": 1,
                "baseline": null, "runs": ["fail"], "flaky": false,
                "protocolVersion": "2025-11-25", "era": "handshake", "transport": "stdio",
                "findings": [{"severity": "fail", "requirement": "RPC-01", "line": 3, "message": hostile, "times": 1}],
                "diff": format!("+< {hostile}"),
                "stderr": {"lines": [{"atMs": 1.0, "text": hostile}], "total": 1},
                "transcript": [{"atMs": 1.0, "direction": "received", "text": hostile}],
                "timings": {}
            }]
        }))
        .expect("a report");
        let page = render(vec![("r.json".into(), report)]).expect("renders");
        // The page's own two script elements, and nothing the target wrote.
        assert_eq!(page.matches("</script>").count(), 2, "{page}");
        assert_eq!(page.matches("<script").count(), 2);
        assert!(!page.contains("<!--"));
    }
}
