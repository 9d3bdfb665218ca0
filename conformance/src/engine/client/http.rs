//! What the harness, as a client's Streamable HTTP server, keeps of the client's requests
//! between messages: the state the HTTP rules of `rules/client_http.rs` read and update.

use crate::facts::streams::NotFound;
use serde_json::Value;
use std::time::Duration;

/// What the client side of the harness knows about a client's HTTP requests.
#[derive(Debug, Default)]
pub struct HttpSide {
    /// Where the client stands after a 404 for a session the server forgot.
    pub not_found: NotFound,
    /// The harness forgot the session (`! expire-session`): a new one is no restart.
    pub expired: bool,
    /// Streams the harness closed without a cancel (`! disconnect`): the request's id and
    /// when.
    pub disconnected: Vec<(Value, Duration)>,
    /// GET requests: when (since the target started), and their `Last-Event-ID`.
    pub gets: Vec<(Duration, Option<String>)>,
    /// The request that got the 404 for a forgotten session, as it arrived: requests of that
    /// session arriving within the crossing grace after it were sent before the client could
    /// have read it.
    pub(crate) first_not_found: Option<super::crossing::Held>,
}
