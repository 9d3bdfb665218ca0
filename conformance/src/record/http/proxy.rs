//! One request through the proxy: recorded as the client sent it (its body before it is
//! forwarded, so the server had it no earlier than its stamp), forwarded with the same
//! method, path and headers (but the hop-by-hop ones, and `Host`, which names the server),
//! and answered with the server's status, headers and streamed body.

use super::tee::{self, Tee};
use crate::record::Recording;
use crate::trace::{EndBy, Event, Party};
use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONNECTION, HOST};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::collections::BTreeSet;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What the proxy answers with: the server's streamed body, or its own short text.
pub(super) type Answer = Response<Either<Tee, Full<Bytes>>>;

/// Headers that describe one connection, not the message: never forwarded (RFC 9110 7.6.1).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The proxy: the trace, the server's origin and the exchanges whose response is open.
pub(super) struct Proxy {
    recording: Arc<Recording>,
    client: Client<HttpConnector, Full<Bytes>>,
    /// The server's scheme and authority (`http://127.0.0.1:8000`).
    origin: String,
    authority: HeaderValue,
    next: AtomicU64,
    open: Arc<Mutex<BTreeSet<u64>>>,
}

impl Proxy {
    pub(super) fn new(recording: Arc<Recording>, to: &Uri) -> Proxy {
        let authority = to.authority().map_or("", |a| a.as_str());
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Proxy {
            recording,
            client: Client::builder(TokioExecutor::new()).build(connector),
            origin: format!("http://{authority}"),
            authority: HeaderValue::from_str(authority).unwrap_or(HeaderValue::from_static("")),
            next: AtomicU64::new(0),
            open: Arc::default(),
        }
    }

    /// Records, forwards and answers one request. A client that goes away before the
    /// server's answer began (hyper then drops this future, and the request to the server
    /// with it) ended the exchange: recorded so.
    pub(super) async fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
    ) -> Result<Answer, Infallible> {
        let exchange = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        self.open().insert(exchange);
        let mut waiting = Waiting {
            proxy: &self,
            exchange,
            answered: false,
        };
        let answer = self.forward(exchange, request).await;
        waiting.answered = true;
        Ok(answer)
    }

    fn open(&self) -> std::sync::MutexGuard<'_, BTreeSet<u64>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Ends an exchange in the trace, unless it was ended already (by the recorder's stop).
    fn end(&self, exchange: u64, by: EndBy, error: Option<String>) {
        if self.open().remove(&exchange) {
            self.recording.event(&Event::End {
                exchange,
                by,
                error,
            });
        }
    }

    async fn forward(&self, exchange: u64, request: Request<Incoming>) -> Answer {
        let (parts, body) = request.into_parts();
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        let redaction = self.recording.redaction();
        self.recording.event(&Event::Request {
            exchange,
            method: parts.method.to_string(),
            path: path.clone(),
            headers: redaction.headers(&parts.headers),
        });
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                let error = format!("the client's request body could not be read: {e}");
                return self.fail(exchange, StatusCode::BAD_REQUEST, error);
            }
        };
        self.recording.body(Party::Client, exchange, &body);
        let target = format!("{}{path}", self.origin);
        let Ok(mut upstream) = Request::builder()
            .method(parts.method)
            .uri(&target)
            .body(Full::new(body))
        else {
            let error = format!("the request cannot be forwarded to {target}");
            return self.fail(exchange, StatusCode::BAD_GATEWAY, error);
        };
        *upstream.headers_mut() = forwarded(&parts.headers);
        upstream.headers_mut().insert(HOST, self.authority.clone());
        let response = match self.client.request(upstream).await {
            Ok(response) => response,
            Err(e) => {
                let error = format!("the server at {} could not be reached: {e}", self.origin);
                return self.fail(exchange, StatusCode::BAD_GATEWAY, error);
            }
        };
        let (parts, body) = response.into_parts();
        self.recording.event(&Event::Response {
            exchange,
            status: parts.status.as_u16(),
            headers: redaction.headers(&parts.headers),
        });
        let sse = parts
            .headers
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
        let tee = tee::start(
            body,
            Arc::clone(&self.recording),
            exchange,
            sse,
            Arc::clone(&self.open),
        );
        let mut answer = Response::new(Either::Left(tee));
        *answer.status_mut() = parts.status;
        *answer.headers_mut() = forwarded(&parts.headers);
        answer
    }

    /// Ends an exchange the proxy could not complete: recorded as an error, answered with
    /// `status` and the sentence.
    fn fail(&self, exchange: u64, status: StatusCode, error: String) -> Answer {
        self.end(exchange, EndBy::Error, Some(error.clone()));
        let mut answer = Response::new(Either::Right(Full::new(Bytes::from(format!(
            "conformance record: {error}\n"
        )))));
        *answer.status_mut() = status;
        answer
    }

    /// The recorder stops: every exchange still open ends, as an error, and a note says why.
    pub(super) fn stop(&self, signal: &str) {
        let open = std::mem::take(&mut *self.open());
        for exchange in open {
            self.recording.event(&Event::End {
                exchange,
                by: EndBy::Error,
                error: Some(format!(
                    "the recorder was stopped by {signal} while the response was open"
                )),
            });
        }
        self.recording
            .note(&format!("the recorder was stopped by {signal}"));
    }
}

/// An exchange whose answer has not begun: dropped unanswered, the client went away first.
struct Waiting<'a> {
    proxy: &'a Proxy,
    exchange: u64,
    answered: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.proxy.end(self.exchange, EndBy::Client, None);
        }
    }
}

/// The headers to forward: all but the hop-by-hop ones and those `Connection` names.
fn forwarded(headers: &HeaderMap) -> HeaderMap {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    let mut out = headers.clone();
    for name in HOP_BY_HOP {
        out.remove(name);
    }
    for name in named {
        out.remove(name);
    }
    out
}
