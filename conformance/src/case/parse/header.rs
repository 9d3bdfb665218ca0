//! One `@` header line at a time: each header's value understood, and set on the case, or
//! an error at `path:line`. Kept apart from the step lines because a reviewer adding a
//! header touches only this list.

use super::super::client::{parse_actions, parse_outcomes};
use super::super::*;
use super::control::{parse_duration, Parser};
use crate::era::ProtocolVersion;

/// Reads the header `@key value` at `line` into `case` (`@level` into `level`, which the case
/// must set: it has no default).
pub(super) fn header(
    p: &Parser,
    case: &mut Case,
    level: &mut Option<Level>,
    line: usize,
    rest: &str,
) -> Result<(), CaseError> {
    let (key, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let value = value.trim();
    let words = || {
        value
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    match key {
        "requirement" => case.requirements = words(),
        "level" => {
            *level = Some(match value {
                "must" => Level::Must,
                "should" => Level::Should,
                "info" => Level::Info,
                _ => return Err(p.error(line, "`@level` is one of must, should, info")),
            })
        }
        "versions" => case.versions = versions(p, line, value)?,
        "stamp" => case.stamp = auto_or_none(p, line, value, "`@stamp` is `auto` or `none`")?,
        "fixtures" => {
            case.fixtures = value
                .split_whitespace()
                .map(crate::fixtures::FixtureNeed::parse)
                .collect::<Result<_, _>>()
                .map_err(|e| p.error(line, format!("`@fixtures`: {e}")))?
        }
        "needs" => case.needs = needs(p, line, value)?,
        "deviation" if value.is_empty() => {
            return Err(p.error(line, "`@deviation` says what the case sends that its session does not allow, and why"))
        }
        "deviation" => {
            case.deviation = Some(value.to_string());
            case.deviation_line = line;
        }
        "plays" => case.plays = Some(plays(p, line, value)?),
        "transports" => case.transports = transports(p, line, value)?,
        "handshake" => {
            case.handshake = auto_or_none(p, line, value, "`@handshake` is `auto` or `none`")?
        }
        "timeout" => {
            case.timeout = Some(
                parse_duration(value)
                    .ok_or_else(|| p.error(line, "`@timeout` needs a duration such as `5s`"))?,
            )
        }
        "fresh" => case.fresh = Some(fresh(p, line, value)?),
        "actions" => case.actions = parse_actions(value).map_err(|e| p.error(line, e))?,
        "outcomes" => {
            case.outcomes = parse_outcomes(value).map_err(|e| p.error(line, e))?;
            case.outcomes_line = line;
        }
        "role" => {
            case.role = match value {
                "server" => Role::Server,
                "client" => Role::Client,
                _ => return Err(p.error(line, "`@role` is `server` or `client`")),
            }
        }
        _ => {
            return Err(p.error(
                line,
                format!(
                    "unknown header `@{key}`; known: requirement, level, versions, fixtures, \
                         needs, deviation, transports, handshake, stamp, timeout, fresh, role, actions, outcomes, plays"
                ),
            ))
        }
    }
    Ok(())
}

/// `@plays`: only `handshake`, for now.
fn plays(p: &Parser, line: usize, value: &str) -> Result<crate::era::Era, CaseError> {
    match value {
        "handshake" => Ok(crate::era::Era::Handshake),
        _ => Err(p.error(
            line,
            "`@plays handshake` is the only choice: a server of the handshake era for a client of 2026-07-28",
        )),
    }
}

/// `@fresh`: the reason, which must be given.
fn fresh(p: &Parser, line: usize, value: &str) -> Result<String, CaseError> {
    if value.is_empty() {
        return Err(p.error(
            line,
            "`@fresh` needs a reason: why the case cannot share a target with other cases (e.g. `@fresh it closes stdin, which ends the process`)",
        ));
    }
    Ok(value.to_string())
}

/// `auto` (true) or `none` (false); otherwise `wrong` at `line`.
fn auto_or_none(p: &Parser, line: usize, value: &str, wrong: &str) -> Result<bool, CaseError> {
    match value {
        "auto" => Ok(true),
        "none" => Ok(false),
        _ => Err(p.error(line, wrong)),
    }
}

/// `@versions`: versions and eras (`handshake`, `stateless`), each version once, in order;
/// at least one, since a case that applies to no version could never run.
fn versions(p: &Parser, line: usize, value: &str) -> Result<Vec<ProtocolVersion>, CaseError> {
    let mut versions: Vec<ProtocolVersion> = vec![];
    for word in value.split_whitespace() {
        let named: Vec<ProtocolVersion> = match word {
            "handshake" => ProtocolVersion::ALL
                .into_iter()
                .filter(|v| v.has_handshake())
                .collect(),
            "stateless" => ProtocolVersion::ALL
                .into_iter()
                .filter(|v| v.is_stateless())
                .collect(),
            v => match ProtocolVersion::parse(v) {
                Some(v) => vec![v],
                None => {
                    return Err(p.error(
                        line,
                        format!(
                    "unknown protocol version `{v}`; known: {}, or an era: handshake, stateless",
                    KNOWN_VERSIONS.join(" ")
                ),
                    ))
                }
            },
        };
        for v in named {
            if !versions.contains(&v) {
                versions.push(v);
            }
        }
    }
    if versions.is_empty() {
        return Err(p.error(
            line,
            "`@versions` names at least one protocol version or era (handshake, stateless)",
        ));
    }
    Ok(versions)
}

/// `@needs`: at least one need, each once, never both `tasks` and `no-tasks`.
fn needs(p: &Parser, line: usize, value: &str) -> Result<Vec<Need>, CaseError> {
    let mut needs = vec![];
    for word in value.split_whitespace() {
        let need = Need::parse(word).ok_or_else(|| {
            p.error(
                line,
                format!("unknown need `{word}`; known: {}", Need::WORDS.join(" ")),
            )
        })?;
        if !needs.contains(&need) {
            needs.push(need);
        }
    }
    if needs.is_empty() {
        return Err(p.error(line, "`@needs` names tasks, no-tasks or subscriptions"));
    }
    if needs.contains(&Need::Tasks) && needs.contains(&Need::NoTasks) {
        return Err(p.error(line, "`@needs tasks no-tasks` can never hold; keep one"));
    }
    Ok(needs)
}

/// `@transports`: stdio, http or both, each once.
fn transports(p: &Parser, line: usize, value: &str) -> Result<Vec<TransportKind>, CaseError> {
    let mut transports = vec![];
    for word in value.split_whitespace() {
        let kind = TransportKind::parse(word).ok_or_else(|| {
            p.error(
                line,
                format!("unknown transport `{word}`; known: stdio http"),
            )
        })?;
        if !transports.contains(&kind) {
            transports.push(kind);
        }
    }
    if transports.is_empty() {
        return Err(p.error(line, "`@transports` names stdio, http or both"));
    }
    Ok(transports)
}
