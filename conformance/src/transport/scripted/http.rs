//! The HTTP half of a scripted target: which POST a message travels on, and the events a
//! real Streamable HTTP transport reports around it, so that the engine sees what it would
//! see of a real server (a head, messages on the request's stream, its end; `202` and an
//! empty body for a notification) or of a real client (what the harness's server saw of each
//! POST before its message).

use crate::transport::http_server::ClientRequest;
use crate::transport::{Channel, Event, Head, StreamEnd};
use serde_json::Value;
use std::collections::HashMap;

/// One POST of the harness to a scripted server.
#[derive(Debug)]
struct Post {
    /// The request it carried (its id and progress token), if it carried one.
    request: Option<Value>,
    /// Its head has come.
    head: bool,
    /// It has ended (answered, closed by the harness, or refused).
    ended: bool,
    /// Body bytes it carried.
    bytes: u64,
}

/// The harness's POSTs to a scripted server, in order.
#[derive(Debug, Default)]
pub(super) struct ServerPosts {
    posts: Vec<Post>,
}

/// The head of an SSE response.
fn sse() -> Head {
    Head {
        code: 200,
        content_type: Some("text/event-stream".into()),
        session: None,
        location: None,
    }
}

impl ServerPosts {
    /// The harness POSTs `message`: its channel, and the events that come when the server
    /// accepts what is no request (`202` and the end of an empty body).
    pub fn post(&mut self, message: Option<&Value>) -> (Channel, Vec<Event>) {
        let is_request =
            message.is_some_and(|m| m.get("method").is_some() && m.get("id").is_some());
        self.posts.push(Post {
            request: message.filter(|_| is_request).cloned(),
            head: !is_request,
            ended: !is_request,
            bytes: 0,
        });
        let channel = Channel::Post(self.posts.len() as u32);
        let events = if is_request {
            vec![]
        } else {
            let head = Head {
                code: 202,
                content_type: None,
                session: None,
                location: None,
            };
            vec![
                Event::Status { channel, head },
                Event::Closed {
                    channel,
                    end: StreamEnd::Complete,
                    bytes: 0,
                },
            ]
        };
        (channel, events)
    }

    fn post_mut(&mut self, channel: Channel) -> Option<&mut Post> {
        match channel {
            Channel::Post(n) => self.posts.get_mut(n.checked_sub(1)? as usize),
            _ => None,
        }
    }

    /// The head of a request's response, if it has not come yet.
    pub fn head(&mut self, channel: Channel) -> Option<Event> {
        let post = self.post_mut(channel).filter(|p| !p.head && !p.ended)?;
        post.head = true;
        Some(Event::Status {
            channel,
            head: sse(),
        })
    }

    /// The request a channel carried, while its stream is open.
    pub fn open_request(&self, channel: Channel) -> Option<&Value> {
        match channel {
            Channel::Post(n) => self
                .posts
                .get(n.checked_sub(1)? as usize)
                .filter(|p| !p.ended)?
                .request
                .as_ref(),
            _ => None,
        }
    }

    /// The harness closes a channel: false when it had ended already.
    pub fn abort(&mut self, channel: Channel) -> bool {
        match self.post_mut(channel) {
            Some(post) if !post.ended => {
                post.ended = true;
                true
            }
            _ => false,
        }
    }

    /// Where the server's `message` travels: on the stream of the request it answers (by id),
    /// or whose progress token it carries, else on the newest open one. `None` when that
    /// stream has ended (a real server could not write there).
    fn route(&self, message: &Value) -> Option<usize> {
        let is_response = message.get("method").is_none();
        let token = message.pointer("/params/progressToken");
        let of = |p: &Post, pointer: &str, value: Option<&Value>| {
            value.is_some() && p.request.as_ref().and_then(|r| r.pointer(pointer)) == value
        };
        let found = if is_response {
            self.posts
                .iter()
                .rposition(|p| of(p, "/id", message.get("id")))
        } else if token.is_some() {
            self.posts
                .iter()
                .rposition(|p| of(p, "/params/_meta/progressToken", token))
        } else {
            self.posts
                .iter()
                .rposition(|p| p.request.is_some() && !p.ended)
        };
        found.filter(|&i| !self.posts[i].ended)
    }

    /// The server writes `bytes` (`message`, parsed): the events that carry it, on its stream
    /// (the head first, if it has not come; the end after a response). Empty when its stream
    /// has ended.
    pub fn write(&mut self, message: Option<&Value>, bytes: Vec<u8>) -> Vec<Event> {
        let Some(index) = message.and_then(|m| self.route(m)) else {
            return vec![];
        };
        let channel = Channel::Post(index as u32 + 1);
        let mut events: Vec<Event> = self.head(channel).into_iter().collect();
        let post = &mut self.posts[index];
        post.bytes += bytes.len() as u64;
        events.push(Event::Message { channel, bytes });
        if message.is_some_and(|m| m.get("method").is_none()) {
            post.ended = true;
            events.push(Event::Closed {
                channel,
                end: StreamEnd::Complete,
                bytes: post.bytes,
            });
        }
        events
    }

    /// The server is gone: every open stream breaks.
    pub fn break_all(&mut self) -> Vec<Event> {
        let mut events = vec![];
        for (i, post) in self.posts.iter_mut().enumerate() {
            if !post.ended {
                post.ended = true;
                events.push(Event::Closed {
                    channel: Channel::Post(i as u32 + 1),
                    end: StreamEnd::Broken("connection reset".into()),
                    bytes: post.bytes,
                });
            }
        }
        events
    }
}

/// A scripted client's POSTs to the harness's server, and its session.
#[derive(Debug, Default)]
pub(super) struct ClientPosts {
    /// How many POSTs so far.
    count: u32,
    /// The request streams still open, by channel: the request's id.
    open: HashMap<Channel, Value>,
    /// The session id the harness's server gave, once it did.
    session: Option<String>,
    /// The version the harness agreed to, once it answered `initialize`.
    agreed: Option<String>,
    /// The channel of the client's `initialize`.
    initializing: Option<Channel>,
}

impl ClientPosts {
    /// The client POSTs `bytes` (`message`, parsed): what the harness's server saw of the
    /// request, then the message.
    pub fn post(&mut self, message: Option<&Value>, bytes: Vec<u8>) -> Vec<Event> {
        self.count += 1;
        let channel = Channel::Post(self.count);
        let method = message
            .and_then(|m| m.get("method"))
            .and_then(Value::as_str);
        let id = message.and_then(|m| m.get("id")).cloned();
        let is_request = method.is_some() && id.is_some();
        let mut seen = ClientRequest {
            channel: Some(channel),
            verb: "POST".into(),
            path: "/mcp".into(),
            accept: Some("application/json, text/event-stream".into()),
            session: self.session.clone(),
            version: self.agreed.clone(),
            method: method.map(str::to_string),
            is_request,
            status: if is_request { 200 } else { 202 },
            ..ClientRequest::default()
        };
        seen.named = message
            .filter(|_| method == Some("tools/call"))
            .and_then(|m| m.pointer("/params/name"))
            .and_then(Value::as_str)
            .map(str::to_string);
        if method == Some("initialize") && is_request {
            let minted = format!("scripted-session-{}", self.count);
            seen.assigned = Some(minted.clone());
            seen.session = None;
            self.session = Some(minted);
            self.initializing = Some(channel);
        }
        if let Some(id) = id.filter(|_| is_request) {
            self.open.insert(channel, id);
        }
        vec![
            Event::HttpRequest(Box::new(seen)),
            Event::Message { channel, bytes },
        ]
    }

    /// The harness sends `message` on `reply_to` (or, answering nothing, on the newest open
    /// stream): the channel the client reads it on, `None` when no stream is open.
    pub fn deliver(
        &mut self,
        message: Option<&Value>,
        reply_to: Option<Channel>,
    ) -> Option<Channel> {
        let channel = match reply_to {
            Some(channel) => channel,
            None => *self.open.keys().max_by_key(|c| match c {
                Channel::Post(n) => *n,
                _ => 0,
            })?,
        };
        self.open.get(&channel)?;
        let is_response =
            message.is_some_and(|m| m.get("method").is_none() && m.get("id").is_some());
        if is_response {
            self.open.remove(&channel);
            if self.initializing == Some(channel) {
                self.agreed = message
                    .and_then(|m| m.pointer("/result/protocolVersion"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
        }
        Some(channel)
    }
}
