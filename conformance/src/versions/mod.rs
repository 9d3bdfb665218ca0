//! Which protocol versions a run uses: `--protocol-version V`, `auto` (the newest version the
//! target and the case both cover, per case) or `all` (every version the target speaks, per
//! case).
//!
//! What a server target speaks is asked before the cases run, each probe on a fresh start of
//! the target: a stamped `server/discover` (2026-07-28 lists its versions in the answer), and
//! `initialize` for the handshake era (a server echoes a version it speaks and offers another
//! one otherwise).

pub(crate) mod handover;
mod probe;

pub use handover::Handed;
pub use probe::{probe, probe_handing};

use crate::case::Case;
use crate::era::ProtocolVersion;
use crate::exchange::TargetLog;
use serde_json::Value;
use std::time::Duration;

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Per case, the newest version both the target and the case cover.
    Auto,
    /// Every version both the target and the case cover.
    All,
    /// This version only.
    Exact(ProtocolVersion),
}

/// A `--protocol-version` that is neither `auto`, `all` nor a version the harness knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is no protocol version the harness knows; give auto, all or one of {known}",
    known = crate::era::KNOWN_VERSIONS.join(" "))]
pub struct UnknownVersion(pub String);

impl Choice {
    /// Reads `--protocol-version`.
    pub fn parse(text: &str) -> Result<Choice, UnknownVersion> {
        match text {
            "auto" => Ok(Choice::Auto),
            "all" => Ok(Choice::All),
            other => ProtocolVersion::parse(other)
                .map(Choice::Exact)
                .ok_or_else(|| UnknownVersion(other.to_string())),
        }
    }

    /// As the reports show it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Choice::Auto => "auto",
            Choice::All => "all",
            Choice::Exact(v) => v.as_str(),
        }
    }
}

/// What the target speaks, as the probes found it.
#[derive(Debug, Clone, Default)]
pub struct Spoken {
    /// Known versions the target speaks, oldest first.
    pub versions: Vec<ProtocolVersion>,
    /// What each probe saw, for reports and skip reasons.
    pub evidence: Vec<String>,
    /// Why the target cannot be tested at all, when no probe got any answer from it (it exited,
    /// stayed silent, wrote what is not JSON, or nothing listened at its URL): the cases are
    /// not played against it.
    pub untestable: Option<Untestable>,
    /// Who the target says it is (`serverInfo` of its first answer), when it said.
    pub identity: Option<Identity>,
    /// The target's tools, from the first probe that could list them; or why none could.
    pub tools: Option<Result<Vec<crate::discovery::Tool>, crate::discovery::ListError>>,
    /// Each probe's listing of the tools, by the version it asked for (what a case at that
    /// version is told of them): the tools, or why they could not be listed.
    pub listings: Vec<(
        ProtocolVersion,
        Result<Vec<crate::discovery::Tool>, crate::discovery::ListError>,
    )>,
    /// The answers to the probes' openings that were results, by the version the probe asked
    /// for: what a case's own opening at that version is answered (the same question).
    pub openings: Vec<(ProtocolVersion, Value)>,
    /// What a start of the target costs: the shortest time from a probe's start of it to the
    /// answer of its opening (the probes start it at once, so the shortest is the least
    /// crowded). `None` when no probe's opening was answered with a result.
    pub start: Option<Duration>,
}

impl Spoken {
    /// What the target answered the opening at `version`, when a probe asked it that.
    pub fn opening_at(&self, version: ProtocolVersion) -> Option<&Value> {
        self.openings
            .iter()
            .find(|(asked, _)| *asked == version)
            .map(|(_, answer)| answer)
    }
}

/// An implementation's name and version, as it gives them (`serverInfo`, `clientInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Its `name`.
    pub name: String,
    /// Its `version`.
    pub version: String,
}

impl Identity {
    /// Reads `{"name": …, "version": …}` (both strings; a missing version is empty).
    pub fn of(info: &Value) -> Option<Identity> {
        Some(Identity {
            name: info.get("name")?.as_str()?.to_string(),
            version: info
                .get("version")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
    }

    /// The `serverInfo` an answer to `initialize` or `server/discover` carries, in its result
    /// or (2026-07-28) in the result's `_meta`.
    pub fn of_answer(answer: &Value) -> Option<Identity> {
        let result = answer.get("result")?;
        result
            .get("serverInfo")
            .or_else(|| result.get("_meta")?.get(crate::era::META_SERVER_INFO))
            .and_then(Identity::of)
    }
}
/// A target that answered none of the probes: what happened, and what it logged.
#[derive(Debug, Clone)]
pub struct Untestable {
    /// What each probe saw, one sentence each.
    pub why: Vec<String>,
    /// The last lines of the target's stderr (and the harness's notes about it) in the probe
    /// that saw most of it.
    pub stderr: Vec<String>,
    /// How many stderr lines there were in all in that probe.
    pub stderr_total: usize,
}

/// What one probe found.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The versions it shows the target speaks.
    pub versions: Vec<ProtocolVersion>,
    /// What it saw, one sentence.
    pub evidence: String,
    /// Whether the target answered at all (with a result or an error).
    pub answered: bool,
    /// Who it said it is.
    pub identity: Option<Identity>,
    /// Its tools, when it answered the opening: listed, or why they could not be.
    pub tools: Option<Result<Vec<crate::discovery::Tool>, crate::discovery::ListError>>,
    /// The version it asked for and the answer, when the answer was a result.
    pub opening: Option<(ProtocolVersion, Value)>,
    /// From its start of the target to the answer of the opening, when that was a result.
    pub start: Option<Duration>,
    /// What the target logged meanwhile.
    pub log: TargetLog,
}

/// One run of one case at one version (or a reason it does not run).
#[derive(Debug, Clone)]
pub struct Unit {
    /// Index into the cases.
    pub case: usize,
    /// The version to run at.
    pub version: ProtocolVersion,
    /// Why the case does not run at all, when it does not.
    pub skip: Option<String>,
}

/// The runs of a set of cases against a target that speaks `spoken`. A target in which no
/// probe found any version (it crashed, hung or answered nonsense) is still tested, at the
/// newest version of the handshake era: its cases then say what went wrong, rather than
/// being skipped.
pub fn plan(cases: &[Case], choice: &Choice, spoken: &Spoken) -> Vec<Unit> {
    if spoken.versions.is_empty() && matches!(choice, Choice::Auto | Choice::All) {
        let fallback = Spoken {
            versions: vec![ProtocolVersion::NEWEST_HANDSHAKE],
            evidence: spoken.evidence.clone(),
            untestable: None,
            identity: None,
            tools: None,
            listings: vec![],
            openings: vec![],
            start: spoken.start,
        };
        return plan(cases, choice, &fallback);
    }
    let mut units = vec![];
    let speaks = |v: &ProtocolVersion| spoken.versions.contains(v);
    let said = spoken.evidence.join("; ");
    for (index, case) in cases.iter().enumerate() {
        let both: Vec<ProtocolVersion> = case.versions.iter().copied().filter(speaks).collect();
        match (choice, both.last()) {
            (Choice::Exact(v), _) if !speaks(v) && !v.has_handshake() => units.push(Unit {
                case: index,
                version: *v,
                skip: Some(format!(
                    "the target does not speak {v} ({said}); nothing was verified at that version"
                )),
            }),
            (Choice::Exact(v), _) => units.push(Unit {
                case: index,
                version: *v,
                skip: None,
            }),
            (Choice::Auto | Choice::All, None) => units.push(Unit {
                case: index,
                version: case.last_version(),
                skip: Some(format!(
                    "the case applies to {}; the target speaks {} ({said})",
                    ProtocolVersion::joined(&case.versions),
                    if spoken.versions.is_empty() {
                        "none of them".to_string()
                    } else {
                        ProtocolVersion::joined(&spoken.versions)
                    }
                )),
            }),
            (Choice::Auto, Some(&newest)) => units.push(Unit {
                case: index,
                version: newest,
                skip: None,
            }),
            (Choice::All, _) => units.extend(both.into_iter().map(|version| Unit {
                case: index,
                version,
                skip: None,
            })),
        }
    }
    for unit in units.iter_mut().filter(|u| u.skip.is_none()) {
        unit.skip = unmet_at_probe(&cases[unit.case], unit.version, spoken);
    }
    units
}

/// Why a case does not apply to the target at `version`, decided from the probe's opening at
/// that version (`@needs`): the case's own opening asks the same question, so the answer, and
/// the skip the case would come to after starting a target, are known before it starts.
fn unmet_at_probe(case: &Case, version: ProtocolVersion, spoken: &Spoken) -> Option<String> {
    let answer = spoken.opening_at(version)?;
    let stateless = version.is_stateless();
    // A handshake answer that agreed to another version leads the case elsewhere first.
    let agreed = answer
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str);
    if !stateless && agreed != Some(version.as_str()) {
        return None;
    }
    case.needs.iter().find_map(|n| n.unmet(answer, stateless))
}

/// The versions worth probing for a choice. A version asked for by name is probed too: what
/// the target agreed to does not change the plan of a handshake version (every case's
/// `initialize` asks for it), but a target that answers no probe is not tested at all.
pub fn to_probe(choice: &Choice) -> Vec<ProtocolVersion> {
    match choice {
        Choice::Exact(v) => vec![*v],
        // The newest handshake version is enough for auto: a server that does not speak it
        // offers its own newest one instead.
        Choice::Auto => vec![
            ProtocolVersion::NEWEST_HANDSHAKE,
            ProtocolVersion::V2026_07_28,
        ],
        Choice::All => ProtocolVersion::ALL.to_vec(),
    }
}

/// Probe sentences (`initialize at V: what happened`) with the ones that saw the same thing
/// said once: `initialize at V and server/discover at W: what happened`.
fn merged<'a>(evidence: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut groups: Vec<(Vec<&str>, &str)> = vec![];
    for sentence in evidence {
        let (asked, saw) = sentence.split_once(": ").unwrap_or(("", sentence));
        match groups.iter_mut().find(|(_, s)| *s == saw) {
            Some((asks, _)) => asks.push(asked),
            None => groups.push((vec![asked], saw)),
        }
    }
    groups
        .into_iter()
        .map(|(asks, saw)| match asks.join(" and ").as_str() {
            "" => saw.to_string(),
            asked => format!("{asked}: {saw}"),
        })
        .collect()
}

/// How many of an untestable target's stderr lines are shown.
const STDERR_TAIL: usize = 12;

/// Puts together what the probes found. When none got an answer, the target is untestable.
pub fn gather(found: Vec<Probe>) -> Spoken {
    let mut spoken = Spoken::default();
    if !found.is_empty() && found.iter().all(|p| !p.answered) {
        let loudest = found.iter().max_by_key(|p| p.log.total);
        spoken.untestable = Some(Untestable {
            why: merged(found.iter().map(|p| p.evidence.as_str())),
            stderr: loudest.map(|p| p.log.tail(STDERR_TAIL)).unwrap_or_default(),
            stderr_total: loudest.map_or(0, |p| p.log.total),
        });
    }
    for probe in found {
        if spoken.identity.is_none() {
            spoken.identity = probe.identity;
        }
        if let (Some(listed), Some((version, _))) = (&probe.tools, &probe.opening) {
            spoken.listings.push((*version, listed.clone()));
        }
        match (&spoken.tools, probe.tools) {
            (Some(Ok(_)), _) | (_, None) => {}
            (_, listed) => spoken.tools = listed,
        }
        spoken.openings.extend(probe.opening);
        spoken.start = match (spoken.start, probe.start) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for v in probe.versions {
            if !spoken.versions.contains(&v) {
                spoken.versions.push(v);
            }
        }
        spoken.evidence.push(probe.evidence);
    }
    spoken.versions.sort();
    spoken
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(versions: &[&str]) -> Case {
        let mut case = crate::case::parse(
            "server/x",
            "x",
            "# i\n@requirement A\n@level must\n! barrier\n",
        )
        .unwrap();
        case.versions = versions
            .iter()
            .map(|v| ProtocolVersion::parse(v).unwrap())
            .collect();
        case
    }

    #[test]
    fn a_need_the_probe_saw_unmet_is_a_skip_before_start() {
        let mut tasks = case(&["2025-11-25"]);
        tasks.needs = vec![crate::case::Need::Tasks];
        let cases = [tasks, case(&["2025-11-25"])];
        let answer = |capabilities: Value| {
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities}})
        };
        let spoken = |answer: Value| Spoken {
            versions: vec![ProtocolVersion::V2025_11_25],
            openings: vec![(ProtocolVersion::V2025_11_25, answer)],
            ..Spoken::default()
        };
        let without = plan(
            &cases,
            &Choice::Auto,
            &spoken(answer(serde_json::json!({}))),
        );
        let reason = without[0].skip.as_deref().unwrap_or_default();
        assert!(reason.contains("does not declare"), "{reason}");
        assert_eq!(without[1].skip, None);
        let with = serde_json::json!({"tasks": {"requests": {"tools": {"call": {}}}}});
        assert_eq!(
            plan(&cases, &Choice::Auto, &spoken(answer(with)))[0].skip,
            None
        );
        // An answer that agreed to another version says nothing of this one.
        let mut other = answer(serde_json::json!({}));
        other["result"]["protocolVersion"] = "2025-06-18".into();
        assert_eq!(plan(&cases, &Choice::Auto, &spoken(other))[0].skip, None);
    }

    #[test]
    fn plans_per_case() {
        let cases = [
            case(&crate::era::HANDSHAKE_VERSIONS),
            case(&["2025-11-25", "2026-07-28"]),
            case(&["2026-07-28"]),
        ];
        let spoken = Spoken {
            versions: vec![ProtocolVersion::V2025_06_18, ProtocolVersion::V2025_11_25],
            evidence: vec!["initialize agreed".into()],
            untestable: None,
            identity: None,
            tools: None,
            listings: vec![],
            openings: vec![],
            start: None,
        };
        let auto = plan(&cases, &Choice::Auto, &spoken);
        assert_eq!(auto[0].version, ProtocolVersion::V2025_11_25);
        assert_eq!(auto[1].version, ProtocolVersion::V2025_11_25);
        assert!(auto[2]
            .skip
            .as_ref()
            .unwrap()
            .contains("the target speaks 2025-06-18, 2025-11-25"));
        let all = plan(&cases, &Choice::All, &spoken);
        assert_eq!(all.len(), 4, "{all:?}");
        let exact = plan(
            &cases,
            &Choice::Exact(ProtocolVersion::V2026_07_28),
            &spoken,
        );
        assert!(exact.iter().all(|u| u
            .skip
            .as_ref()
            .is_some_and(|s| s.contains("does not speak"))));
        assert_eq!(Choice::parse("auto"), Ok(Choice::Auto));
        assert_eq!(
            Choice::parse("2025-06-18"),
            Ok(Choice::Exact(ProtocolVersion::V2025_06_18))
        );
        assert_eq!(
            Choice::Exact(ProtocolVersion::V2025_06_18).as_str(),
            "2025-06-18"
        );
        assert!(Choice::parse("banana")
            .unwrap_err()
            .to_string()
            .contains("banana"));
    }
}
