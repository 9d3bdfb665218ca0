//! A trace's transport events as the live transcript's: each HTTP exchange a channel (`POST
//! n`, `GET n`, `DELETE n`, numbered by the trace's exchange) in a session (by its
//! `mcp-session-id`: the first id seen, or none, is session 0 and the first scope, as in a
//! live run), and what the recorder saw of it as a transport entry's text.

use crate::exchange::Channel;
use crate::trace::{EndBy, Event, Headers};
use std::collections::HashMap;

/// What the check knows of each HTTP exchange.
#[derive(Debug, Default)]
pub struct Wire {
    exchanges: HashMap<u64, Exchange>,
    /// The session ids seen, in order; the first is session 0.
    sessions: Vec<String>,
}

/// One HTTP request and its response.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The channel its messages travelled on.
    pub channel: Channel,
    /// The session it belongs to (0 is the first, and a request without a session id).
    pub session: usize,
    /// The status the server answered with, once it did.
    pub status: Option<u16>,
    /// Who ended its response, once it ended.
    pub end: Option<EndBy>,
}

impl Wire {
    /// The channel of a message of `exchange` (stdio for none).
    pub fn channel(&self, exchange: Option<u64>) -> Channel {
        exchange.map_or(Channel::Stdio, |n| {
            self.exchanges
                .get(&n)
                .map_or(Channel::Post(number(n)), |e| e.channel)
        })
    }

    /// The session a message of `exchange` belongs to.
    pub fn session(&self, exchange: Option<u64>) -> usize {
        exchange
            .and_then(|n| self.exchanges.get(&n))
            .map_or(0, |e| e.session)
    }

    /// The scope of ids in the session of `exchange`: `None` for the first session.
    pub fn scope(&self, exchange: Option<u64>) -> Option<&str> {
        match self.session(exchange) {
            0 => None,
            n => self.sessions.get(n).map(String::as_str),
        }
    }

    /// Exchange `n`, once its request was seen.
    pub fn exchange(&self, n: u64) -> Option<&Exchange> {
        self.exchanges.get(&n)
    }

    /// The channel an HTTP event is about (stdio for any other event).
    pub fn channel_of(&self, event: &Event) -> Channel {
        match event {
            Event::Request { exchange, .. }
            | Event::Response { exchange, .. }
            | Event::End { exchange, .. } => self.channel(Some(*exchange)),
            _ => Channel::Stdio,
        }
    }

    /// Takes in an HTTP event; returns what a transcript entry says of it.
    pub fn event(&mut self, event: &Event) -> String {
        match event {
            Event::Request {
                exchange,
                method,
                path,
                headers,
            } => {
                let session = self.session_of(headers);
                let channel = match method.as_str() {
                    "GET" => Channel::Get(number(*exchange)),
                    "DELETE" => Channel::Delete(number(*exchange)),
                    _ => Channel::Post(number(*exchange)),
                };
                self.exchanges.insert(
                    *exchange,
                    Exchange {
                        channel,
                        session,
                        status: None,
                        end: None,
                    },
                );
                format!("{channel}: {method} {path}")
            }
            Event::Response {
                exchange,
                status,
                headers,
            } => {
                if let Some(e) = self.exchanges.get_mut(exchange) {
                    e.status = Some(*status);
                }
                let session = self.session_of(headers);
                if let Some(e) = self.exchanges.get_mut(exchange) {
                    e.session = e.session.max(session);
                }
                let kind = headers
                    .get("content-type")
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default();
                format!("{}: {status}{kind}", self.channel(Some(*exchange)))
            }
            Event::End {
                exchange,
                by,
                error,
            } => {
                if let Some(e) = self.exchanges.get_mut(exchange) {
                    e.end = Some(*by);
                }
                let channel = self.channel(Some(*exchange));
                match by {
                    EndBy::Server => format!("{channel}: the server ended the response"),
                    EndBy::Client => format!("{channel}: the client closed the stream"),
                    EndBy::Error => format!(
                        "{channel}: the exchange failed: {}",
                        error.as_deref().unwrap_or("no reason recorded")
                    ),
                }
            }
            _ => String::new(),
        }
    }

    /// The session a request or response with these headers belongs to.
    fn session_of(&mut self, headers: &Headers) -> usize {
        let Some(id) = headers.get("mcp-session-id") else {
            return 0;
        };
        if let Some(n) = self.sessions.iter().position(|s| s == id) {
            return n;
        }
        self.sessions.push(id.clone());
        self.sessions.len() - 1
    }
}

/// An exchange's number as a channel's.
fn number(exchange: u64) -> u32 {
    u32::try_from(exchange).unwrap_or(u32::MAX)
}

/// How a server process ended, in words: `exited with code 1`, `was killed by signal 9`.
pub fn exit(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "exited".to_string(),
    }
}
