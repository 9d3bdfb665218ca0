//! Which protocol versions a run uses: `--protocol-version V`, `auto` (the newest version the
//! target and the case both cover, per case) or `all` (every version the target speaks, per
//! case).
//!
//! What a server target speaks is asked before the cases run, each probe on a fresh start of
//! the target: a stamped `server/discover` (2026-07-28 lists its versions in the answer), and
//! `initialize` for the handshake era (a server echoes a version it speaks and offers another
//! one otherwise).

use crate::case::Case;
use crate::era::{ProtocolVersion, HANDSHAKE_VERSIONS, STATELESS_VERSION};
use crate::transport::{Channel, Event, Transport};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Per case, the newest version both the target and the case cover.
    Auto,
    /// Every version both the target and the case cover.
    All,
    /// This version only.
    Exact(String),
}

impl Choice {
    /// Reads `--protocol-version`.
    pub fn parse(text: &str) -> Result<Choice, String> {
        match text {
            "auto" => Ok(Choice::Auto),
            "all" => Ok(Choice::All),
            v if ProtocolVersion::parse(v).is_some() => Ok(Choice::Exact(v.to_string())),
            other => Err(format!(
                "`{other}` is no protocol version the harness knows; give auto, all or one of {}",
                crate::era::KNOWN_VERSIONS.join(" ")
            )),
        }
    }

    /// As the reports show it.
    pub fn as_str(&self) -> &str {
        match self {
            Choice::Auto => "auto",
            Choice::All => "all",
            Choice::Exact(v) => v,
        }
    }
}

/// What the target speaks, as the probes found it.
#[derive(Debug, Clone, Default)]
pub struct Spoken {
    /// Known versions the target speaks, oldest first.
    pub versions: Vec<String>,
    /// What each probe saw, for reports and skip reasons.
    pub evidence: Vec<String>,
}

/// One run of one case at one version (or a reason it does not run).
#[derive(Debug, Clone)]
pub struct Unit {
    /// Index into the cases.
    pub case: usize,
    /// The version to run at.
    pub version: String,
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
            versions: vec![HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1].to_string()],
            evidence: spoken.evidence.clone(),
        };
        return plan(cases, choice, &fallback);
    }
    let mut units = vec![];
    let speaks = |v: &str| spoken.versions.iter().any(|s| s == v);
    let said = spoken.evidence.join("; ");
    for (index, case) in cases.iter().enumerate() {
        let both: Vec<&String> = case.versions.iter().filter(|v| speaks(v)).collect();
        match choice {
            Choice::Exact(v) if !speaks(v) && !HANDSHAKE_VERSIONS.contains(&v.as_str()) => units
                .push(Unit {
                    case: index,
                    version: v.clone(),
                    skip: Some(format!(
                    "the target does not speak {v} ({said}); nothing was verified at that version"
                )),
                }),
            Choice::Exact(v) => units.push(Unit {
                case: index,
                version: v.clone(),
                skip: None,
            }),
            Choice::Auto | Choice::All if both.is_empty() => units.push(Unit {
                case: index,
                version: case.versions.last().cloned().unwrap_or_default(),
                skip: Some(format!(
                    "the case applies to {}; the target speaks {} ({said})",
                    case.versions.join(", "),
                    if spoken.versions.is_empty() {
                        "none of them".to_string()
                    } else {
                        spoken.versions.join(", ")
                    }
                )),
            }),
            Choice::Auto => units.push(Unit {
                case: index,
                version: both.last().map(|v| v.to_string()).unwrap_or_default(),
                skip: None,
            }),
            Choice::All => units.extend(both.into_iter().map(|v| Unit {
                case: index,
                version: v.clone(),
                skip: None,
            })),
        }
    }
    units
}

/// The versions worth probing for a choice. A version of the handshake era asked for by name
/// needs no probe: every case's `initialize` asks for it and says what the target agreed to.
pub fn to_probe(choice: &Choice) -> Vec<&'static str> {
    match choice {
        Choice::Exact(v) if HANDSHAKE_VERSIONS.contains(&v.as_str()) => vec![],
        Choice::Exact(v) => crate::era::KNOWN_VERSIONS
            .iter()
            .copied()
            .filter(|k| k == v)
            .collect(),
        // The newest handshake version is enough for auto: a server that does not speak it
        // offers its own newest one instead.
        Choice::Auto => vec![
            HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1],
            STATELESS_VERSION,
        ],
        Choice::All => crate::era::KNOWN_VERSIONS.to_vec(),
    }
}

/// How long the answer to `server/discover` may still take once the `ping` after it was
/// answered, beyond the time the target waits for a CPU meanwhile.
const PROOF_GRACE: Duration = Duration::from_millis(250);

/// What one probe at `version` found on a fresh connection to the target: the versions it
/// shows the target speaks, and what it saw.
pub async fn probe<T: Transport>(
    mut io: T,
    version: &str,
    wait: Duration,
) -> (Vec<String>, String) {
    let started = Instant::now();
    // A start is slow on a busy machine, as in the cases: the allowance is stretched by the
    // CPU pressure, and lasts as long again as the target waits for a CPU.
    let wait = crate::load::stretched(wait, crate::load::stretch());
    let stateless = ProtocolVersion::parse(version).is_some_and(|v| !v.has_handshake());
    let request = if stateless {
        ProtocolVersion::V2026_07_28.probe("versions")
    } else {
        json!({"jsonrpc": "2.0", "id": "versions", "method": "initialize", "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "conformance", "version": env!("CARGO_PKG_VERSION")}
        }})
    };
    // After `server/discover`, a `ping`: a server of the handshake era answers it (with a
    // result or an error) after it has read the discover, so its answer proves the discover was
    // read and, soon after, that no answer is coming. A stateless server answers both in order.
    let proof = json!({"jsonrpc": "2.0", "id": "versions-proof", "method": "ping"});
    let found = async {
        let Ok(channel) = io.send(request.to_string().as_bytes(), None).await else {
            return Err("it did not read the probe".to_string());
        };
        if stateless && io.ordered() {
            let _ = io.send(proof.to_string().as_bytes(), None).await;
        }
        // Over HTTP, what the probe's own response said, for when no answer comes on it.
        let mut status: Option<String> = None;
        let mut said: Option<String> = None;
        let began = Deadline::now();
        let waits = io.process_group().map(crate::load::GroupWaits::new);
        let read_waits = || waits.as_ref().and_then(crate::load::GroupWaits::read);
        let spawned = read_waits();
        // The ping's answer, and how long the target had waited for a CPU by then: after it,
        // the discover's answer gets a grace, and as long again as the target waits for a CPU
        // (a starved server answers late, not never).
        let mut proven: Option<(Deadline, Option<Duration>)> = None;
        let lost = |before: Option<Duration>| -> Duration {
            read_waits()
                .zip(before)
                .map_or(Duration::ZERO, |(now, before)| now.saturating_sub(before))
        };
        // Recomputed at every look: both move later while the target waits for a CPU (at
        // most twice the allowance: a target that spins without answering ends too).
        let until = |proven: Option<(Deadline, Option<Duration>)>| {
            let deadline = began + wait + lost(spawned).min(wait);
            match proven {
                Some((at, before)) => deadline.min(at + PROOF_GRACE + lost(before)),
                None => deadline,
            }
        };
        loop {
            match io.next(until(proven)).await {
                None if io.finished() => return Err("it exited".to_string()),
                None if Deadline::now() < until(proven) => continue,
                None => {
                    return Err(match proven {
                        Some((_, before)) => format!(
                            "no answer within {} ms after it answered the ping sent after it ({} ms of them waiting for a CPU)",
                            (PROOF_GRACE + lost(before)).as_millis(),
                            lost(before).as_millis()
                        ),
                        None => format!("no answer within {wait:?}"),
                    })
                }
                Some((_, Event::Message { bytes, channel: on })) => {
                    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
                        continue;
                    };
                    if on == channel && channel != Channel::Stdio {
                        said = Some(crate::rules::envelope::short(&value));
                    }
                    if value.get("method").is_some() {
                        continue;
                    }
                    match value.get("id").and_then(Value::as_str) {
                        Some("versions") => return Ok(value),
                        Some("versions-proof") => {
                            let waited = read_waits();
                            proven.get_or_insert((Deadline::now(), waited));
                        }
                        _ => {}
                    }
                }
                Some((_, Event::Status { channel: on, head })) if on == channel => {
                    status = Some(head.summary());
                }
                Some((_, Event::Body { channel: on, text })) if on == channel => {
                    said = Some(text.chars().take(200).collect());
                }
                Some((
                    _,
                    Event::Closed {
                        channel: on, end, ..
                    },
                )) if on == channel => {
                    let got = match status.take() {
                        Some(status) => format!("HTTP {status}"),
                        None => format!("its POST {end}"),
                    };
                    let body = said.take().map(|b| format!(": {b}")).unwrap_or_default();
                    return Err(format!("no answer; got {got}{body}"));
                }
                Some(_) => {}
            }
        }
    }
    .await;
    let _ = io.shutdown(Duration::ZERO).await;
    let took = started.elapsed().as_millis();
    match (found, stateless) {
        (Err(why), _) => {
            let method = if stateless {
                "server/discover"
            } else {
                "initialize"
            };
            (vec![], format!("{method} at {version}: {why}"))
        }
        (Ok(answer), true) => match answer
            .pointer("/result/supportedVersions")
            .and_then(Value::as_array)
        {
            Some(listed) => {
                let listed: Vec<String> = listed
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|v| ProtocolVersion::parse(v).is_some_and(|p| !p.has_handshake()))
                    .map(str::to_string)
                    .collect();
                let shown = answer["result"]["supportedVersions"].to_string();
                (
                    listed,
                    format!("server/discover listed {shown} ({took} ms)"),
                )
            }
            None => (
                vec![],
                match answer.get("error") {
                    Some(error) => format!(
                        "server/discover at {version} was refused with error {}",
                        crate::rules::envelope::short(error)
                    ),
                    None => format!(
                        "server/discover was answered without supportedVersions: {}",
                        crate::rules::envelope::short(&answer)
                    ),
                },
            ),
        },
        (Ok(answer), false) => match answer
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
        {
            Some(agreed) if HANDSHAKE_VERSIONS.contains(&agreed) => (
                vec![agreed.to_string()],
                format!("initialize at {version} agreed to {agreed} ({took} ms)"),
            ),
            other => (
                vec![],
                format!(
                    "initialize at {version} was answered with {}",
                    other.map_or_else(|| crate::rules::envelope::short(&answer), str::to_string)
                ),
            ),
        },
    }
}

/// Puts together what the probes found.
pub fn gather(found: Vec<(Vec<String>, String)>) -> Spoken {
    let mut spoken = Spoken::default();
    for (versions, evidence) in found {
        for v in versions {
            if !spoken.versions.contains(&v) {
                spoken.versions.push(v);
            }
        }
        spoken.evidence.push(evidence);
    }
    spoken
        .versions
        .sort_by_key(|v| ProtocolVersion::parse(v).map(|p| p as usize));
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
        case.versions = versions.iter().map(|v| v.to_string()).collect();
        case
    }

    #[test]
    fn plans_per_case() {
        let cases = [
            case(&HANDSHAKE_VERSIONS),
            case(&["2025-11-25", "2026-07-28"]),
            case(&["2026-07-28"]),
        ];
        let spoken = Spoken {
            versions: vec!["2025-06-18".into(), "2025-11-25".into()],
            evidence: vec!["initialize agreed".into()],
        };
        let auto = plan(&cases, &Choice::Auto, &spoken);
        assert_eq!(auto[0].version, "2025-11-25");
        assert_eq!(auto[1].version, "2025-11-25");
        assert!(auto[2]
            .skip
            .as_ref()
            .unwrap()
            .contains("the target speaks 2025-06-18, 2025-11-25"));
        let all = plan(&cases, &Choice::All, &spoken);
        assert_eq!(all.len(), 4, "{all:?}");
        let exact = plan(&cases, &Choice::Exact("2026-07-28".into()), &spoken);
        assert!(exact.iter().all(|u| u
            .skip
            .as_ref()
            .is_some_and(|s| s.contains("does not speak"))));
        assert_eq!(Choice::parse("auto"), Ok(Choice::Auto));
        assert!(Choice::parse("banana").unwrap_err().contains("banana"));
    }
}
