//! The strict parser: every line is understood or is an error at `path:line`.

use super::client::{parse_actions, parse_outcomes};
use super::*;

/// Parses a duration such as `250ms`, `2s` or `1.5s`.
/// The longest duration a case or an option may name: a case that waits longer tests nothing
/// a person would wait for.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);
/// The most rounds a `! repeat` or `! sweep` may have.
pub const MAX_ROUNDS: usize = 10_000;

/// Parses a duration such as `250ms`, `2s` or `1.5s`, of at most [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Option<Duration> {
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else {
        return None;
    };
    let value: f64 = number.parse().ok()?;
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(value * scale)
        .ok()
        .filter(|d| *d <= MAX_DURATION)
}

fn parse_span(text: &str) -> Option<Span> {
    if let Some(name) = text.strip_prefix("{$").and_then(|t| t.strip_suffix('}')) {
        return Some(Span::Var(name.to_string()));
    }
    parse_duration(text).map(Span::Fixed)
}

fn parse_ms(text: &str) -> Option<u64> {
    parse_duration(text).map(|d| d.as_millis() as u64)
}

struct Parser<'a> {
    path: &'a str,
}

impl Parser<'_> {
    fn error(&self, line: usize, message: impl Into<String>) -> CaseError {
        CaseError {
            path: self.path.to_string(),
            line,
            message: message.into(),
        }
    }

    /// Parses one `!` line. Blocks are returned open and closed by the caller.
    fn control(&self, line: usize, text: &str) -> Result<Control, CaseError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let span = |w: Option<&&str>, what: &str| {
            w.and_then(|w| parse_span(w)).ok_or_else(|| {
                self.error(
                    line,
                    format!(
                        "`! {what}` needs a duration such as `200ms` or `{{$d}}` (at most 1 hour)"
                    ),
                )
            })
        };
        let kind = match words.as_slice() {
            ["barrier"] => StepKind::Barrier,
            ["after", rest @ ..] if rest.len() == 1 => {
                StepKind::After(span(rest.first(), "after")?)
            }
            ["wait", rest @ ..] if rest.len() == 1 => StepKind::Wait(span(rest.first(), "wait")?),
            ["silent", id, window] => {
                self.check_id(line, id)?;
                StepKind::Silent {
                    id: id.to_string(),
                    window: span(Some(window), "silent ID")?,
                }
            }
            ["witness", "not", ids @ ..] if !ids.is_empty() => {
                for id in ids {
                    self.check_id(line, id)?;
                }
                StepKind::Unwitnessed(ids.iter().map(|s| s.to_string()).collect())
            }
            ["witness", ids @ ..] if !ids.is_empty() => {
                for id in ids {
                    self.check_id(line, id)?;
                }
                StepKind::Witness(ids.iter().map(|s| s.to_string()).collect())
            }
            ["close-stdin"] => StepKind::CloseStdin,
            ["header", ..] => {
                let rest = text
                    .trim_start()
                    .strip_prefix("header")
                    .unwrap_or("")
                    .trim();
                let (name, value) = rest
                    .split_once(':')
                    .filter(|(name, _)| {
                        !name.trim().is_empty() && !name.contains(char::is_whitespace)
                    })
                    .ok_or_else(|| {
                        self.error(
                            line,
                            "write `! header NAME: VALUE` (an empty VALUE removes the header)",
                        )
                    })?;
                StepKind::Header {
                    name: name.trim().to_string(),
                    value: value.trim().to_string(),
                }
            }
            ["status", codes] => {
                let codes: Vec<String> = codes.split('|').map(str::to_string).collect();
                let valid = |c: &String| {
                    c.len() == 3
                        && c.as_bytes()[0].is_ascii_digit()
                        && (c[1..].bytes().all(|b| b.is_ascii_digit()) || &c[1..] == "xx")
                };
                if !codes.iter().all(valid) {
                    return Err(self.error(line, "write `! status 202` or `! status 202|4xx`"));
                }
                StepKind::Status(codes)
            }
            ["cancelled", id] => {
                self.check_id(line, id)?;
                StepKind::Cancelled(id.to_string())
            }
            ["disconnect", id] => {
                self.check_id(line, id)?;
                StepKind::Disconnect(id.to_string())
            }
            ["session", name]
                if name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
            {
                StepKind::Session(name.to_string())
            }
            ["delete-session"] => StepKind::DeleteSession,
            ["listen"] => StepKind::Listen,
            ["server-exit"] => StepKind::ServerExit,
            ["expire-session"] => StepKind::ExpireSession,
            ["cancel", id, ..] => {
                self.check_id(line, id)?;
                let reason = text
                    .trim_start()
                    .strip_prefix("cancel")
                    .map(str::trim_start)
                    .and_then(|rest| rest.strip_prefix(*id))
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(str::to_string);
                StepKind::Cancel {
                    id: id.to_string(),
                    reason,
                }
            }
            ["arrives", range] => {
                let bad = || self.error(line, "write `! arrives 50ms..550ms`");
                let (from, to) = range.split_once("..").ok_or_else(bad)?;
                let from = parse_duration(from).ok_or_else(bad)?;
                let to = parse_duration(to).ok_or_else(bad)?;
                if from > to {
                    return Err(bad());
                }
                StepKind::Arrives(Arrival { from, to, line })
            }
            ["exit", within] => StepKind::Exit(span(Some(within), "exit")?),
            ["repeat", n] => {
                let count = n
                    .parse()
                    .ok()
                    .filter(|c| *c > 0 && *c <= MAX_ROUNDS)
                    .ok_or_else(|| {
                        self.error(
                            line,
                            format!("`! repeat` needs a count from 1 to {MAX_ROUNDS}"),
                        )
                    })?;
                return Ok(Control::Open(StepKind::Repeat {
                    count,
                    steps: vec![],
                }));
            }
            ["sweep", var, range, "step", by] => {
                let bad = || self.error(line, "write a sweep as `! sweep d 0ms..80ms step 10ms`");
                let (from, to) = range.split_once("..").ok_or_else(bad)?;
                let (from, to, by) = (
                    parse_ms(from).ok_or_else(bad)?,
                    parse_ms(to).ok_or_else(bad)?,
                    parse_ms(by).filter(|b| *b > 0).ok_or_else(bad)?,
                );
                if from > to || !var.chars().all(|c| c.is_alphanumeric() || c == '_') || *var == "i"
                {
                    return Err(bad());
                }
                if (to - from) / by >= MAX_ROUNDS as u64 {
                    return Err(self.error(
                        line,
                        format!("this sweep has more than {MAX_ROUNDS} rounds; take larger steps or a shorter range"),
                    ));
                }
                let values = (from..=to).step_by(by as usize).collect();
                return Ok(Control::Open(StepKind::Sweep {
                    var: var.to_string(),
                    values,
                    steps: vec![],
                }));
            }
            ["end"] => return Ok(Control::End),
            _ => {
                return Err(self.error(
                    line,
                    format!(
                        "unknown control `! {text}`; known: barrier, cancel, after, wait, silent, \
                         witness, arrives, close-stdin, exit, repeat, sweep, end; in client \
                         cases also cancelled, server-exit; over HTTP header, status, disconnect, session, \
                         delete-session, listen, and in client cases expire-session (see \
                         cases/README.md)"
                    ),
                ))
            }
        };
        Ok(Control::Step(kind))
    }

    /// A request id in a control line must be JSON (after loop variables are filled in).
    fn check_id(&self, line: usize, id: &str) -> Result<(), CaseError> {
        let probe = id.replace("{$", "").replace('}', "");
        serde_json::from_str::<Value>(&probe)
            .ok()
            .filter(|v| v.is_string() || v.is_number())
            .map(|_| ())
            .ok_or_else(|| {
                self.error(
                    line,
                    format!("`{id}` is not a request id; write a JSON integer or string"),
                )
            })
    }
}

enum Control {
    Step(StepKind),
    Open(StepKind),
    End,
}

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
        plays: None,
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
                             transports, handshake, stamp, timeout, role, actions, outcomes, plays"
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
                match stack.last_mut() {
                    Some((_, StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. })) => {
                        steps.push(step)
                    }
                    _ => top.push(step),
                }
            }
            Control::Open(kind) => stack.push((line, kind)),
            Control::End => {
                let (open, kind) = stack
                    .pop()
                    .ok_or_else(|| p.error(line, "`! end` without an open repeat or sweep"))?;
                let empty = matches!(&kind, StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. } if steps.is_empty());
                if empty {
                    return Err(p.error(open, "this block has no steps"));
                }
                let step = Step { line: open, kind };
                match stack.last_mut() {
                    Some((_, StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. })) => {
                        steps.push(step)
                    }
                    _ => top.push(step),
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
    check_transport_steps(&p, &case, &top)?;
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

/// In 2026-07-28 a server never sends requests (RPC-15): a client case where the harness
/// plays such a server can neither send a request (`<` with a method and an id), nor ping
/// the client (`! barrier`), nor cancel a request of its own (`! cancel`).
fn check_no_server_requests(p: &Parser, steps: &[Step]) -> Result<(), CaseError> {
    for step in steps {
        let request = match &step.kind {
            StepKind::Send(text) => serde_json::from_str::<Value>(&text.replace("{$", "{"))
                .is_ok_and(|v| v.get("method").is_some() && v.get("id").is_some()),
            StepKind::Barrier | StepKind::Cancel { .. } => true,
            StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. } => {
                check_no_server_requests(p, steps)?;
                false
            }
            _ => false,
        };
        if request {
            return Err(p.error(
                step.line,
                "in 2026-07-28 the server sends the client no requests (RPC-15), so this case                  can send none, and has no `! barrier` or `! cancel` of its own; drop the line,                  or add `@plays handshake` for a server of the handshake era",
            ));
        }
    }
    Ok(())
}

/// Steps that only one role or one transport can carry out need a case of that role that runs
/// only over that transport, and `! status` must follow the request it judges.
fn check_transport_steps(p: &Parser, case: &Case, steps: &[Step]) -> Result<(), CaseError> {
    let http_only = case.transports == [TransportKind::Http];
    let stdio_only = case.transports == [TransportKind::Stdio];
    let server = Some(Role::Server);
    let http = Some(TransportKind::Http);
    let mut previous: Option<&StepKind> = None;
    for step in steps {
        let (word, role, needs) = match &step.kind {
            StepKind::Disconnect(_) => ("disconnect", None, http),
            StepKind::Header { .. } => ("header", server, http),
            StepKind::Status(_) => ("status", server, http),
            StepKind::Session(_) => ("session", server, http),
            StepKind::DeleteSession => ("delete-session", server, http),
            StepKind::Listen => ("listen", server, http),
            StepKind::ServerExit => ("server-exit", Some(Role::Client), None),
            StepKind::Cancelled(_) => ("cancelled", Some(Role::Client), None),
            StepKind::ExpireSession => ("expire-session", Some(Role::Client), http),
            StepKind::CloseStdin => ("close-stdin", server, Some(TransportKind::Stdio)),
            // A client case's `! exit` is judged over either transport.
            StepKind::Exit(_) if case.role == Role::Server => {
                ("exit", server, Some(TransportKind::Stdio))
            }
            StepKind::Silent { .. } => ("silent", server, None),
            StepKind::Witness(_) => ("witness", server, None),
            StepKind::Unwitnessed(_) => ("witness not", server, None),
            _ => ("", None, None),
        };
        if let Some(role) = role.filter(|r| *r != case.role) {
            let which = if role == Role::Client {
                "client"
            } else {
                "server"
            };
            return Err(p.error(step.line, format!("`! {word}` is for {which} cases")));
        }
        match needs {
            Some(TransportKind::Http) if !http_only => {
                return Err(p.error(
                    step.line,
                    format!("`! {word}` is an HTTP step; add `@transports http`"),
                ));
            }
            Some(TransportKind::Stdio) if !stdio_only => {
                return Err(p.error(
                    step.line,
                    format!("`! {word}` is a stdio step; add `@transports stdio`"),
                ));
            }
            _ => {}
        }
        if let StepKind::Status(_) = step.kind {
            let follows_request = matches!(
                previous,
                Some(
                    StepKind::Send(_)
                        | StepKind::Cancel { .. }
                        | StepKind::DeleteSession
                        | StepKind::Listen
                )
            );
            if !follows_request {
                return Err(p.error(
                    step.line,
                    "`! status` judges the request just made: put it right after a `>` line, \
                     `! cancel`, `! listen` or `! delete-session`",
                ));
            }
        }
        if let StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. } = &step.kind {
            check_transport_steps(p, case, steps)?;
        }
        previous = Some(&step.kind);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# Cancelling work stops it.\n# Second line.\n@requirement CAN-05 CAN-11\n@level should\n@fixtures work\n\n> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}\n< {\"id\":1,\"result\":\"{...}\"}\n! repeat 2\n! barrier\n! end\n! silent 1 200ms\n";

    #[test]
    fn parses_header_and_steps() {
        let case = parse("server/x", "cases/server/x.mcpt", GOOD).unwrap();
        assert_eq!(case.intent, "Cancelling work stops it. Second line.");
        assert_eq!(case.requirements, ["CAN-05", "CAN-11"]);
        assert_eq!(case.level, Level::Should);
        assert_eq!(case.steps.len(), 4);
        assert_eq!(case.steps[2].line, 9);
        assert!(
            matches!(&case.steps[2].kind, StepKind::Repeat { count: 2, steps } if steps.len() == 1)
        );
        assert!(matches!(&case.steps[3].kind, StepKind::Silent { id, .. } if id == "1"));
    }

    fn error_of(text: &str) -> CaseError {
        parse("server/x", "x.mcpt", text).unwrap_err()
    }

    #[test]
    fn a_stateless_server_sends_no_requests() {
        let head = "# intent\n@requirement RPC-15\n@level must\n@actions [{\"connect\":true}]\n@versions stateless\n";
        let client = |text: &str| parse("client/x", "x.mcpt", text);
        let e = client(&format!("{head}! barrier\n")).unwrap_err();
        assert_eq!(e.line, 6);
        assert!(e.message.contains("RPC-15"), "{e}");
        let request = r#"< {"jsonrpc":"2.0","id":"r","method":"roots/list"}"#;
        assert_eq!(client(&format!("{head}{request}\n")).unwrap_err().line, 6);
        let answer = r#"< {"jsonrpc":"2.0","id":"{$c}","result":{}}"#;
        assert!(client(&format!("{head}{answer}\n")).is_ok());
        let legacy = format!("{head}@plays handshake\n! barrier\n");
        assert_eq!(
            client(&legacy).unwrap().plays,
            Some(crate::era::Era::Handshake)
        );
        let cancelled = client(&format!("{head}! cancelled \"{{$c}}\"\n")).unwrap();
        assert!(matches!(&cancelled.steps[0].kind, StepKind::Cancelled(id) if id == "\"{$c}\""));
        let e = parse(
            "server/x",
            "x.mcpt",
            "# i\n@requirement A\n@level must\n! cancelled 1\n",
        )
        .unwrap_err();
        assert!(e.message.contains("client cases"), "{e}");
    }

    #[test]
    fn mistakes_are_errors_with_lines() {
        let head = "# intent\n@requirement CAN-05\n@level must\n";
        let e = error_of(&format!("{head}! frobnicate\n"));
        assert_eq!(e.line, 4);
        assert!(e.message.contains("unknown control"), "{e}");
        assert_eq!(error_of(&format!("{head}< {{nope\n")).line, 4);
        assert_eq!(error_of(&format!("{head}> {{}}\n@level must\n")).line, 5);
        assert_eq!(error_of(&format!("{head}hello\n")).line, 4);
        assert_eq!(error_of(&format!("{head}! repeat 2\n> {{}}\n")).line, 4);
        assert_eq!(error_of(&format!("{head}! end\n")).line, 4);
        assert!(error_of("@requirement X\n@level must\n> {}\n")
            .message
            .contains("opens with"));
        assert!(error_of("# i\n@level must\n> {}\n")
            .message
            .contains("@requirement"));
        assert!(error_of(&format!("{head}@versions 1999-01-01\n"))
            .message
            .contains("unknown protocol"));
        assert!(error_of(&format!("{head}! silent x 1s\n"))
            .message
            .contains("not a request id"));
        assert!(error_of(&format!("{head}! wait soon\n"))
            .message
            .contains("duration"));
    }

    #[test]
    fn cancel_steps() {
        let case = parse(
            "server/x",
            "x",
            "# i\n@requirement A\n@level must\n! cancel 1\n! cancel \"a\" too  late\n! cancel \"{$id}\" x\n",
        )
        .unwrap();
        let kinds: Vec<_> = case.steps.iter().map(|s| s.kind.clone()).collect();
        assert_eq!(
            kinds,
            [
                StepKind::Cancel {
                    id: "1".into(),
                    reason: None
                },
                StepKind::Cancel {
                    id: "\"a\"".into(),
                    reason: Some("too  late".into())
                },
                StepKind::Cancel {
                    id: "\"{$id}\"".into(),
                    reason: Some("x".into())
                },
            ]
        );
    }

    #[test]
    fn http_steps_need_an_http_case() {
        let head = "# i\n@requirement HTTP-16\n@level must\n";
        let http = format!("{head}@transports http\n");
        let case = parse(
            "server/x",
            "x",
            &format!("{http}! header Origin: http://a.example\n> {{}}\n! status 403|4xx\n! header Mcp-Session-Id:\n! disconnect 1\n! session other\n! delete-session\n! status 2xx\n! listen\n! witness not 1 \"a\"\n"),
        )
        .unwrap();
        assert_eq!(case.transports, [TransportKind::Http]);
        let kinds: Vec<_> = case.steps.iter().map(|s| s.kind.clone()).collect();
        assert_eq!(
            kinds[0],
            StepKind::Header {
                name: "Origin".into(),
                value: "http://a.example".into()
            }
        );
        assert_eq!(kinds[2], StepKind::Status(vec!["403".into(), "4xx".into()]));
        assert_eq!(
            kinds[3],
            StepKind::Header {
                name: "Mcp-Session-Id".into(),
                value: String::new()
            }
        );
        assert_eq!(kinds[5], StepKind::Session("other".into()));
        assert_eq!(
            kinds[9],
            StepKind::Unwitnessed(vec!["1".into(), "\"a\"".into()])
        );

        let e = error_of(&format!("{head}! disconnect 1\n"));
        assert_eq!(e.line, 4);
        assert!(e.message.contains("add `@transports http`"), "{e}");
        let e = error_of(&format!("{http}! close-stdin\n"));
        assert!(e.message.contains("add `@transports stdio`"), "{e}");
        let e = error_of(&format!("{http}! barrier\n! status 202\n"));
        assert_eq!(e.line, 6);
        assert!(e.message.contains("right after"), "{e}");
        assert!(error_of(&format!("{http}> {{}}\n! status 20\n"))
            .message
            .contains("`! status 202`"));
        assert!(error_of(&format!("{http}! header Origin\n"))
            .message
            .contains("NAME: VALUE"));
        assert!(error_of(&format!("{head}@transports pigeon\n"))
            .message
            .contains("unknown transport"));
        let both = parse("server/x", "x", &format!("{head}> {{}}\n")).unwrap();
        assert_eq!(both.transports, [TransportKind::Stdio, TransportKind::Http]);
    }

    #[test]
    fn sweeps_expand_values() {
        let case = parse(
            "server/x",
            "x",
            "# i\n@requirement A\n@level must\n! sweep d 0ms..30ms step 10ms\n! after {$d}\n! end\n",
        )
        .unwrap();
        match &case.steps[0].kind {
            StepKind::Sweep { var, values, steps } => {
                assert_eq!(var, "d");
                assert_eq!(values, &[0, 10, 20, 30]);
                assert_eq!(steps[0].kind, StepKind::After(Span::Var("d".into())));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn client_headers() {
        let head = "# i\n@requirement CAN-01\n@level must\n";
        let text = format!(
            "{head}@actions [{{\"connect\":true}},{{\"call\":\"work\",\"progress\":true}},{{\"exit\":true}}]\n@outcomes result cancelled|timeout *\n> {{\"method\":\"initialize\"}}\n"
        );
        let case = parse("client/x", "x", &text).unwrap();
        assert_eq!(case.role, Role::Client);
        assert_eq!(case.actions.len(), 3);
        assert_eq!(case.actions[1]["call"], "work");
        assert_eq!(case.outcomes[1], ["cancelled", "timeout"]);
        assert_eq!(case.outcomes[2], ["*"]);
        assert!(matches!(&case.steps[0].kind, StepKind::Expect(_)));

        let client = |h: &str| parse("client/x", "x", &format!("{head}{h}> {{}}\n"));
        assert_eq!(client("@actions {\"call\":1}\n").unwrap_err().line, 4);
        assert!(client("@actions [{\"call\":\"a\",\"exit\":true}]\n")
            .unwrap_err()
            .message
            .contains("exactly one"));
        assert!(client("@actions [{\"exit\":true}]\n@outcomes done\n")
            .unwrap_err()
            .message
            .contains("unknown outcome"));
        assert!(
            client("@actions [{\"exit\":true}]\n@outcomes result result\n")
                .unwrap_err()
                .message
                .contains("one per action")
        );
        assert!(client("").unwrap_err().message.contains("needs `@actions`"));
        assert!(
            error_of(&format!("{head}@actions [{{\"exit\":true}}]\n< {{}}\n"))
                .message
                .contains("for client cases")
        );
    }

    #[test]
    fn arrival_windows() {
        let case = parse(
            "server/x",
            "x",
            "# i\n@requirement A\n@level must\n! arrives 50ms..550ms\n",
        )
        .unwrap();
        let StepKind::Arrives(arrival) = case.steps[0].kind else {
            panic!("{:?}", case.steps[0])
        };
        assert_eq!(arrival.judge(Duration::from_millis(300)), None);
        assert!(arrival
            .judge(Duration::from_millis(10))
            .unwrap()
            .contains("allows 50 to 550 ms"));
        assert!(arrival.judge(Duration::from_millis(600)).is_some());
        let bad = parse(
            "server/x",
            "x",
            "# i\n@requirement A\n@level must\n! arrives 9ms..1ms\n",
        );
        assert_eq!(bad.unwrap_err().line, 4);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("-1s"), None);
        assert_eq!(parse_duration("1e20s"), None, "too big for a Duration");
        assert_eq!(parse_duration("3601s"), None, "longer than an hour");
    }

    #[test]
    fn loops_are_bounded() {
        let head = "# i\n@requirement A\n@level must\n";
        let repeat = error_of(&format!("{head}! repeat 1000000000\n! barrier\n! end\n"));
        assert!(repeat.message.contains("from 1 to 10000"), "{repeat}");
        let sweep = error_of(&format!(
            "{head}! sweep d 0ms..3600s step 1ms\n! barrier\n! end\n"
        ));
        assert!(sweep.message.contains("more than 10000 rounds"), "{sweep}");
        assert!(parse(
            "server/x",
            "x",
            &format!("{head}! repeat 10000\n! barrier\n! end\n")
        )
        .is_ok());
    }
}
