//! The sessions a case holds over HTTP and the requests it sends in them: which session a
//! POST belongs to, the headers it carries (session id, protocol version, the stateless era's
//! mirrors of the body), and what the harness learns from each response.

use super::super::http_headers;
use super::super::http_stream::{self, describe};
use super::Http;
use crate::era::ProtocolVersion;
use crate::transport::{Channel, Event, HttpSteps, StreamEnd};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request};
use std::time::Instant;

/// One MCP session the case holds.
#[derive(Debug, Clone)]
pub(super) struct Session {
    /// The name the case gives it (`main` for the first).
    pub(super) name: String,
    /// The `Mcp-Session-Id` the server assigned, if it did.
    pub(super) id: Option<HeaderValue>,
    /// The protocol version agreed in it.
    pub(super) version: Option<String>,
}

impl Http {
    /// The index of the session a channel belongs to (0 is `main`).
    pub fn session_index(&self, channel: Channel) -> usize {
        self.session_of.get(&channel).copied().unwrap_or(0)
    }

    /// The index of the current session.
    pub fn current_session(&self) -> usize {
        self.current
    }

    /// The `MCP-Protocol-Version` of the handshake era (HTTP-18): the agreed version, once
    /// it has one. A stateless session has none to send on a message outside its era (a
    /// legacy `initialize`, LIF-14).
    pub(super) fn version_header(session: &Session) -> Option<HeaderValue> {
        let version = session
            .version
            .as_deref()
            .filter(|v| !http_headers::is_stateless(v))?;
        // A version the harness does not know is sent as agreed: the server chose it.
        let known = ProtocolVersion::parse(version);
        if known.is_some_and(|v| !v.has_version_header()) {
            return None;
        }
        HeaderValue::from_str(version).ok()
    }

    pub(super) fn next_channel(&mut self, method: &Method) -> Channel {
        let slot = match *method {
            Method::GET => 1,
            Method::DELETE => 2,
            _ => 0,
        };
        self.counts[slot] += 1;
        let n = self.counts[slot];
        match slot {
            1 => Channel::Get(n),
            2 => Channel::Delete(n),
            _ => Channel::Post(n),
        }
    }

    /// Starts one request of the current session and a task that reads its response.
    pub(super) fn request(&mut self, method: Method, body: Option<&[u8]>) -> Channel {
        let channel = self.next_channel(&method);
        let session = self.sessions[self.current].clone();
        // The stateless era mirrors the body into headers and has no sessions (HTTP-19).
        let stateless = http_headers::stateless(session.version.as_deref(), body);
        let headers = self.headers(channel, &method, &session, body, stateless.as_deref());
        let mut builder = Request::builder().method(method).uri(self.url.clone());
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        // In the stateless era an error status of a request's POST carries the JSON-RPC error
        // that answers it (400 with -32020, 404 with -32601, …).
        let errors_answer = body.is_some_and(http_headers::is_request)
            && (stateless.is_some()
                || session
                    .version
                    .as_deref()
                    .is_some_and(http_headers::is_stateless));
        let body = Full::new(Bytes::copy_from_slice(body.unwrap_or_default()));
        let request = builder.body(body).expect("a request from valid parts");
        self.read_response(channel, request, errors_answer);
        self.session_of.insert(channel, self.current);
        channel
    }

    /// The headers of the request on `channel`: `Accept`, the body's type, then the session
    /// id and version header, or the stateless era's `mirrored` ones, then what a `! header`
    /// step set or removed. What the case may care about is kept for the transcript.
    fn headers(
        &mut self,
        channel: Channel,
        method: &Method,
        session: &Session,
        body: Option<&[u8]>,
        mirrored: Option<&[(HeaderName, HeaderValue)]>,
    ) -> Vec<(HeaderName, HeaderValue)> {
        let accept = if method == Method::GET {
            "text/event-stream"
        } else {
            "application/json, text/event-stream"
        };
        let mut headers: Vec<(HeaderName, HeaderValue)> =
            vec![(hyper::header::ACCEPT, HeaderValue::from_static(accept))];
        if body.is_some() {
            headers.push((
                hyper::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ));
        }
        match mirrored {
            Some(mirrored) => headers.extend(mirrored.iter().cloned()),
            None => {
                if let Some(id) = session.id.clone() {
                    headers.push((HeaderName::from_static("mcp-session-id"), id));
                }
                if let Some(version) = Self::version_header(session) {
                    headers.push((HeaderName::from_static("mcp-protocol-version"), version));
                }
            }
        }
        let mut shown = vec![];
        for (name, value) in self.next_headers.drain(..) {
            headers.retain(|(n, _)| *n != name);
            match value {
                Some(value) => headers.push((name, value)),
                None => shown.push(format!("no {}", http_headers::display_name(name.as_str()))),
            }
        }
        let set_by_case = |name: &HeaderName| !matches!(name.as_str(), "accept" | "content-type");
        for (name, value) in headers.iter().filter(|(n, _)| set_by_case(n)) {
            shown.push(format!(
                "{}: {}",
                http_headers::display_name(name.as_str()),
                String::from_utf8_lossy(value.as_bytes())
            ));
        }
        shown.sort();
        if !shown.is_empty() {
            self.shown_headers.insert(channel, shown.join(", "));
        }
        headers
    }

    /// Sends `request` and reads its response on a task of its own, which reports on
    /// `channel` (with `errors_answer`, the JSON body of a 4xx is a message too).
    fn read_response(
        &mut self,
        channel: Channel,
        request: Request<Full<Bytes>>,
        errors_answer: bool,
    ) {
        let sent = Instant::now();
        let response = self.client.request(request);
        let sink = self.sink.clone();
        let task = tokio::spawn(async move {
            match response.await {
                Ok(response) => {
                    http_stream::read(channel, response, sink, errors_answer, sent).await
                }
                Err(e) => {
                    let end = StreamEnd::Broken(describe(&e));
                    let closed = Event::Closed {
                        channel,
                        end,
                        bytes: 0,
                    };
                    let _ = sink.send((Instant::now(), closed)).await;
                }
            }
        });
        self.tasks.insert(channel, task.abort_handle());
    }

    /// What the transport learns from a response head: the session id the server assigned
    /// with its answer to `initialize` (a server may put one on other responses too, such as
    /// a 400 for a request without a session; that one is not the session's).
    pub(super) fn learn(&mut self, event: &Event) {
        match event {
            Event::Status { channel, head } => {
                if !self.initializing.remove(channel) {
                    return;
                }
                let index = self.session_index(*channel);
                let session = &mut self.sessions[index];
                if session.id.is_none() {
                    session.id = head
                        .session
                        .as_deref()
                        .and_then(|raw| HeaderValue::from_bytes(raw).ok());
                }
            }
            Event::Closed { channel, .. } => {
                self.tasks.remove(channel);
            }
            _ => {}
        }
    }

    /// A connection was refused: the server stopped listening. Reported once, as the end of
    /// the target's output.
    pub(super) fn refused(&mut self, event: &Event) -> bool {
        let refused = matches!(event, Event::Closed { end: StreamEnd::Broken(why), .. } if why.contains("refused"));
        refused && !std::mem::replace(&mut self.refused, true)
    }
}

impl HttpSteps for Http {
    fn switch_session(&mut self, name: &str) -> bool {
        if let Some(index) = self.sessions.iter().position(|s| s.name == name) {
            self.current = index;
            return false;
        }
        self.sessions.push(Session {
            name: name.to_string(),
            id: None,
            version: None,
        });
        self.current = self.sessions.len() - 1;
        true
    }

    fn session_name(&self) -> &str {
        &self.sessions[self.current].name
    }

    fn has_session_id(&self) -> bool {
        self.sessions[self.current].id.is_some()
    }

    fn add_header(&mut self, name: &str, value: &str) -> Result<(), String> {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not an HTTP header name"))?;
        let value = if value.is_empty() {
            None
        } else {
            Some(
                HeaderValue::from_str(value)
                    .map_err(|_| format!("`{value}` is not a valid value of header {name}"))?,
            )
        };
        self.next_headers.push((name, value));
        Ok(())
    }

    fn sends_header(&self, name: &str) -> bool {
        let session = &self.sessions[self.current];
        let stateless = session
            .version
            .as_deref()
            .is_some_and(http_headers::is_stateless);
        let name = name.to_ascii_lowercase();
        if stateless {
            return matches!(
                name.as_str(),
                http_headers::PROTOCOL_VERSION
                    | http_headers::METHOD
                    | http_headers::NAME
                    | "accept"
                    | "content-type"
            );
        }
        match name.as_str() {
            "mcp-session-id" => session.id.is_some(),
            "mcp-protocol-version" => Self::version_header(session).is_some(),
            "accept" | "content-type" => true,
            _ => false,
        }
    }

    fn shown_headers(&self, channel: Channel) -> Option<&str> {
        self.shown_headers.get(&channel).map(String::as_str)
    }

    fn listen(&mut self) -> Channel {
        self.request(Method::GET, None)
    }

    fn delete_session(&mut self) -> Channel {
        self.request(Method::DELETE, None)
    }
}
