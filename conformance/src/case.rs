//! Case files: the data a person reads and reviews, parsed strictly into steps.
//!
//! A case is a line-oriented transcript. Every line keeps its number so that every error, every
//! failure and every blessed rewrite can point at `path:line`. Anything the parser does not
//! understand is an error, never skipped. The format is described in `cases/README.md`.

use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// Every protocol version of the handshake era, oldest first.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Every protocol version a case may name.
pub const KNOWN_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// How much a broken expectation of this case weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// A MUST of the spec: a broken expectation is a failure.
    Must,
    /// A SHOULD: a broken expectation is a warning, a failure only with `--strict`.
    Should,
    /// Recorded, not judged.
    Info,
}

impl Level {
    /// The word used in case files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "must",
            Level::Should => "should",
            Level::Info => "info",
        }
    }
}

/// Which side of the protocol the harness plays; the target plays the other one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The target is a server; the harness is its client.
    Server,
    /// The target is a client; the harness is its server.
    Client,
}

/// A duration that is either written in the case or taken from a loop variable (milliseconds).
#[derive(Debug, Clone, PartialEq)]
pub enum Span {
    /// A fixed duration such as `100ms`.
    Fixed(Duration),
    /// `{$name}`: the loop variable's value, in milliseconds.
    Var(String),
}

impl Span {
    /// The duration, with a loop variable's value read from `captures`.
    pub fn resolve(&self, captures: &crate::pattern::Captures) -> Duration {
        match self {
            Span::Fixed(d) => *d,
            Span::Var(name) => {
                Duration::from_millis(captures.get(name).and_then(Value::as_u64).unwrap_or(0))
            }
        }
    }
}

/// The loop variables one round of a `! repeat` or `! sweep` binds: name and value.
pub type Bindings = Vec<(String, Value)>;

impl StepKind {
    /// For `! repeat` and `! sweep`: the inner steps and, per round, the loop variables to bind.
    pub fn rounds(&self) -> Option<(&[Step], Vec<Bindings>)> {
        match self {
            StepKind::Repeat { count, steps } => Some((
                steps,
                (0..*count)
                    .map(|i| vec![("i".to_string(), Value::from(i))])
                    .collect(),
            )),
            StepKind::Sweep { var, values, steps } => Some((
                steps,
                values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        vec![
                            ("i".to_string(), Value::from(i)),
                            (var.clone(), Value::from(*v)),
                        ]
                    })
                    .collect(),
            )),
            _ => None,
        }
    }
}

/// One line of a case that does something.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// 1-based line number in the case file.
    pub line: usize,
    /// What the line asks for.
    pub kind: StepKind,
}

/// The things a step can ask the harness to do.
#[derive(Debug, Clone, PartialEq)]
pub enum StepKind {
    /// A message the harness writes, verbatim but for `{$name}` references, as one line
    /// (`>` when the target is a server, `<` when it is a client).
    Send(String),
    /// A message the harness waits for, as a pattern (raw text; loop variables are filled in
    /// before it is parsed): `<` when the target is a server, `>` when it is a client.
    Expect(String),
    /// `! barrier`: a ping whose answer proves the target has read everything sent before it.
    Barrier,
    /// `! after D`: wait until D has passed since the last `>` line was sent.
    After(Span),
    /// `! wait D`: watch the target for a time window.
    Wait(Span),
    /// `! silent ID D`: watch for D, then judge every message about request ID since the last
    /// barrier (the request must have been cancelled or answered).
    Silent { id: String, window: Span },
    /// `! witness ID…`: ask the `cancellations` fixture which requests saw their cancellation;
    /// every listed id must be there.
    Witness(Vec<String>),
    /// `! arrives FROM..TO`: the next expected message must arrive between FROM and TO after
    /// the message the previous expectation matched (a deadline, give or take).
    Arrives(Arrival),
    /// `! close-stdin`: close the target's standard input.
    CloseStdin,
    /// `! exit D`: the target must exit within D.
    Exit(Span),
    /// `! repeat N` … `! end`: the inner steps N times, with `{$i}` = 0, 1, …
    Repeat { count: usize, steps: Vec<Step> },
    /// `! sweep NAME FROM..TO step BY` … `! end`: the inner steps once per value (milliseconds),
    /// with `{$NAME}` the value and `{$i}` the iteration.
    Sweep {
        var: String,
        values: Vec<u64>,
        steps: Vec<Step>,
    },
}

/// When a message may arrive, relative to the one matched before it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    /// The earliest.
    pub from: Duration,
    /// The latest.
    pub to: Duration,
    /// The case line that set it.
    pub line: usize,
}

impl Arrival {
    /// A complaint when a message came `gap` after the one before it, outside the window.
    pub fn judge(&self, gap: Duration) -> Option<String> {
        (gap < self.from || gap > self.to).then(|| {
            format!(
                "the message arrived {:.0} ms after the one before it; line {} allows {:.0} to {:.0} ms",
                gap.as_secs_f64() * 1000.0,
                self.line,
                self.from.as_secs_f64() * 1000.0,
                self.to.as_secs_f64() * 1000.0
            )
        })
    }
}

/// A parsed case.
#[derive(Debug, Clone)]
pub struct Case {
    /// The id: the path below the cases folder, without `.mcpt` (e.g. `server/cancel-unknown-id`).
    pub id: String,
    /// The path shown in messages.
    pub path: String,
    /// The full text, kept so blessing can rewrite single lines losslessly.
    pub source: String,
    /// The opening comment: one sentence of intent.
    pub intent: String,
    /// Requirement ids (`CAN-05`, …), as listed in `cases/REQUIREMENTS.md`.
    pub requirements: Vec<String>,
    /// How a broken expectation weighs.
    pub level: Level,
    /// Protocol versions the case applies to.
    pub versions: Vec<String>,
    /// Fixture tools the case needs.
    pub fixtures: Vec<String>,
    /// Whether the harness performs the `initialize` handshake before the steps.
    pub handshake: bool,
    /// The case's own time limit, if it sets one.
    pub timeout: Option<Duration>,
    /// Which side the harness plays.
    pub role: Role,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Client cases: what the adapter is told to do (`@actions`), one JSON object per action.
    pub actions: Vec<Value>,
    /// Client cases: the outcome each action may end with (`@outcomes`), one set per action.
    pub outcomes: Vec<Vec<String>>,
}

/// The words an adapter reports an action's end with.
pub const OUTCOME_WORDS: [&str; 4] = ["result", "error", "cancelled", "timeout"];

/// The verbs an action may use; each action object has exactly one of them.
pub const ACTION_VERBS: [&str; 5] = ["connect", "call", "ping", "sleep_ms", "exit"];

/// Checks `@actions`: a JSON array of objects, each with exactly one known verb.
fn parse_actions(value: &str) -> Result<Vec<Value>, String> {
    let parsed: Value =
        serde_json::from_str(value).map_err(|e| format!("`@actions` is not JSON: {e}"))?;
    let Value::Array(actions) = parsed else {
        return Err("`@actions` is a JSON array of action objects".into());
    };
    for (i, action) in actions.iter().enumerate() {
        let Some(object) = action.as_object() else {
            return Err(format!("action {i} is not a JSON object"));
        };
        let verbs: Vec<&str> = ACTION_VERBS
            .iter()
            .copied()
            .filter(|v| object.contains_key(*v))
            .collect();
        if verbs.len() != 1 {
            return Err(format!(
                "action {i} needs exactly one of {}",
                ACTION_VERBS.join(", ")
            ));
        }
    }
    if actions.is_empty() {
        return Err("`@actions` names no action".into());
    }
    Ok(actions)
}

/// Checks `@outcomes`: one word per action, alternatives joined by `|`, `*` for any.
fn parse_outcomes(value: &str) -> Result<Vec<Vec<String>>, String> {
    value
        .split_whitespace()
        .map(|word| {
            let set: Vec<String> = word.split('|').map(str::to_string).collect();
            match set
                .iter()
                .find(|w| *w != "*" && !OUTCOME_WORDS.contains(&w.as_str()))
            {
                Some(bad) => Err(format!(
                    "unknown outcome `{bad}`; known: {}, or `*` for any",
                    OUTCOME_WORDS.join(", ")
                )),
                None => Ok(set),
            }
        })
        .collect()
}

/// A mistake in a case file. It is reported as `path:line: message` and ends the run with
/// exit code 2: a broken case is never skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseError {
    /// The case file.
    pub path: String,
    /// 1-based line, or 0 for the file as a whole.
    pub line: usize,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path, self.message)
        } else {
            write!(f, "{}:{}: {}", self.path, self.line, self.message)
        }
    }
}

impl std::error::Error for CaseError {}

/// Parses a duration such as `250ms`, `2s` or `1.5s`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else {
        return None;
    };
    let value: f64 = number.parse().ok()?;
    (value.is_finite() && value >= 0.0).then(|| Duration::from_secs_f64(value * scale))
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
                    format!("`! {what}` needs a duration such as `200ms` or `{{$d}}`"),
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
            ["witness", ids @ ..] if !ids.is_empty() => {
                for id in ids {
                    self.check_id(line, id)?;
                }
                StepKind::Witness(ids.iter().map(|s| s.to_string()).collect())
            }
            ["close-stdin"] => StepKind::CloseStdin,
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
                    .filter(|c| *c > 0)
                    .ok_or_else(|| self.error(line, "`! repeat` needs a positive count"))?;
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
                        "unknown control `! {text}`; known: barrier, after, wait, silent, witness, \
                         arrives, close-stdin, exit, repeat, sweep, end (see cases/README.md)"
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
        timeout: None,
        role: if id.starts_with("client/") {
            Role::Client
        } else {
            Role::Server
        },
        steps: vec![],
        actions: vec![],
        outcomes: vec![],
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
                    case.versions = words();
                    if let Some(bad) = case
                        .versions
                        .iter()
                        .find(|v| !KNOWN_VERSIONS.contains(&v.as_str()))
                    {
                        return Err(p.error(
                            line,
                            format!(
                                "unknown protocol version `{bad}`; known: {}",
                                KNOWN_VERSIONS.join(" ")
                            ),
                        ));
                    }
                }
                "fixtures" => case.fixtures = words(),
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
                    case.outcomes = parse_outcomes(value).map_err(|e| p.error(line, e))?
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
                             handshake, timeout, role, actions, outcomes"
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
    case.steps = top;
    Ok(case)
}

/// Replaces the text of some lines, keeping every other byte of the file as it was.
/// `replacements` holds (1-based line, new text without the newline).
pub fn rewrite_lines(source: &str, replacements: &[(usize, String)]) -> String {
    let mut out = String::with_capacity(source.len());
    for (index, raw) in source.split_inclusive('\n').enumerate() {
        match replacements
            .iter()
            .rev()
            .find(|(line, _)| *line == index + 1)
        {
            Some((_, text)) => {
                out.push_str(text);
                if raw.ends_with("\r\n") {
                    out.push_str("\r\n");
                } else if raw.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(raw),
        }
    }
    out
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
    fn rewrite_is_lossless() {
        let text = "# a\r\n< {\"x\":1}\n\n< {}";
        assert_eq!(rewrite_lines(text, &[]), text);
        assert_eq!(
            rewrite_lines(text, &[(2, "< {\"x\":2}".into()), (4, "< []".into())]),
            "# a\r\n< {\"x\":2}\n\n< []"
        );
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
    }
}
