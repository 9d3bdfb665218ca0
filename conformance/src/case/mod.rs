//! Case files: the data a person reads and reviews, parsed strictly into steps.
//!
//! A case is a line-oriented transcript. Every line keeps its number so that every error, every
//! failure and every blessed rewrite can point at `path:line`. Anything the parser does not
//! understand is an error, never skipped. The format is described in `cases/README.md`.
//!
//! - [`parse`](parse()) reads a case file into a [`Case`];
//! - `client` holds the vocabulary of client cases (`@actions`, `@outcomes`);
//! - [`rewrite_lines`] replaces single lines losslessly, for blessing;
//! - `step` holds what a case does, one [`Step`] a line.

mod client;
mod deviation;
mod needs;
mod parse;
mod poll;
mod rewrite;
mod step;

pub use client::{ACTION_VERBS, OUTCOME_WORDS};
pub use deviation::deviations;
pub use needs::{Need, TASKS_EXTENSION};
pub use parse::{parse, parse_duration};
pub use poll::Poll;
pub use rewrite::rewrite_lines;
pub use step::{Arrival, Bindings, Span, Step, StepKind};

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
    /// Protocol versions the case applies to, at least one, in the order `@versions` names
    /// them.
    pub versions: Vec<crate::era::ProtocolVersion>,
    /// The fixture roles the case calls, and how (`@fixtures work:task`).
    pub fixtures: Vec<crate::fixtures::FixtureNeed>,
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
    /// What the case has the harness send that its session does not allow, on purpose
    /// (`@deviation`): the one deviation it exists to test. `None` when it sends nothing of
    /// the kind (the parser checks which, [`deviation`]).
    pub deviation: Option<String>,
    /// The line of the `@deviation` header (0 when there is none).
    pub deviation_line: usize,
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
    /// The version a run picks for the case when nothing else decides: the last one its
    /// `@versions` names (the newest, as cases list them). A parsed case names at least one; a
    /// case built without any (a recorded session's) gets the newest of the handshake era.
    pub fn last_version(&self) -> crate::era::ProtocolVersion {
        self.versions
            .last()
            .copied()
            .unwrap_or(crate::era::ProtocolVersion::NEWEST_HANDSHAKE)
    }

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
            // A cancel of an id the case never sent is a deviation the case must declare.
            let deviates = body.contains(r#""requestId":"7""#) || body.contains("12345");
            let deviation = if deviates {
                "@deviation it cancels what it never sent\n"
            } else {
                ""
            };
            super::parse(
                "server/x",
                "x",
                &format!("# i\n@requirement A\n@level must\n{deviation}{body}"),
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
