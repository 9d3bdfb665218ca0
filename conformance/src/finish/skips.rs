//! The skipped cases of a run, grouped by what they need, for the summary: one line per
//! reason (a role to map, a transport to give, versions the target does not speak) instead
//! of one per case.

use super::Finished;
use conformance::outcome::Outcome;
use conformance::report::gate;

/// The skipped cases counted by what they need, most first: one line per reason.
pub(super) fn skip_groups(run: &Finished) -> Vec<(usize, String)> {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for (unit, runs) in run.units.iter().zip(run.results) {
        let reason = match (&unit.skip, gate::worst(runs)) {
            (Some(reason), _) => reason.clone(),
            (None, Ok(report)) if report.outcome == Outcome::Skip => {
                report.skip_reason.clone().unwrap_or_default()
            }
            _ => continue,
        };
        *counts.entry(skip_group(&reason)).or_default() += 1;
    }
    let mut groups: Vec<(usize, String)> = counts.into_iter().map(|(why, n)| (n, why)).collect();
    groups.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    groups
}

/// What a skip reason comes down to, said the same way for every case it holds for.
fn skip_group(reason: &str) -> String {
    if let Some(role) = reason
        .strip_prefix("needs a tool that plays `")
        .and_then(|r| r.split('`').next())
    {
        let how = if reason.contains("the target file maps none") {
            "the target file maps none"
        } else {
            "map one with a target file (`conformance init` drafts it)"
        };
        let needs = conformance::fixtures::Role::parse(role)
            .map_or("a tool of the fixture profile", |r| r.needs());
        return format!("need a tool playing `{role}` ({needs}): {how}");
    }
    if reason.starts_with("the case applies to http only") {
        return "need Streamable HTTP: give the server's endpoint with --url".into();
    }
    if reason.starts_with("the case applies to stdio only") {
        return "need stdio: give the server's command after `--` without --url".into();
    }
    if reason.starts_with("the case applies to") && reason.contains("the target speaks") {
        return "cover only protocol versions the target does not speak (see the JSON report)"
            .into();
    }
    // Anything else is said as it is, up to its first clause and what to map for it.
    let mut clauses = reason.split("; ");
    let first = clauses.next().unwrap_or(reason);
    match clauses.next().filter(|next| next.starts_with("map ")) {
        Some(what_to_map) => format!("{first}; {what_to_map}"),
        None => first.to_string(),
    }
}
