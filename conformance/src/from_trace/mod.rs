//! `conformance case from-trace`: a recorded session becomes a server case, so that a bug seen
//! between two real programs is replayed by the harness against the next release of the
//! server, in CI, with the same verdict.
//!
//! [`draft`] is pure: it reads a [`Trace`] and returns the [`Draft`] of a case (the walk is in
//! `walk`, what of the server's messages varies between runs in `vary`); [`render`] writes it
//! as case text and checks that the case parser accepts it (`render`). Only stdio recordings
//! are drafted for now.

mod render;
mod vary;
mod walk;
mod write;

pub use render::render;
pub use write::draft_file;

use crate::era::ProtocolVersion;
use crate::requirement::Req;
use crate::trace::{Trace, Transport};
use std::fmt;
use std::path::PathBuf;

/// One line of the drafted case's steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// `> text`: what the client sent, as it sent it.
    Send(String),
    /// `< pattern`: what the server answered, with what varies as pattern tokens.
    Expect(String),
    /// `! control`: a cancel, its timing, a barrier, a silence, the end of the process.
    Control(String),
    /// `# text`: something a reader of the case should know about the recording.
    Comment(String),
}

/// A case drafted from a trace, before it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    /// The case's intent: one sentence.
    pub intent: String,
    /// Where and when the session was recorded.
    pub recorded: String,
    /// The requirements the recording touched (`cases/REQUIREMENTS.md`).
    pub requirements: Vec<Req>,
    /// The protocol version the session agreed on, when the trace shows a known one.
    pub version: Option<ProtocolVersion>,
    /// The steps end the server's process (`! close-stdin`, `! exit`), which only stdio has.
    pub stdio_only: bool,
    /// The steps.
    pub lines: Vec<Line>,
}

/// Why a trace cannot become a case: `path:line: what` (line 0: the trace as a whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftError {
    /// The trace.
    pub path: PathBuf,
    /// Its line to blame, or 0.
    pub line: usize,
    /// What is wrong, and what to do instead.
    pub what: String,
}

impl DraftError {
    fn new(trace: &Trace, line: usize, what: impl Into<String>) -> DraftError {
        DraftError {
            path: trace.path.clone(),
            line,
            what: what.into(),
        }
    }
}

impl fmt::Display for DraftError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.path.display(), self.what),
            line => write!(f, "{}:{line}: {}", self.path.display(), self.what),
        }
    }
}

impl std::error::Error for DraftError {}

/// Drafts a server case from a recorded stdio session.
pub fn draft(trace: &Trace) -> Result<Draft, DraftError> {
    if trace.header.transport == Transport::Http {
        return Err(DraftError::new(
            trace,
            1,
            "a Streamable HTTP recording; `case from-trace` drafts cases from stdio recordings only for now: record the server over stdio (`conformance record -o DIR -- <server argv>`) and draft from that trace",
        ));
    }
    let walked = walk::walk(trace)?;
    let mut intent = format!("Replays a recorded session of {}", list(&walked.requests));
    if walked.cancels.is_empty() {
        intent.push_str(": the server answers as it did and keeps serving.");
    } else {
        intent.push_str(&format!(
            " in which {}: the server answers the rest as it did, stays silent about what was cancelled and keeps serving.",
            list(&walked.cancels)
        ));
    }
    // What the trace said, read once: a version the harness does not know is none.
    let version = walked.version.as_deref().and_then(ProtocolVersion::parse);
    Ok(Draft {
        intent,
        recorded: recorded(trace, version),
        requirements: walked.touched.into_iter().collect(),
        version,
        stdio_only: walked.stdio_only,
        lines: walked.lines,
    })
}

/// `a`, `a and b`, `a, b and c`.
fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

/// Where, when and at which version the session was recorded.
fn recorded(trace: &Trace, version: Option<ProtocolVersion>) -> String {
    let at = version
        .map(|v| format!(", at protocol version {v}"))
        .unwrap_or_default();
    format!(
        "Recorded from {} on {}{at}.",
        recorded_from(trace),
        day(&trace.header.started)
    )
}

/// The recorded server's command line (or URL), quoted for the reader.
fn recorded_from(trace: &Trace) -> String {
    let server = &trace.header.server;
    if let Some(argv) = &server.argv {
        let words: Vec<String> = argv
            .iter()
            .map(|a| {
                if a.contains(char::is_whitespace) || a.is_empty() {
                    format!("'{a}'")
                } else {
                    a.clone()
                }
            })
            .collect();
        return format!("`{}`", words.join(" "));
    }
    server
        .url
        .as_ref()
        .map_or_else(|| "an unnamed server".into(), |u| format!("<{u}>"))
}

/// The day of an RFC 3339 time (`2026-12-06T05:20:11Z` → `2026-12-06`).
fn day(started: &str) -> &str {
    started.split_once('T').map_or(started, |(day, _)| day)
}

#[cfg(test)]
mod tests;
