//! Why `conformance init` could not inspect a server: it could not be started or opened, or
//! its tools could not be listed, or `--try` named a tool it does not have. Each message is
//! what the command line prints after `error: `. (A candidate that fails its check is no
//! error: it is a role's verdict, in the drafted file.)

use crate::discovery::ListError;
use crate::error::StartError;
use crate::transport::SendError;
use std::process::ExitStatus;
use std::time::Duration;

/// Why [`super::inspect`] found nothing to draft from.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// No session could be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The server's tools could not be listed.
    #[error("cannot list the tools: {0}")]
    ListTools(#[source] ListError),
    /// `--try` named a tool the server does not list.
    #[error("--try {tool}: the server lists no tool of that name (nothing was called); its tools: {}", .tools.join(", "))]
    UnknownTry {
        /// The tool, as given.
        tool: String,
        /// The tools the server lists.
        tools: Vec<String>,
    },
}

/// Why [`super::session::open`] opened no session.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The target could not be started or reached.
    #[error(transparent)]
    Start(#[from] StartError),
    /// `initialize` got no answer; with the end of the target's stderr.
    #[error("initialize: {why}{}", stderr_tail(.stderr))]
    Initialize {
        /// What came instead of the answer.
        why: OpeningError,
        /// The last lines the target wrote to stderr.
        stderr: Vec<String>,
    },
    /// The target stopped reading after it answered `initialize`.
    #[error("it stopped reading after initialize: {0:?}")]
    StoppedReading(SendError),
    /// Neither `initialize` nor `server/discover` agreed on a version the harness knows.
    #[error("initialize at {newest} was answered with {handshake} and server/discover with {discover}: no protocol version the harness knows")]
    NoVersion {
        /// The version `initialize` offered.
        newest: &'static str,
        /// The answer to `initialize`, short.
        handshake: String,
        /// The answer to `server/discover`, short, or what came instead.
        discover: String,
    },
}

/// What came instead of the answer to an opening request.
#[derive(Debug, thiserror::Error)]
pub enum OpeningError {
    /// The request could not be sent.
    #[error("it did not read the request ({0:?})")]
    Unread(SendError),
    /// The target exited first.
    #[error("it exited ({0}) before answering")]
    Exited(ExitStatus),
    /// The target's output ended first (its exit status unknown).
    #[error("its output ended before it answered")]
    OutputEnded,
    /// Nothing in time.
    #[error("no answer within {0:?}")]
    NoAnswer(Duration),
    /// A line on stdout that is not JSON (its first 200 characters).
    #[error("it wrote a line to stdout that is not JSON: `{0}`")]
    NotJson(String),
}

/// `; its stderr ends:` and the lines, indented; nothing when there are none.
fn stderr_tail(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends:\n  {}", lines.join("\n  "))
    }
}
