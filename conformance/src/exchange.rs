//! What travels between the harness and a target, as data: the channel a message went on,
//! an HTTP response's head and how its stream ended, a client's HTTP request as the harness's
//! server saw it, and the target's log. Transcripts, rules and reports are made of these; the
//! transports ([`crate::transport`]) produce them and re-export them where they are used.

use serde_json::Value;
use std::collections::VecDeque;
use std::time::Duration;

/// Where a message travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Channel {
    /// The one ordered stream each way of a stdio connection.
    #[default]
    Stdio,
    /// The n-th HTTP POST (from 1) and the response stream it opened.
    Post(u32),
    /// The n-th HTTP GET stream (from 1).
    Get(u32),
    /// The n-th HTTP DELETE of a session (from 1).
    Delete(u32),
    /// The stdio of the n-th server process a client started (from 2; the first is `Stdio`).
    Process(u32),
}

impl Channel {
    /// The stdio channel of the n-th server process a client started (from 1).
    pub fn of_process(n: u32) -> Channel {
        if n <= 1 {
            Channel::Stdio
        } else {
            Channel::Process(n)
        }
    }
}

impl std::fmt::Display for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Channel::Stdio => f.write_str("stdio"),
            Channel::Post(n) => write!(f, "POST {n}"),
            Channel::Get(n) => write!(f, "GET {n}"),
            Channel::Delete(n) => write!(f, "DELETE {n}"),
            Channel::Process(n) => write!(f, "stdio of server process {n}"),
        }
    }
}

/// The head of an HTTP response, as far as verdicts need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The status code.
    pub code: u16,
    /// The `Content-Type`, lower case, without parameters.
    pub content_type: Option<String>,
    /// The raw bytes of the `Mcp-Session-Id` header, if any.
    pub session: Option<Vec<u8>>,
    /// Where a redirect points.
    pub location: Option<String>,
}

impl Head {
    /// `200 text/event-stream`, `202`, `403 text/plain`, `302 to /elsewhere`.
    pub fn summary(&self) -> String {
        let mut text = self.code.to_string();
        if let Some(kind) = &self.content_type {
            text.push(' ');
            text.push_str(kind);
        }
        if let Some(location) = &self.location {
            text.push_str(" to ");
            text.push_str(location);
        }
        text
    }
}

/// How a channel's stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// The response ended normally.
    Complete,
    /// The harness closed it (a cancel by closing, or a disconnect).
    Aborted,
    /// The connection failed or broke; why.
    Broken(String),
    /// It carried more than the harness accepts (the limit, in bytes) and was cut.
    TooLarge(usize),
}

impl std::fmt::Display for StreamEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamEnd::Complete => f.write_str("ended"),
            StreamEnd::Aborted => f.write_str("closed by the harness"),
            StreamEnd::Broken(why) => write!(f, "broke: {why}"),
            StreamEnd::TooLarge(limit) => {
                write!(f, "cut after {} MiB, the harness's limit", limit >> 20)
            }
        }
    }
}

/// How many stderr lines are kept for the transcript; older ones are counted, not kept.
pub const LOG_KEPT: usize = 200;

/// What the target printed on stderr, bounded (the last [`LOG_KEPT`] lines with their times;
/// the count goes on), and what the harness noted about it on the way (relay events, adapter
/// output), in the same timeline.
#[derive(Debug, Default, Clone)]
pub struct TargetLog {
    /// Kept lines with the time since the target started.
    pub lines: VecDeque<(Duration, String)>,
    /// Every line seen, kept or not.
    pub total: usize,
}

impl TargetLog {
    /// Adds a line seen `at` after the start.
    pub fn push(&mut self, at: Duration, line: String) {
        self.total += 1;
        if self.lines.len() == LOG_KEPT {
            self.lines.pop_front();
        }
        self.lines.push_back((at, line));
    }

    /// The last `n` kept lines.
    pub fn tail(&self, n: usize) -> Vec<String> {
        let skip = self.lines.len().saturating_sub(n);
        self.lines
            .iter()
            .skip(skip)
            .map(|(_, l)| l.clone())
            .collect()
    }
}

/// What the harness's HTTP server saw of one request a client made, and what it answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientRequest {
    /// The channel the request opened (`Post(n)`, `Get(n)`, `Delete(n)`).
    pub channel: Option<Channel>,
    /// `POST`, `GET`, `DELETE`, …
    pub verb: String,
    /// The path it was made to.
    pub path: String,
    /// The `Accept` header.
    pub accept: Option<String>,
    /// The `Mcp-Session-Id` header.
    pub session: Option<String>,
    /// The `MCP-Protocol-Version` header.
    pub version: Option<String>,
    /// The `Last-Event-ID` header.
    pub last_event_id: Option<String>,
    /// The `Mcp-Method` header (2026-07-28).
    pub mcp_method: Option<String>,
    /// The `Mcp-Name` header (2026-07-28), as sent (plain or `=?base64?…?=`).
    pub mcp_name: Option<String>,
    /// The JSON-RPC method a POST carried (`None` for a response or an unreadable body).
    pub method: Option<String>,
    /// Whether the POST carried a request (a method and an id).
    pub is_request: bool,
    /// The request's `_meta` protocol version (2026-07-28), as sent.
    pub stamped: Option<Value>,
    /// What `Mcp-Name` must mirror: `params.name` of `tools/call` and `prompts/get`,
    /// `params.uri` of `resources/read`.
    pub named: Option<String>,
    /// The status the harness answered with.
    pub status: u16,
    /// The session id the harness minted on this request (an `initialize`).
    pub assigned: Option<String>,
    /// The session it carried had been ended by the client's own DELETE (so it got 404, and
    /// its message is still judged).
    pub deleted: bool,
}
