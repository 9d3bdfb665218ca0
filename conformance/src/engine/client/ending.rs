//! How a client's sessions ended, judged once the client is gone: over stdio its server's
//! stdin is closed before any signal (STD-06), over HTTP the session is ended with DELETE
//! (HTTP-16). (Whether every answered `initialize` was followed by
//! `notifications/initialized`, LIF-03, and how the client shut each session down are
//! `Sessions::uninitialized` and `Sessions::notes`.)

use super::session::Session;
use super::ClientTarget;
use crate::engine::Engine;
use crate::outcome::Severity;
use crate::requirement::Req;
use crate::transport::Transport;
use std::time::Duration;

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// `! exit D` in a client case: the client ends its session within D, the way its
    /// transport calls for: over stdio its server's stdin is closed before any signal
    /// (STD-06); over HTTP the session is ended with DELETE (HTTP-16, a SHOULD).
    pub(crate) async fn judge_exit(&mut self, within: Duration) {
        let waited = self.await_exit(within).await;
        let severity = self.played.severity();
        if !self.liveness.has_exited() {
            let shown = crate::transcript::millis(waited);
            self.rule(
                severity,
                Req::Std06,
                format!(
                    "the client was still running {} after its last action",
                    shown.trim_start_matches('+')
                ),
            );
            return;
        }
        // How the client ended its server may still be on its way through the relay.
        self.read_to_end().await;
        let Some(session) = self.side.sessions.current() else {
            return;
        };
        if session.http_id.is_some() {
            if session.deleted.is_none() {
                self.rule(
                    severity.min(Severity::Warn),
                    Req::Http16,
                    "the client exited without ending its HTTP session with DELETE".into(),
                );
            }
            return;
        }
        if let Some(complaint) = stdio_end(session) {
            self.rule(severity, Req::Std06, complaint.into());
        }
    }
}

/// What is wrong with how the client ended a stdio session (STD-06): `None` when it closed
/// its server's stdin before any signal.
fn stdio_end(session: &Session) -> Option<&'static str> {
    match (session.stdin_closed, session.terminated, session.ended) {
        (Some(_), None, _) => None,
        (Some(eof), Some(term), _) if eof <= term => None,
        (_, Some(_), _) => Some(
            "the client sent SIGTERM to its server without closing the server's stdin first",
        ),
        (None, None, Some(_)) => {
            Some("the client killed its server without closing the server's stdin first")
        }
        (None, None, None) => Some(
            "the client exited and left its server running with stdin open (its connection was still open after --reply-timeout)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Channel;
    use std::time::Instant;

    fn ended(stdin_closed: bool, terminated: bool, killed: bool) -> Option<&'static str> {
        let at = Instant::now();
        let mut session = Session::new(Channel::Stdio, None);
        session.stdin_closed = stdin_closed.then_some(at);
        session.terminated = terminated.then(|| at + Duration::from_millis(5));
        session.ended = killed.then(|| at + Duration::from_millis(10));
        stdio_end(&session)
    }

    #[test]
    fn closing_stdin_first_is_the_fair_end() {
        assert_eq!(ended(true, false, false), None);
        assert_eq!(ended(true, true, true), None, "a signal after the close");
    }

    #[test]
    fn a_signal_a_kill_or_a_server_left_running_breaks_std_06() {
        assert!(ended(false, true, true).unwrap().contains("SIGTERM"));
        assert!(ended(false, false, true).unwrap().contains("killed"));
        assert!(ended(false, false, false)
            .unwrap()
            .contains("left its server running"));
        let at = Instant::now();
        let mut late = Session::new(Channel::Stdio, None);
        late.terminated = Some(at);
        late.stdin_closed = Some(at + Duration::from_millis(5));
        assert!(
            stdio_end(&late).unwrap().contains("SIGTERM"),
            "closed after the signal"
        );
    }
}
