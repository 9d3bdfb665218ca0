//! The envelope every line must have, whichever side wrote it: one JSON-RPC 2.0 message object
//! per line. Server and client runs judge it the same way, with the rule of their stream.

use crate::outcome::{Doubt, Severity};
use crate::pattern::canonical;
use crate::requirement::Req;
use serde_json::Value;

/// Who wrote the lines, and which stdio rule governs them.
pub struct Writer {
    /// `the target`, `the client`.
    pub who: &'static str,
    /// Where the lines went: `to stdout`, `to its server`.
    pub stream: &'static str,
    /// The rule for that stream (STD-03 for a server's stdout, STD-04 for a client's writes).
    pub rule: Req,
}

/// A server target writing to its stdout.
pub const SERVER: Writer = Writer {
    who: "the target",
    stream: "to stdout",
    rule: Req::Std03,
};
/// A client target writing to the server it started.
pub const CLIENT: Writer = Writer {
    who: "the client",
    stream: "to its server",
    rule: Req::Std04,
};

/// Something wrong with what a target did, found by a standing rule (here: with a line, before
/// any case looks at it).
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// How it weighs.
    pub severity: Severity,
    /// The requirement id.
    pub requirement: Req,
    /// What was wrong.
    pub message: String,
    /// For a note that a run on a target of its own may settle: why.
    pub doubt: Option<Doubt>,
}

impl Problem {
    /// A finding of `severity` against `requirement`.
    pub fn new(severity: Severity, requirement: Req, message: String) -> Problem {
        Problem {
            severity,
            requirement,
            message,
            doubt: None,
        }
    }

    /// The same problem, a note that a run on a target of its own may settle.
    pub fn doubting(mut self, doubt: Doubt) -> Problem {
        self.doubt = Some(doubt);
        self
    }
}

/// A blank line: not a message, but no harm done either (AMB-16 weighs it as a warning).
pub fn blank(writer: &Writer) -> Problem {
    Problem {
        doubt: None,
        severity: Severity::Warn,
        requirement: writer.rule,
        message: format!(
            "{} wrote a blank line {}; every line should be one message",
            writer.who, writer.stream
        ),
    }
}

/// Problems with a non-blank line. Only a line whose value is a JSON object is read further.
pub fn check(writer: &Writer, text: &str, value: Option<&Value>) -> Vec<Problem> {
    let fail = |requirement, message| Problem {
        doubt: None,
        severity: Severity::Fail,
        requirement,
        message,
    };
    let Some(value) = value else {
        let shown: String = text.chars().take(200).collect();
        return vec![fail(
            writer.rule,
            format!(
                "{} wrote a line {} that is not JSON: `{shown}`; only MCP messages go there, logs go to stderr",
                writer.who, writer.stream
            ),
        )];
    };
    let Some(message) = value.as_object() else {
        return vec![fail(
            Req::Rpc01,
            format!(
                "{} wrote `{}`, which is not a JSON-RPC message object",
                writer.who,
                short(value)
            ),
        )];
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return vec![fail(
            Req::Rpc01,
            format!("a message without `\"jsonrpc\": \"2.0\"`: {}", short(value)),
        )];
    }
    vec![]
}

/// A message for a finding: canonical JSON, cut at 300 characters.
pub fn short(value: &Value) -> String {
    let text = canonical(value);
    if text.chars().count() > 300 {
        let cut: String = text.chars().take(300).collect();
        format!("{cut}…")
    } else {
        text
    }
}
