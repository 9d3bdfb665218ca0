//! The strict parser: every line is understood or is an error at `path:line`.

use super::client::{parse_actions, parse_outcomes};
use super::*;

mod checks;
mod control;
#[cfg(test)]
mod tests;

use checks::{check_fresh, check_no_server_requests, check_transport_steps};
pub use control::parse_duration;
use control::{Control, Parser};

/// Parses a case. `id` is its path below the cases folder without extension; `path` is what
/// messages show.
pub fn parse(id: &str, path: &str, source: &str) -> Result<Case, CaseError> {
    let p = Parser { path };
    let mut case = Case {
        id: id.to_string(),
        path: path.to_string(),
        source: source.to_string(),
        intent: String::new(),
        requirements: vec![],
        level: Level::Must,
        versions: HANDSHAKE_VERSIONS.iter().map(|v| v.to_string()).collect(),
        fixtures: vec![],
        handshake: true,
        transports: vec![TransportKind::Stdio, TransportKind::Http],
        stamp: true,
        timeout: None,
        fresh: None,
        plays: None,
        needs: vec![],
        role: if id.starts_with("client/") {
            Role::Client
        } else {
            Role::Server
        },
        steps: vec![],
        actions: vec![],
        outcomes: vec![],
        outcomes_line: 0,
    };
    let mut level = None;
    let mut in_intent = true;
    let mut seen_step = false;
    // Open blocks: (line, kind with the steps gathered so far).
    let mut stack: Vec<(usize, StepKind)> = vec![];
    let mut top: Vec<Step> = vec![];

    for (index, raw) in source.lines().enumerate() {
        let line = index + 1;
        let text = raw.trim_end();
        if let Some(comment) = text.strip_prefix('#') {
            if in_intent && !seen_step {
                if !case.intent.is_empty() {
                    case.intent.push(' ');
                }
                case.intent.push_str(comment.trim());
            }
            continue;
        }
        in_intent = false;
        if text.is_empty() {
            continue;
        }
        if let Some(rest) = text.strip_prefix('@') {
            if seen_step {
                return Err(p.error(line, "headers (`@…`) go before the first step; move it up"));
            }
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
                    level = Some(match value {
                        "must" => Level::Must,
                        "should" => Level::Should,
                        "info" => Level::Info,
                        _ => return Err(p.error(line, "`@level` is one of must, should, info")),
                    })
                }
                "versions" => {
                    let mut versions: Vec<String> = vec![];
                    for word in words() {
                        let named: Vec<&str> = match word.as_str() {
                            "handshake" => HANDSHAKE_VERSIONS.to_vec(),
                            "stateless" => vec![crate::era::STATELESS_VERSION],
                            v if KNOWN_VERSIONS.contains(&v) => vec![v],
                            bad => {
                                return Err(p.error(
                                    line,
                                    format!(
                                        "unknown protocol version `{bad}`; known: {}, or an era: handshake, stateless",
                                        KNOWN_VERSIONS.join(" ")
                                    ),
                                ))
                            }
                        };
                        for v in named {
                            if !versions.iter().any(|x| x == v) {
                                versions.push(v.to_string());
                            }
                        }
                    }
                    case.versions = versions;
                }
                "stamp" => {
                    case.stamp = match value {
                        "auto" => true,
                        "none" => false,
                        _ => return Err(p.error(line, "`@stamp` is `auto` or `none`")),
                    }
                }
                "fixtures" => case.fixtures = words(),
                "needs" => {
                    case.needs = vec![];
                    for word in value.split_whitespace() {
                        let need = Need::parse(word).ok_or_else(|| {
                            p.error(
                                line,
                                format!(
                                    "unknown need `{word}`; known: {}",
                                    Need::WORDS.join(" ")
                                ),
                            )
                        })?;
                        if !case.needs.contains(&need) {
                            case.needs.push(need);
                        }
                    }
                    if case.needs.is_empty() {
                        return Err(p.error(line, "`@needs` names tasks, no-tasks or subscriptions"));
                    }
                    if case.needs.contains(&Need::Tasks) && case.needs.contains(&Need::NoTasks) {
                        return Err(p.error(line, "`@needs tasks no-tasks` can never hold; keep one"));
                    }
                }
                "plays" => {
                    case.plays = Some(match value {
                        "handshake" => crate::era::Era::Handshake,
                        _ => {
                            return Err(p.error(
                                line,
                                "`@plays handshake` is the only choice: a server of the handshake era for a client of 2026-07-28",
                            ))
                        }
                    })
                }
                "transports" => {
                    case.transports = vec![];
                    for word in value.split_whitespace() {
                        let kind = TransportKind::parse(word).ok_or_else(|| {
                            p.error(
                                line,
                                format!("unknown transport `{word}`; known: stdio http"),
                            )
                        })?;
                        if !case.transports.contains(&kind) {
                            case.transports.push(kind);
                        }
                    }
                    if case.transports.is_empty() {
                        return Err(p.error(line, "`@transports` names stdio, http or both"));
                    }
                }
                "handshake" => {
                    case.handshake = match value {
                        "auto" => true,
                        "none" => false,
                        _ => return Err(p.error(line, "`@handshake` is `auto` or `none`")),
                    }
                }
                "timeout" => {
                    case.timeout =
                        Some(parse_duration(value).ok_or_else(|| {
                            p.error(line, "`@timeout` needs a duration such as `5s`")
                        })?)
                }
                "fresh" => {
                    if value.is_empty() {
                        return Err(p.error(
                            line,
                            "`@fresh` needs a reason: why the case cannot share a target with other cases (e.g. `@fresh it closes stdin, which ends the process`)",
                        ));
                    }
                    case.fresh = Some(value.to_string());
                }
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
                             needs, transports, handshake, stamp, timeout, fresh, role, actions, outcomes, plays"
                    ),
                    ))
                }
            }
            continue;
        }
        seen_step = true;
        // Arrows are the protocol's direction; which side the harness writes depends on the role.
        let (sent, expected) = match case.role {
            Role::Server => ("> ", "< "),
            Role::Client => ("< ", "> "),
        };
        let kind = if let Some(rest) = text.strip_prefix(sent) {
            Control::Step(StepKind::Send(rest.to_string()))
        } else if let Some(rest) = text.strip_prefix(expected) {
            let probe = rest.replace("{$", "{");
            if let Err(e) = serde_json::from_str::<Value>(&probe) {
                return Err(p.error(
                    line,
                    format!(
                        "expected message is not JSON: {e}; fix the `{}` line",
                        expected.trim()
                    ),
                ));
            }
            Control::Step(StepKind::Expect(rest.to_string()))
        } else if let Some(rest) = text.strip_prefix("! ") {
            p.control(line, rest.trim())?
        } else {
            return Err(p.error(
                line,
                "a line starts with `#`, `@`, `> `, `< ` or `! `; fix or comment out this line",
            ));
        };
        match kind {
            Control::Step(kind) => {
                let step = Step { line, kind };
                match stack.last_mut().and_then(|(_, kind)| kind.inner_mut()) {
                    Some(steps) => steps.push(step),
                    None => top.push(step),
                }
            }
            Control::Open(kind) => stack.push((line, kind)),
            Control::End => {
                let (open, kind) = stack.pop().ok_or_else(|| {
                    p.error(line, "`! end` without an open repeat, sweep or poll")
                })?;
                if let StepKind::Poll(poll) = &kind {
                    poll.check(open, |line, message| p.error(line, message))?;
                }
                if kind.inner().is_some_and(<[Step]>::is_empty) {
                    return Err(p.error(open, "this block has no steps"));
                }
                let step = Step { line: open, kind };
                match stack.last_mut().and_then(|(_, kind)| kind.inner_mut()) {
                    Some(steps) => steps.push(step),
                    None => top.push(step),
                }
            }
        }
    }
    if let Some((line, _)) = stack.last() {
        return Err(p.error(*line, "this block is never closed; add `! end`"));
    }
    if case.intent.is_empty() {
        return Err(p.error(
            1,
            "a case opens with a `#` comment saying what it checks and why",
        ));
    }
    if case.requirements.is_empty() {
        return Err(p.error(0, "missing `@requirement` (ids from cases/REQUIREMENTS.md)"));
    }
    case.level = level.ok_or_else(|| p.error(0, "missing `@level must|should|info`"))?;
    if top.is_empty() {
        return Err(p.error(0, "the case has no steps"));
    }
    if case.role == Role::Server && case.plays.is_some() {
        return Err(p.error(
            0,
            "`@plays` says which server the harness plays: it is for client cases",
        ));
    }
    if case.role == Role::Server && (!case.actions.is_empty() || !case.outcomes.is_empty()) {
        return Err(p.error(
            0,
            "`@actions` and `@outcomes` are for client cases (`@role client` or cases/client/)",
        ));
    }
    if !case.outcomes.is_empty() && case.outcomes.len() != case.actions.len() {
        return Err(p.error(
            0,
            format!(
                "`@outcomes` has {} words for {} actions; write one per action (`*` for any)",
                case.outcomes.len(),
                case.actions.len()
            ),
        ));
    }
    if case.role == Role::Client && case.actions.is_empty() {
        return Err(p.error(
            0,
            "a client case needs `@actions` (what the client under test is told to do)",
        ));
    }
    if !case.needs.is_empty() && (!case.handshake || case.role == Role::Client) {
        return Err(p.error(
            0,
            "`@needs` is judged on the server's answer to the harness's own opening: it is for server cases with `@handshake auto`",
        ));
    }
    check_transport_steps(&p, &case, &top)?;
    check_fresh(&p, &case, &top)?;
    if case.role == Role::Client
        && case.plays != Some(crate::era::Era::Handshake)
        && case
            .versions
            .iter()
            .any(|v| v == crate::era::STATELESS_VERSION)
    {
        check_no_server_requests(&p, &top)?;
    }
    case.steps = top;
    Ok(case)
}
