//! The comparison as Markdown: the tables of `targets/README.md` and of the book's SDK page,
//! each between a pair of generated markers, so the prose around them stays hand-written and
//! a test can regenerate the tables and compare. Pure functions of a [`Comparison`] and the
//! [`Evidence`].

use super::evidence::Evidence;
use super::latency::{Held, Spread};
use super::{Cell, Comparison, TargetRun};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The names of the generated blocks, and what each holds.
pub const BLOCKS: [(&str, &str); 4] = [
    ("targets", "each target: SDK, transport, versions, counts"),
    ("findings", "each failure and warning with its evidence"),
    ("latency", "cancel-to-quiet and cancel-to-proof per target"),
    ("sdks", "per SDK: every MUST kept, and what it breaks"),
];

const END: &str = "<!-- end generated -->";

/// The opening marker of a block.
pub fn begin(name: &str) -> String {
    format!("<!-- generated: {name} (conformance compare writes it; edit targets/evidence.md or rerun targets/compare.sh) -->")
}

/// The content of a generated block, by name; `None` for a name no block has.
pub fn block(
    name: &str,
    comparison: &Comparison,
    evidence: &Evidence,
    link: &str,
) -> Option<String> {
    match name {
        "targets" => Some(targets(comparison)),
        "findings" => Some(findings(comparison, evidence, link)),
        "latency" => Some(latency(comparison)),
        "sdks" => Some(sdks(comparison, evidence, link)),
        _ => None,
    }
}

/// `text` with every generated block filled anew (`link` is the evidence file as the document
/// links to it; empty, the evidence is quoted without a link). Errors name the line of a marker that is unknown or never closed.
pub fn rewrite(
    text: &str,
    comparison: &Comparison,
    evidence: &Evidence,
    link: &str,
) -> Result<String, String> {
    let mut out = String::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        out.push_str(line);
        out.push('\n');
        let Some(name) = line
            .strip_prefix("<!-- generated: ")
            .and_then(|rest| rest.split([' ', '-']).next())
        else {
            continue;
        };
        let content = block(name, comparison, evidence, link).ok_or_else(|| {
            let known: Vec<&str> = BLOCKS.iter().map(|(n, _)| *n).collect();
            format!(
                "line {}: no generated block is called `{name}` (known: {})",
                index + 1,
                known.join(", ")
            )
        })?;
        if !lines.any(|(_, l)| l == END) {
            return Err(format!(
                "line {}: the block `{name}` has no `{END}` after it",
                index + 1
            ));
        }
        out.push_str(&content);
        out.push_str(END);
        out.push('\n');
    }
    Ok(out)
}

fn targets(comparison: &Comparison) -> String {
    let mut out = String::from(
        "| Target | SDK | Role | Transport | Versions | pass | warn | fail | info | skip |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for t in &comparison.targets {
        let s = &t.summary;
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            t.target,
            sdk(t),
            t.role,
            t.transport,
            versions(&t.versions),
            s.pass,
            s.warn,
            s.fail,
            s.info,
            s.skip
        );
    }
    out
}

fn sdk(t: &TargetRun) -> String {
    format!("`{}` {}", t.sdk.name, t.sdk.version)
}

fn versions(versions: &[String]) -> String {
    match versions {
        [] => "as the adapter asks".into(),
        [one] => one.clone(),
        [first, .., last] => format!("{first} to {last}"),
    }
}

/// The failures and warnings of a target, one per case, outcome and requirement, with the
/// versions they came at.
pub fn findings_of(t: &TargetRun) -> Vec<(&str, &Cell, Vec<&str>)> {
    let mut grouped: Vec<(&str, &Cell, Vec<&str>)> = vec![];
    for (case, by_version) in &t.cases {
        for (version, cell) in by_version.iter().filter(|(_, c)| c.is_finding()) {
            match grouped
                .iter_mut()
                .find(|(c, k, _)| *c == case && *k == cell)
            {
                Some((_, _, versions)) => versions.push(version.as_str()),
                None => grouped.push((case.as_str(), cell, vec![version.as_str()])),
            }
        }
    }
    grouped
}

fn evidence_cell(evidence: &Evidence, target: &str, case: &str, cell: &Cell, link: &str) -> String {
    match evidence.find(target, case, cell.requirement.as_deref()) {
        Some(s) if link.is_empty() => escape(&s.summary),
        Some(s) => format!("{} ([evidence]({link}#{}))", escape(&s.summary), s.anchor),
        None => "**evidence pending**".into(),
    }
}

fn findings(comparison: &Comparison, evidence: &Evidence, link: &str) -> String {
    let mut out = String::from(
        "| Target | Case | Outcome | Versions | Requirement | Why |\n|---|---|---|---|---|---|\n",
    );
    for t in &comparison.targets {
        for (case, cell, versions) in findings_of(t) {
            let _ = writeln!(
                out,
                "| `{}` | {case} | {} | {} | {} | {} |",
                t.target,
                cell.outcome,
                versions.join(", "),
                cell.requirement.as_deref().unwrap_or("—"),
                evidence_cell(evidence, &t.target, case, cell, link)
            );
        }
    }
    out
}

/// How many cancels of running requests, and the medians of cancel-to-quiet and
/// cancel-to-witness where they held between this run and the one before
/// ([`Spread::held`]); the worst cases and the cancel-to-proof times move with the load by a
/// factor of two to ten, and stay in `comparison.json`.
fn latency(comparison: &Comparison) -> String {
    let mut out = String::from(
        "| Target | Cancels of running requests | Cancel to quiet: median | Seen stopped by the witness | Cancel to witness: median |\n|---|---|---|---|---|\n",
    );
    for t in comparison
        .targets
        .iter()
        .filter(|t| t.latency.cancel_to_quiet.count > 0)
    {
        let witness = &t.latency.cancel_to_witness;
        let seen = match witness.count {
            0 => "—".to_string(),
            n => n.to_string(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {seen} | {} |",
            t.target,
            t.latency.cancel_to_quiet.count,
            held(&t.latency.cancel_to_quiet),
            held(witness)
        );
    }
    out
}

/// A median as the latency table shows it: only where it held between two runs.
fn held(spread: &Spread) -> String {
    match spread.held() {
        Held::Yes(median) => ms(median),
        Held::Varies => "varies".into(),
        Held::OneRun => "one run".into(),
        Held::None => "—".into(),
    }
}

/// Milliseconds to a tenth under 10 ms, to two significant digits over.
fn ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.1} ms")
    } else {
        let digits = 10f64.powi(v.log10().floor() as i32 - 1);
        format!("{:.0} ms", (v / digits).round() * digits)
    }
}

fn sdks(comparison: &Comparison, evidence: &Evidence, link: &str) -> String {
    let mut by_sdk: BTreeMap<String, Vec<&TargetRun>> = BTreeMap::new();
    for t in &comparison.targets {
        by_sdk.entry(sdk(t)).or_default().push(t);
    }
    let mut out =
        String::from("| SDK | Targets | Every MUST kept | What it breaks |\n|---|---|---|---|\n");
    for (name, runs) in &by_sdk {
        // One line per requirement and explanation, naming every case it shows in.
        let mut broken: Vec<(String, String, Vec<&str>)> = vec![];
        for t in runs {
            for (case, cell, _) in findings_of(t) {
                let level = if cell.outcome == "fail" {
                    "MUST"
                } else {
                    "SHOULD"
                };
                let head = format!("{level} {}", cell.requirement.as_deref().unwrap_or("—"));
                let why = evidence_cell(evidence, &t.target, case, cell, link);
                match broken.iter_mut().find(|(h, w, _)| *h == head && *w == why) {
                    Some((_, _, cases)) if cases.contains(&case) => {}
                    Some((_, _, cases)) => cases.push(case),
                    None => broken.push((head, why, vec![case])),
                }
            }
        }
        let mut broken: Vec<String> = broken
            .into_iter()
            .map(|(head, why, cases)| {
                let cases: Vec<String> = cases.iter().map(|c| format!("`{c}`")).collect();
                format!("{head} {}: {why}", cases.join(", "))
            })
            .collect();
        broken.sort_by_key(|l| !l.starts_with("MUST"));
        let kept = runs.iter().all(|t| t.summary.fail == 0);
        let names: Vec<String> = runs.iter().map(|t| format!("`{}`", t.target)).collect();
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} |",
            names.join(", "),
            if kept { "yes" } else { "**no**" },
            if broken.is_empty() {
                "nothing".into()
            } else {
                broken.join("<br>")
            }
        );
    }
    out
}

/// Text safe in a table cell.
fn escape(text: &str) -> String {
    text.replace('|', "\\|")
}
