//! The strict parser: every line is understood or is an error at `path:line`.

use super::*;

mod checks;
mod control;
mod header;
#[cfg(test)]
mod sends_tests;
#[cfg(test)]
mod tests;

use checks::{check_fresh, check_no_server_requests, check_task_calls, check_transport_steps};
pub use control::parse_duration;
use control::{Control, Parser};

/// Parses a case. `id` is its path below the cases folder without extension; `path` is what
/// messages show.
pub fn parse(id: &str, path: &str, source: &str) -> Result<Case, CaseError> {
    let p = Parser { path };
    let mut case = blank(id, path, source);
    let mut level = None;
    let mut in_intent = true;
    let mut seen_step = false;
    let mut blocks = Blocks::default();
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
            header::header(&p, &mut case, &mut level, line, rest)?;
            continue;
        }
        seen_step = true;
        let control = step_line(&p, case.role, line, text)?;
        blocks.add(&p, line, control)?;
    }
    let top = blocks.close(&p)?;
    case.level = check_headers(&p, &case, level, &top)?;
    check_transport_steps(&p, &case, &top)?;
    check_fresh(&p, &case, &top)?;
    if case.role == Role::Server {
        check_task_calls(&p, &case, &top)?;
    }
    let declared = case.deviation.is_some().then_some(case.deviation_line);
    super::deviation::check(&case, &top, declared)
        .map_err(|(line, message)| p.error(line, message))?;
    if case.role == Role::Client
        && case.plays != Some(crate::era::Era::Handshake)
        && case.versions.iter().any(|v| v.is_stateless())
    {
        check_no_server_requests(&p, &top)?;
    }
    case.steps = top;
    Ok(case)
}

/// The case before its lines are read: every header at its default (the role from the
/// folder), no intent and no steps.
fn blank(id: &str, path: &str, source: &str) -> Case {
    Case {
        id: id.to_string(),
        path: path.to_string(),
        source: source.to_string(),
        intent: String::new(),
        requirements: vec![],
        level: Level::Must,
        versions: crate::era::ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.has_handshake())
            .collect(),
        fixtures: vec![],
        handshake: true,
        transports: vec![TransportKind::Stdio, TransportKind::Http],
        stamp: true,
        timeout: None,
        fresh: None,
        plays: None,
        needs: vec![],
        deviation: None,
        deviation_line: 0,
        role: if id.starts_with("client/") {
            Role::Client
        } else {
            Role::Server
        },
        steps: vec![],
        actions: vec![],
        outcomes: vec![],
        outcomes_line: 0,
    }
}

/// A step line (`> `, `< ` or `! `): what it sends, expects or controls. Arrows are the
/// protocol's direction; which side the harness writes depends on the role.
fn step_line(p: &Parser, role: Role, line: usize, text: &str) -> Result<Control, CaseError> {
    let (sent, expected) = match role {
        Role::Server => ("> ", "< "),
        Role::Client => ("< ", "> "),
    };
    if let Some(rest) = text.strip_prefix(sent) {
        Ok(Control::Step(StepKind::Send(rest.to_string())))
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
        Ok(Control::Step(StepKind::Expect(rest.to_string())))
    } else if let Some(rest) = text.strip_prefix("! ") {
        p.control(line, rest.trim())
    } else {
        Err(p.error(
            line,
            "a line starts with `#`, `@`, `> `, `< ` or `! `; fix or comment out this line",
        ))
    }
}

/// The steps read so far, nested: the blocks still open (`! repeat`, `! sweep`, `! poll`,
/// each with its line and the steps gathered in it) and the case's top-level steps.
#[derive(Default)]
struct Blocks {
    open: Vec<(usize, StepKind)>,
    top: Vec<Step>,
}

impl Blocks {
    /// Adds the step line at `line`: a step goes into the innermost open block (or the top),
    /// an opening opens a block, and `! end` closes the innermost one, checked, as a step.
    fn add(&mut self, p: &Parser, line: usize, control: Control) -> Result<(), CaseError> {
        match control {
            Control::Step(kind) => self.push(Step { line, kind }),
            Control::Open(kind) => self.open.push((line, kind)),
            Control::End => {
                let (open, kind) = self.open.pop().ok_or_else(|| {
                    p.error(line, "`! end` without an open repeat, sweep or poll")
                })?;
                if let StepKind::Poll(poll) = &kind {
                    poll.check(open, |line, message| p.error(line, message))?;
                }
                if kind.inner().is_some_and(<[Step]>::is_empty) {
                    return Err(p.error(open, "this block has no steps"));
                }
                self.push(Step { line: open, kind });
            }
        }
        Ok(())
    }

    /// Puts a step into the innermost open block, or at the top.
    fn push(&mut self, step: Step) {
        match self.open.last_mut().and_then(|(_, kind)| kind.inner_mut()) {
            Some(steps) => steps.push(step),
            None => self.top.push(step),
        }
    }

    /// The top-level steps, once every block is closed.
    fn close(self, p: &Parser) -> Result<Vec<Step>, CaseError> {
        match self.open.last() {
            Some((line, _)) => Err(p.error(*line, "this block is never closed; add `! end`")),
            None => Ok(self.top),
        }
    }
}

/// What every case needs (an intent, a requirement, a level, steps) and the headers that
/// belong to one role only; returns the level.
fn check_headers(
    p: &Parser,
    case: &Case,
    level: Option<Level>,
    top: &[Step],
) -> Result<Level, CaseError> {
    if case.intent.is_empty() {
        return Err(p.error(
            1,
            "a case opens with a `#` comment saying what it checks and why",
        ));
    }
    if case.requirements.is_empty() {
        return Err(p.error(0, "missing `@requirement` (ids from cases/REQUIREMENTS.md)"));
    }
    let level = level.ok_or_else(|| p.error(0, "missing `@level must|should|info`"))?;
    if top.is_empty() {
        return Err(p.error(0, "the case has no steps"));
    }
    check_role_headers(p, case)?;
    Ok(level)
}

/// The headers that belong to one role, and the client's actions and outcomes that must
/// agree.
fn check_role_headers(p: &Parser, case: &Case) -> Result<(), CaseError> {
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
    Ok(())
}
