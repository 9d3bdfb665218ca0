//! Case files: the data a person reads and reviews, parsed strictly into steps.
//!
//! A case is a line-oriented transcript. Every line keeps its number so that every error, every
//! failure and every blessed rewrite can point at `path:line`. Anything the parser does not
//! understand is an error, never skipped. The format is described in `cases/README.md`.
//!
//! - [`parse`](parse()) reads a case file into a [`Case`];
//! - `client` holds the vocabulary of client cases (`@actions`, `@outcomes`);
//! - [`rewrite_lines`] replaces single lines losslessly, for blessing.

mod client;
mod needs;
mod parse;
mod poll;
mod rewrite;

pub use client::{ACTION_VERBS, OUTCOME_WORDS};
pub use needs::Need;
pub use parse::{parse, parse_duration};
pub use poll::Poll;
pub use rewrite::rewrite_lines;

use serde_json::Value;
use std::fmt;
use std::time::Duration;

pub use crate::era::{HANDSHAKE_VERSIONS, KNOWN_VERSIONS};

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

/// A transport a case can run over (`@transports`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// Newline-delimited JSON-RPC over a process's stdin and stdout.
    Stdio,
    /// Streamable HTTP: one POST per message, a response stream per POST.
    Http,
}

impl TransportKind {
    /// The word case files and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Http => "http",
        }
    }

    /// The transport a word names.
    pub fn parse(word: &str) -> Option<TransportKind> {
        match word {
            "stdio" => Some(TransportKind::Stdio),
            "http" => Some(TransportKind::Http),
            _ => None,
        }
    }
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

    /// The steps inside a block (`! repeat`, `! sweep`, `! poll`), if this is one.
    pub fn inner(&self) -> Option<&[Step]> {
        match self {
            StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. } => Some(steps),
            StepKind::Poll(poll) => Some(&poll.steps),
            _ => None,
        }
    }

    /// The steps inside a block, to add to while it is parsed.
    pub(crate) fn inner_mut(&mut self) -> Option<&mut Vec<Step>> {
        match self {
            StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. } => Some(steps),
            StepKind::Poll(poll) => Some(&mut poll.steps),
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
    /// `! alive ID`: the server still serves, shown with what every server has: a request
    /// with id ID that the era always offers (`ping` up to 2025-11-25, `server/discover` in
    /// 2026-07-28) gets a result. A case line like any other, so the diff shows it.
    Alive(String),
    /// `! cancel ID [reason]`: cancel the harness's request ID the way the protocol version
    /// and the transport call for (`notifications/cancelled`, or closing the request's
    /// stream on 2026-07-28 HTTP).
    Cancel {
        /// The id of the request to cancel.
        id: String,
        /// The cancel's `reason`, when the case gives one.
        reason: Option<String>,
    },
    /// `! cancelled ID` (client cases): the client cancels its request ID the way the protocol
    /// version and the transport call for: `notifications/cancelled` with the exact id, or
    /// closing the request's response stream on 2026-07-28 HTTP (CAN-12).
    Cancelled(String),
    /// `! after D`: wait until D has passed since the last `>` line was sent.
    After(Span),
    /// `! wait D`: watch the target for a time window.
    Wait(Span),
    /// `! silent ID D`: watch for D, then judge every message about request ID since the last
    /// barrier (the request must have been cancelled or answered).
    Silent {
        /// The id of the request watched.
        id: String,
        /// How long to watch.
        window: Span,
    },
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
    /// `! witness not ID…`: the `cancellations` fixture must list none of these (their work
    /// goes on).
    Unwitnessed(Vec<String>),
    /// `! header NAME: VALUE`: the next `>` message's POST carries this header; an empty
    /// value removes a header the harness would send (HTTP).
    Header {
        /// The header's name.
        name: String,
        /// Its value; empty removes the header.
        value: String,
    },
    /// `! status CODE|…`: the HTTP status of the request just made must be one of these
    /// (`202`, `4xx`). It follows the `>` line, `! listen` or `! delete-session` it judges.
    Status(Vec<String>),
    /// `! disconnect ID`: closes the response stream of request ID without cancelling it
    /// (HTTP).
    Disconnect(String),
    /// `! session NAME`: switches to session NAME, opening it with its own handshake when it
    /// is new; the first session is `main` (HTTP).
    Session(String),
    /// `! delete-session`: ends the current session with a DELETE (HTTP).
    DeleteSession,
    /// `! listen`: opens a GET stream in the current session (HTTP).
    Listen,
    /// `! server-exit`: the harness's server exits on its own (client cases).
    ServerExit,
    /// `! expire-session`: the harness's server forgets the client's session, so requests
    /// that carry it get 404 (client cases, HTTP).
    ExpireSession,
    /// `! repeat N` … `! end`: the inner steps N times, with `{$i}` = 0, 1, …
    Repeat {
        /// How many times.
        count: usize,
        /// The steps repeated.
        steps: Vec<Step>,
    },
    /// `! sweep NAME FROM..TO step BY` … `! end`: the inner steps once per value (milliseconds),
    /// with `{$NAME}` the value and `{$i}` the iteration.
    Sweep {
        /// The variable's name.
        var: String,
        /// Its values, in milliseconds.
        values: Vec<u64>,
        /// The steps carried out once per value.
        steps: Vec<Step>,
    },
    /// `! poll N every D` … `! end`: one request sent again and again (`{$i}` = 0, 1, …) until
    /// its response matches one of the expected lines after it (see [`Poll`]).
    Poll(Poll),
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
    /// Whether the harness performs the `initialize` handshake before the steps (in the
    /// handshake era; the stateless era has none).
    pub handshake: bool,
    /// The transports the case applies to (`@transports`; both by default).
    pub transports: Vec<TransportKind>,
    /// Whether the harness stamps the stateless era's `_meta` onto requests that lack it
    /// (`@stamp auto`, the default); `@stamp none` for cases about the stamp itself.
    pub stamp: bool,
    /// The case's own time limit, if it sets one.
    pub timeout: Option<Duration>,
    /// Why the case needs a target of its own, started for it alone (`@fresh REASON`): it
    /// ends or restarts the process or the session, or is about the opening itself. `None`
    /// when it may share a target with other cases.
    pub fresh: Option<String>,
    /// Client cases: the era of the server the harness plays when it is not the era of the
    /// version the case runs at (`@plays handshake`: a client told to speak 2026-07-28 meets a
    /// server of the handshake era, LIF-14).
    pub plays: Option<crate::era::Era>,
    /// What the server must declare for the case to apply (`@needs`): a case about tasks
    /// is skipped, with the reason, by a server that declares none.
    pub needs: Vec<Need>,
    /// Which side the harness plays.
    pub role: Role,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Client cases: what the adapter is told to do (`@actions`), one JSON object per action.
    pub actions: Vec<Value>,
    /// Client cases: the outcome each action may end with (`@outcomes`), one set per action.
    pub outcomes: Vec<Vec<String>>,
    /// The line of the `@outcomes` header (0 when there is none), where findings about the
    /// adapter's outcomes point.
    pub outcomes_line: usize,
}

impl Case {
    /// Whether a line of the case sends `notifications/cancelled` for an id that a request of
    /// the case uses (as written, so `"burst-{$i}"` matches `"burst-{$i}"`; `"7"` matches `7`,
    /// as a case about id types sends it): the case is about what that message does to the
    /// request, which it can do only where the cancel is that message
    /// (not in 2026-07-28 over Streamable HTTP, where closing the stream is the cancel and a
    /// POSTed one may be ignored, AMB-06).
    pub fn cancels_by_message(&self) -> bool {
        fn sent(steps: &[Step], out: &mut Vec<Value>) {
            for step in steps {
                match &step.kind {
                    StepKind::Send(text) => out.extend(serde_json::from_str::<Value>(text).ok()),
                    kind => {
                        if let Some(steps) = kind.inner() {
                            sent(steps, out)
                        }
                    }
                }
            }
        }
        let mut messages = vec![];
        sent(&self.steps, &mut messages);
        // An id as text, whatever its JSON type.
        let text = |id: &Value| match id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let ids: Vec<String> = messages
            .iter()
            .filter(|m| m.get("method").is_some())
            .filter_map(|m| m.get("id"))
            .map(text)
            .collect();
        messages
            .iter()
            .filter(|m| m.get("method").and_then(Value::as_str) == Some("notifications/cancelled"))
            .filter_map(|m| m.pointer("/params/requestId"))
            .any(|cancelled| ids.contains(&text(cancelled)))
    }
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_case_that_cancels_its_own_request_by_message_is_known() {
        let case = |body: &str| {
            super::parse(
                "server/x",
                "x",
                &format!("# i\n@requirement A\n@level must\n{body}"),
            )
            .unwrap()
        };
        let request =
            r#"> {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"work"}}"#;
        let cancel = |id: &str| {
            format!(
                r#"> {{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
            )
        };
        assert!(case(&format!("{request}\n{}\n", cancel("7"))).cancels_by_message());
        assert!(case(&format!("{request}\n{}\n", cancel("\"7\""))).cancels_by_message());
        assert!(!case(&format!("{request}\n{}\n", cancel("12345"))).cancels_by_message());
        assert!(!case(&format!("{request}\n! cancel 7\n")).cancels_by_message());
        let looped = r#"! repeat 2
> {"jsonrpc":"2.0","id":"a-{$i}","method":"ping"}
> {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a-{$i}"}}
! end
"#;
        assert!(case(looped).cancels_by_message());
    }
}
