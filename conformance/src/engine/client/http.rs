//! What the harness, as a client's Streamable HTTP server, keeps of the client's requests
//! between messages: the state the HTTP rules of `rules/client_http.rs` read and update.

use crate::exchange::ClientRequest;
use crate::facts::streams::NotFound;
use crate::rules::client_http;
use crate::rules::envelope::Problem;
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

impl HttpSide {
    /// After a 404, the next request must be a fresh `initialize` (HTTP-16); `crossed`: the
    /// request arrived within the crossing grace of the first 404, so it was on its way
    /// before the client could have read it. Moves where the client stands.
    pub(crate) fn after_not_found(
        &mut self,
        seen: &ClientRequest,
        what: &str,
        crossed: bool,
    ) -> Option<Problem> {
        let (state, problem) = client_http::after_not_found(seen, what, self.not_found, crossed);
        self.not_found = state;
        problem
    }
}
