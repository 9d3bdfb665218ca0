//! The HTTP channels of a case as data: what opened each one, its response head, what came
//! on it and how it ended; and where a client stands after a 404 for a forgotten session.
//! The engine fills them; the HTTP rules judge them.

use crate::exchange::{Head, StreamEnd};
use std::time::Instant;

/// What opened a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// A request of the harness; its ledger key.
    Request(String),
    /// A notification: its method, and for a cancel the ledger key of the request it names.
    Notification {
        /// The method.
        method: String,
        /// For `notifications/cancelled` with a well-formed `requestId`: that request's key.
        cancels: Option<String>,
    },
    /// The harness's answer to one of the target's requests.
    Response,
    /// A body that is no JSON-RPC message (a case testing malformed input).
    Other,
    /// A GET stream (`! listen`).
    Listen,
    /// A DELETE of a session (`! delete-session`).
    Delete,
}

impl Opened {
    /// Whether the POST carried only a notification or a response, which gets `202` (HTTP-07).
    pub fn wants_accepted(&self) -> bool {
        matches!(self, Opened::Notification { .. } | Opened::Response)
    }
}

/// One HTTP channel of a case.
#[derive(Debug, Clone)]
pub struct Stream {
    /// The transcript index of what opened it.
    pub entry: usize,
    /// When it was opened.
    pub sent: Instant,
    /// What opened it.
    pub opened: Opened,
    /// The session (index) it belongs to.
    pub session: usize,
    /// The response head and when it came.
    pub head: Option<(Instant, Head)>,
    /// Messages that came on it.
    pub messages: u32,
    /// How it ended, once it did.
    pub end: Option<StreamEnd>,
    /// Body bytes that came on it.
    pub bytes: u64,
    /// The statuses the case expects (`! status`); the standing rules leave such a status to
    /// the case.
    pub expected: Option<Vec<String>>,
    /// The status the diff expects on the line that opened it.
    pub shown_status: Option<String>,
    /// The start of a body that carried no message.
    pub body: Option<String>,
    /// The line that opened it, as the diff shows it.
    pub base: String,
}

impl Stream {
    /// Whether the target has shown it received this request: a head, a message on its
    /// stream, or its end.
    pub fn arrived(&self) -> bool {
        self.head.is_some() || self.messages > 0 || self.end.is_some()
    }

    /// Whether it was cut off or refused before its response could come.
    pub fn dead_end(&self) -> Option<String> {
        if let Some((_, head)) = &self.head {
            // An error status's JSON body may be the answer (the stateless era's errors, 400
            // with -32020 and the like): it is dead once it ended without one.
            let may_answer = head.content_type.as_deref() == Some("application/json");
            if may_answer && self.end.is_none() {
                return None;
            }
            if !(200..300).contains(&head.code) {
                let body = self
                    .body
                    .as_deref()
                    .map(|b| format!(": {}", b.chars().take(160).collect::<String>()))
                    .unwrap_or_default();
                return Some(format!("got HTTP {}{body}", head.summary()));
            }
        }
        match &self.end {
            Some(StreamEnd::Complete) if self.head.is_some() => {
                Some("ended without it".to_string())
            }
            Some(end) => Some(end.to_string()),
            None => None,
        }
    }
}

/// Where a client stands after the harness answered 404 for a session it forgot.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum NotFound {
    /// No such 404 is pending.
    #[default]
    Clear,
    /// A 404 came and the client has not yet started a new session.
    Awaiting,
    /// The client went on without a new session (reported once).
    Reported,
}
