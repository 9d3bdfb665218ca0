//! What the engine knows about HTTP channels, and the proofs it can still get without an
//! ordered stream.
//!
//! Over Streamable HTTP every message is its own POST, so the engine keeps, per channel, what
//! opened it, its status, what came on it and how it ended ([`Streams`]), shows the channel
//! and the status on every line of the transcript and the diff, and replaces the stdio
//! barrier's proof: across POSTs the order of arrival proves nothing about the order of
//! reading, so a cancel counts as read once its POST was accepted (`202`) and a grace window
//! `T_grace = max(500 ms, 4 × RTT)` passed (the ledger's `CancelMark::accepted`); where
//! nothing proves it, only the witness can tell, and findings say so.
mod follow;
mod settle;

use crate::facts::streams::{Opened, Stream};
use crate::transport::Channel;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// The least grace window over HTTP (spec-requirements §0: HTTP `T_grace`).
pub const MIN_GRACE: Duration = Duration::from_millis(500);
/// The least time the harness allows a request to reach the server when its response head
/// does not show it did.
pub const MIN_ARRIVAL: Duration = Duration::from_millis(100);

/// Whether an HTTP status matches a `! status` word (`404`, `4xx`).
pub fn status_matches(codes: &[String], code: u16) -> bool {
    let code = code.to_string();
    codes
        .iter()
        .any(|c| *c == code || (c.ends_with("xx") && code.starts_with(&c[..1])))
}

/// Every HTTP channel of one case, and what proofs they gave.
#[derive(Debug, Default)]
pub struct Streams {
    /// The channels, by channel.
    pub by: HashMap<Channel, Stream>,
    /// Round trips measured so far (accepted notifications, answered probes).
    rtt: Vec<Duration>,
    /// The sessions the case opened, by index (`main` first).
    pub names: Vec<String>,
    /// The current session.
    pub session: usize,
    /// The statuses a `! status` right after the next request expects.
    pub next_status: Option<Vec<String>>,
    /// The channel of the last request the case made.
    pub last: Option<Channel>,
    /// Cancels already said to be unproven, or to rest on a closed stream.
    unproven: HashSet<usize>,
    /// Messages seen on some channel (canonical text → first channel), for HTTP-13.
    pub seen: HashMap<String, Channel>,
    /// Sessions the case ended with a DELETE the server accepted.
    pub deleted: HashSet<usize>,
    /// Sessions in which a request did not show it arrived within its arrival window: the
    /// server holds back a response's head until it has something to send.
    pub holds_heads: HashSet<usize>,
}

impl Streams {
    /// Bookkeeping for a case over HTTP.
    pub fn http() -> Streams {
        Streams {
            names: vec!["main".into()],
            ..Streams::default()
        }
    }

    /// The session a channel belongs to.
    pub fn session_of(&self, channel: Channel) -> usize {
        self.by.get(&channel).map_or(0, |s| s.session)
    }

    /// Adds a round trip.
    pub fn sample(&mut self, rtt: Duration) {
        self.rtt.push(rtt);
    }

    fn median_rtt(&self) -> Duration {
        let mut samples = self.rtt.clone();
        samples.sort();
        samples.get(samples.len() / 2).copied().unwrap_or_default()
    }

    /// `T_grace = max(500 ms, 4 × RTT)`, RTT the median round trip so far: a slow machine
    /// widens the window instead of flipping a verdict.
    pub fn grace(&self) -> Duration {
        MIN_GRACE.max(self.median_rtt() * 4)
    }

    /// How long a request may take to reach the server when nothing shows it did (a JSON
    /// response comes only with the answer): `max(100 ms, 4 × RTT)`.
    pub fn arrival(&self) -> Duration {
        MIN_ARRIVAL.max(self.median_rtt() * 4)
    }
}

/// What a message the harness sends opens, for the ledger key `key` of ids.
fn opened_by(value: Option<&Value>, key: impl Fn(&Value) -> String) -> Opened {
    let Some(message) = value.and_then(Value::as_object) else {
        return Opened::Other;
    };
    let id = message
        .get("id")
        .filter(|id| id.is_string() || id.is_number());
    match (message.get("method").and_then(Value::as_str), id) {
        (Some(_), Some(id)) => Opened::Request(key(id)),
        (Some(method), None) => Opened::Notification {
            method: method.to_string(),
            cancels: (method == "notifications/cancelled")
                .then(|| message.get("params").and_then(|p| p.get("requestId")))
                .flatten()
                .filter(|id| id.is_string() || id.is_number())
                .map(&key),
        },
        (None, _) if message.contains_key("result") || message.contains_key("error") => {
            Opened::Response
        }
        _ => Opened::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statuses_match_codes_and_classes() {
        let codes = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(status_matches(&codes(&["202"]), 202));
        assert!(!status_matches(&codes(&["202"]), 200));
        assert!(status_matches(&codes(&["202", "4xx"]), 404));
        assert!(!status_matches(&codes(&["4xx"]), 500));
    }

    #[test]
    fn what_a_message_opens() {
        let key = |id: &Value| crate::pattern::id_key(id);
        let request = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
        assert_eq!(opened_by(Some(&request), key), Opened::Request("1".into()));
        let cancel =
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}});
        assert_eq!(
            opened_by(Some(&cancel), key),
            Opened::Notification {
                method: "notifications/cancelled".into(),
                cancels: Some("\"a\"".into())
            }
        );
        let malformed =
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}});
        assert!(matches!(
            opened_by(Some(&malformed), key),
            Opened::Notification { cancels: None, .. }
        ));
        assert_eq!(
            opened_by(Some(&json!({"jsonrpc":"2.0","id":3,"result":{}})), key),
            Opened::Response
        );
        assert_eq!(opened_by(None, key), Opened::Other);
    }

    #[test]
    fn grace_grows_with_the_round_trip() {
        let mut streams = Streams::http();
        assert_eq!(streams.grace(), MIN_GRACE);
        assert_eq!(streams.arrival(), MIN_ARRIVAL);
        for ms in [10, 300, 200] {
            streams.sample(Duration::from_millis(ms));
        }
        assert_eq!(streams.grace(), Duration::from_millis(800));
        assert_eq!(streams.arrival(), Duration::from_millis(800));
    }
}
