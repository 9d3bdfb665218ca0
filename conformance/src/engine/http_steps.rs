//! The steps only Streamable HTTP has: `! status`, `! header`, `! disconnect`, `! listen` and
//! `! delete-session` (`! session`, which needs the server handshake, is in `server.rs`).

use super::http::status_matches;
use super::{Engine, Side, Stop};
use crate::outcome::{FindingKind, Severity};
use crate::pattern::canonical;
use crate::transcript::Entry;
use crate::transport::{Channel, Transport};
use tokio::time::Instant as Deadline;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// Waits (at most `--reply-timeout`, stretched for a busy machine) for the head of
    /// `channel`, or its end.
    pub(crate) async fn await_head(&mut self, channel: Channel) {
        let deadline = Deadline::now() + self.clock.stretched(self.played.options().reply_timeout);
        while self
            .streams
            .stream(channel)
            .is_some_and(|s| s.head.is_none() && s.end.is_none())
        {
            if !self.next(deadline).await {
                return;
            }
        }
    }

    /// `! status CODE|…`: the status of the request just made must be one of `codes`.
    pub(crate) async fn status_step(&mut self, codes: &[String]) -> Result<(), Stop> {
        let Some(channel) = self.streams.last() else {
            return Ok(());
        };
        self.await_head(channel).await;
        let Some(stream) = self.streams.stream(channel) else {
            return Ok(());
        };
        let complaint = match (&stream.head, &stream.end) {
            (Some((_, head)), _) if status_matches(codes, head.code) => None,
            (Some((_, head)), _) => Some(format!("{channel} got HTTP {}", head.summary())),
            (None, Some(end)) => Some(format!("{channel} {end} before any status")),
            (None, None) => Some(format!(
                "{channel} got no status within {:?}",
                self.clock.stretched(self.played.options().reply_timeout)
            )),
        };
        if let Some(complaint) = complaint {
            self.finding(
                self.played.severity(),
                FindingKind::Unmet,
                format!(
                    "{complaint}; line {} expects {}",
                    self.step.line(),
                    codes.join(" or ")
                ),
            );
        }
        Ok(())
    }

    /// `! header NAME: VALUE`: the next POST of a case line carries it. Removing a header the
    /// harness would not send tests nothing, so the case does not apply.
    pub(crate) fn header_step(&mut self, name: &str, value: &str) -> Result<(), Stop> {
        let Some(http) = self.io.http_steps() else {
            return Ok(());
        };
        if value.is_empty() && !http.sends_header(name) {
            return Err(Stop::Skip(format!(
                "the case removes the `{name}` header, which the harness does not send to this server (a server that assigns no session id, or a protocol version without the header)"
            )));
        }
        if let Err(e) = http.add_header(name, value) {
            self.finding(
                Severity::Fail,
                FindingKind::CaseBug,
                format!("bug in case: {e}"),
            );
            return Err(Stop::Hung);
        }
        Ok(())
    }

    /// `! disconnect ID`: closes request ID's response stream without cancelling it.
    pub(crate) async fn disconnect_step(&mut self, id: &str) -> Result<(), Stop> {
        let id = self.fill_id(id)?;
        // A stream closed before the server had the request would test nothing.
        self.await_arrival(&id).await;
        let Some(channel) = self.ledger.sent(&id).map(|r| r.channel) else {
            self.finding(
                Severity::Fail,
                FindingKind::CaseBug,
                format!(
                    "bug in case: `! disconnect {}` names no request the case sent",
                    canonical(&id)
                ),
            );
            return Err(Stop::Hung);
        };
        let text = if self.io.abort(channel) {
            format!(
                "[disconnect {}: closed the stream of {channel}]",
                canonical(&id)
            )
        } else {
            format!(
                "[disconnect {}: the stream of {channel} had already ended]",
                canonical(&id)
            )
        };
        self.mark(text, channel);
        Ok(())
    }

    /// A line of the harness's own in the transcript and on both sides of the diff (a
    /// disconnect, a session switch, a GET, a DELETE).
    pub(crate) fn mark(&mut self, text: String, channel: Channel) -> usize {
        self.diff.push(format!("{} {text}", S::SENDS));
        let mut entry = Entry::sent(self.now(), text, None, false);
        entry.channel = channel;
        entry.session = self.streams.session();
        self.transcript.push(entry);
        self.clock.sent();
        self.transcript.len() - 1
    }

    /// `! listen` and `! delete-session`: opens the channel and waits for its head. A server
    /// may refuse both with `405` (HTTP-12, HTTP-16): then the case does not apply, unless a
    /// `! status` line judges the answer (2026-07-28 asks for 405, HTTP-20); such a DELETE is
    /// sent even without a session id.
    pub(crate) async fn open_step(&mut self, listen: bool) -> Result<(), Stop> {
        let judged = self.streams.status_judged();
        let Some(http) = self.io.http_steps() else {
            return Ok(());
        };
        let has_id = http.has_session_id();
        let name = http.session_name().to_string();
        if !listen && !has_id && !judged {
            return Err(Stop::Skip(
                "the server assigned no session id, so there is no session to end (sessions are optional, HTTP-16)".into(),
            ));
        }
        let (channel, text) = if listen {
            (http.listen(), "[GET stream]".to_string())
        } else {
            let text = if has_id {
                format!("[DELETE session {name}]")
            } else {
                "[DELETE, with no session]".to_string()
            };
            (http.delete_session(), text)
        };
        let index = self.mark(text, channel);
        let at = self.diff.last().unwrap_or_default();
        self.opened(channel, index, Some(at));
        self.await_head(channel).await;
        let code = self
            .streams
            .stream(channel)
            .and_then(|s| s.head.as_ref())
            .map(|(_, h)| h.code);
        if !listen && code.is_some_and(|c| (200..300).contains(&c)) {
            self.streams.deleted();
        }
        let refused = code == Some(405) && !judged;
        if refused {
            return Err(Stop::Skip(if listen {
                "the server offers no GET stream (405, allowed by HTTP-12)".into()
            } else {
                "the server does not let clients end sessions (405 to DELETE, allowed by HTTP-16)"
                    .into()
            }));
        }
        Ok(())
    }
}
