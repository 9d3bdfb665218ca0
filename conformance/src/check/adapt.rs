//! A trace's transport events as the live transcript's: each HTTP exchange a channel (`POST
//! n`, `GET n`, `DELETE n`, numbered by the trace's exchange) in a session, and what the
//! recorder saw of it as a transport entry's text.
//!
//! Sessions scope ids, as in a live run. Over stdio there is one. Over HTTP a recorder may
//! serve several clients, one after another or at once, so an exchange with an
//! `mcp-session-id` belongs to that id's session (the `initialize` whose answer gave the id
//! opened it), and one without belongs to a session of its own: nothing on the wire says
//! which client sent it (2026-07-28 requests, a server without sessions). Its answer and its
//! progress come on its own stream, so they are found all the same.

use crate::exchange::Channel;
use crate::trace::{EndBy, Event};
use std::collections::HashMap;

/// What the check knows of each HTTP exchange.
#[derive(Debug, Default)]
pub struct Wire {
    exchanges: HashMap<u64, Exchange>,
    /// The session each `mcp-session-id` stands for.
    sids: HashMap<String, usize>,
    /// How many sessions are numbered (from 1; 0 is stdio's one).
    sessions: usize,
}

/// One HTTP request and its response.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The channel its messages travelled on.
    pub channel: Channel,
    /// The session it belongs to (from 1).
    pub session: usize,
    /// Its request carried an `mcp-session-id`.
    pub sid: bool,
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

    /// The scope of ids in the session of `exchange`: `None` on stdio, the session's number
    /// over HTTP.
    pub fn scope(&self, exchange: Option<u64>) -> Option<String> {
        match self.session(exchange) {
            0 => None,
            n => Some(n.to_string()),
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
                let sid = headers.get("mcp-session-id");
                let session = match sid {
                    Some(sid) => self.numbered(sid),
                    None => self.next_session(),
                };
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
                        sid: sid.is_some(),
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
                    // The answer to an `initialize` names the session it opened.
                    if let Some(sid) = headers.get("mcp-session-id").filter(|_| !e.sid) {
                        self.sids.entry(sid.clone()).or_insert(e.session);
                    }
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

    /// The session `sid` stands for, numbered when first seen.
    fn numbered(&mut self, sid: &str) -> usize {
        if let Some(n) = self.sids.get(sid) {
            return *n;
        }
        let n = self.next_session();
        self.sids.insert(sid.to_string(), n);
        n
    }

    /// A new session's number.
    fn next_session(&mut self) -> usize {
        self.sessions += 1;
        self.sessions
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
