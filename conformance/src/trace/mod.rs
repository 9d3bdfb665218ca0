//! Trace files: what `conformance record` writes while it sits between a real client and a
//! real server, and what `conformance check` and `conformance case from-trace` read. The
//! format (version 1) is defined in docs/traces.md; these types are that page as data, so
//! the writer and the readers cannot drift apart. A trace is model, not behaviour: nothing
//! here judges a message.

mod read;
mod write;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use read::TraceError;
pub use write::TraceWriter;

/// The `trace` field of every header.
pub const FORMAT: &str = "mcp-conformance";
/// The format version this module writes and reads (docs/traces.md).
pub const VERSION: u64 = 1;
/// What a redacted value is replaced by, in a header and at a JSON pointer alike.
pub const REDACTED: &str = "[redacted]";

/// Header names whose values are secrets wherever they appear: never written to a trace.
const ALWAYS_REDACTED: &[&str] = &[
    "authorization",
    "cookie",
    "set-cookie",
    "proxy-authorization",
];

/// Whether a header's value is always redacted (the name in any case).
#[must_use]
pub fn always_redacted(header_name: &str) -> bool {
    ALWAYS_REDACTED
        .iter()
        .any(|name| name.eq_ignore_ascii_case(header_name))
}

/// How the recorded session travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// The client started the server (through the recorder) and spoke on its stdin/stdout.
    Stdio,
    /// Streamable HTTP through the recorder's reverse proxy.
    Http,
}

/// Which side wrote something: the `from` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Party {
    /// The MCP client.
    Client,
    /// The MCP server.
    Server,
}

/// Who ended an HTTP exchange's response: the `by` field of an `end` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndBy {
    /// The server finished the body.
    Server,
    /// The client closed the connection or stream first (in 2026-07-28, a cancel).
    Client,
    /// The exchange failed; the event's `error` says how.
    Error,
}

/// What was recorded: the header's `server`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    /// stdio: the server's command line, as the recorder started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// HTTP: the server's URL the recorder forwarded to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP: the address the recorder served the client on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
}

/// A trace's first line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// How the session travelled.
    pub transport: Transport,
    /// Wall-clock time the recording began, RFC 3339 (for people; no verdict reads it).
    pub started: String,
    /// The program that wrote the trace and its version (`conformance 0.1.0`).
    pub recorder: String,
    /// What was recorded.
    pub server: Recorded,
    /// The JSON pointers and `header:name`s that `--redact` named.
    #[serde(default)]
    pub redacted: Vec<String>,
}

/// HTTP headers as recorded: lower-case names to values (a repeated header joined by `", "`).
pub type Headers = BTreeMap<String, String>;

/// One thing the recorder saw (docs/traces.md, "Events").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum Event {
    /// One JSON-RPC message as written: a stdio line, a POST body's element, an SSE event's data.
    Message {
        /// Who wrote it.
        from: Party,
        /// The exact text (lossily decoded when it was not UTF-8: then `lossy`).
        text: String,
        /// HTTP: the exchange it travelled in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exchange: Option<u64>,
        /// HTTP: the SSE event's `id`, when it had one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sse_id: Option<String>,
        /// Whether the bytes were not valid UTF-8 and `text` replaced some of them.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        lossy: bool,
    },
    /// One line the server wrote on stderr (stdio).
    Stderr {
        /// The line, without its newline.
        text: String,
    },
    /// stdio: the client closed the server's stdin, or the server closed its stdout.
    Closed {
        /// Whose side was closed.
        from: Party,
    },
    /// stdio: the server process ended.
    Exit {
        /// Its exit code, when it exited.
        code: Option<i32>,
        /// The signal that ended it, when one did.
        signal: Option<i32>,
    },
    /// HTTP: the client sent a request.
    Request {
        /// Numbers the request/response pair from 1.
        exchange: u64,
        /// `POST`, `GET`, `DELETE`…
        method: String,
        /// The request's path and query.
        path: String,
        /// Its headers.
        headers: Headers,
    },
    /// HTTP: the server's status and headers.
    Response {
        /// The exchange answered.
        exchange: u64,
        /// The status code.
        status: u16,
        /// Its headers.
        headers: Headers,
    },
    /// HTTP: the exchange's response ended.
    End {
        /// The exchange.
        exchange: u64,
        /// Who ended it.
        by: EndBy,
        /// With `by: "error"`, what failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Something the recorder itself says. Never judged.
    Note {
        /// The sentence.
        text: String,
    },
}

/// An event with when it happened and where it is in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamped {
    /// Time since the recording began (monotonic; microsecond resolution).
    pub at: Duration,
    /// The event's line in the file, from 1 (the header is line 1).
    pub line: usize,
    /// What happened.
    pub event: Event,
}

/// A trace file, read.
#[derive(Debug, Clone)]
pub struct Trace {
    /// Where it was read from (for `path:line` in whatever is said about it).
    pub path: PathBuf,
    /// Its first line.
    pub header: Header,
    /// Every later line, in file order.
    pub events: Vec<Stamped>,
    /// The line number of a last line cut short (a crash while it was written): everything
    /// before it was read; it is reported, not fatal.
    pub cut: Option<usize>,
}
