//! Whether the target can still be talked to: its process, its output, whether it reads what
//! the harness writes, and whether what it writes can be read at all. Every wait asks this
//! part before it waits on: a target that is gone, or cut off, has nothing more to say.

use crate::engine::parts::clock;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// What the harness knows of the target's state. The engine tells it what happened (an
/// exit, a closed output, a message, a write that found no room) and asks it whether the
/// target can still be talked to; nothing else changes it.
#[derive(Debug, Default)]
pub struct Liveness {
    /// When the target process exited, as the harness saw it.
    exited_at: Option<Instant>,
    /// A client finished its actions and ended its session while steps remained: what the
    /// harness would still send goes nowhere, and the remaining expected messages are checked
    /// against what the client sent before it ended.
    done: bool,
    /// The target's output ended (a server's stdout, a client's relay connection).
    output_closed: bool,
    /// When the target first wrote anything (since it started): it had started by then.
    heard: Option<Duration>,
    /// The target stopped reading what the harness writes (reported once).
    stalled: bool,
    /// The target wrote a line to stdout that is not JSON: the case ends there (nothing it
    /// says after can be trusted to be framed as it meant).
    garbled: bool,
    /// How many messages the target wrote.
    received: usize,
    /// The target wrote the start of a line it has not finished (yet).
    partial: bool,
}

impl Liveness {
    /// Whether the harness has stopped talking with the target: it stopped reading, or wrote
    /// what is not JSON on stdout.
    pub fn cut_off(&self) -> bool {
        self.stalled || self.garbled
    }

    /// Whether the target is gone: its process exited or its output closed.
    pub fn gone(&self) -> bool {
        self.exited_at.is_some() || self.output_closed
    }

    /// Whether the target process has exited.
    pub fn has_exited(&self) -> bool {
        self.exited_at.is_some()
    }

    /// Whether a client ended its session after finishing its actions (see [`Liveness::done`]).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// When the target first wrote anything, since it started.
    pub fn first_heard(&self) -> Option<Duration> {
        self.heard
    }

    /// The target wrote something `at` after it started: it has started.
    pub fn heard(&mut self, at: Duration) {
        self.heard.get_or_insert(at);
    }

    /// The target process exited now (the first time counts).
    pub fn exit(&mut self) {
        self.exited_at.get_or_insert_with(clock::now);
    }

    /// The target's output ended.
    pub fn output_closed(&mut self) {
        self.output_closed = true;
    }

    /// A client opened a new session: its output is open again.
    pub fn reconnected(&mut self) {
        self.output_closed = false;
    }

    /// A client finished its actions and ended its session: nothing more is sent.
    pub fn done(&mut self) {
        self.done = true;
    }

    /// A write found no room: the target stopped reading. True the first time, when it is
    /// to be reported.
    pub fn stall(&mut self) -> bool {
        !std::mem::replace(&mut self.stalled, true)
    }

    /// The target wrote what is not a message where only messages may go.
    pub fn garble(&mut self) {
        self.garbled = true;
    }

    /// A complete message came `at` after the target started.
    pub fn message(&mut self, at: Duration) {
        self.heard(at);
        self.received += 1;
        self.partial = false;
    }

    /// The start of a line came `at` after the target started, not yet finished.
    pub fn partial(&mut self, at: Duration) {
        self.heard(at);
        self.partial = true;
    }

    /// How long to read at most, given the wait's own deadline: a target whose process
    /// exited gets only `grace` after its exit for what it wrote before (when the role has
    /// such a grace).
    pub fn read_until(&self, deadline: Deadline, grace: Option<Duration>) -> Deadline {
        match (self.exited_at, grace) {
            (Some(at), Some(grace)) => deadline.min(Deadline::from_std(at + grace)),
            _ => deadline,
        }
    }

    /// What the target wrote, for a finding about a missing answer.
    pub fn what_was_heard(&self) -> String {
        match (self.received, self.partial) {
            (0, false) => "the target wrote nothing, so it never started serving (check the command, or raise --startup-timeout for a slow start)".into(),
            (0, true) => "the target wrote the start of a line and never finished it".into(),
            (n, _) => format!(
                "the target wrote {n} message{} meanwhile, but not this answer",
                if n == 1 { "" } else { "s" }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_off_and_gone_are_told_apart() {
        let mut l = Liveness::default();
        assert!(!l.cut_off() && !l.gone());
        l.garble();
        assert!(l.cut_off() && !l.gone());
        let mut l = Liveness::default();
        assert!(l.stall(), "the first stall is reported");
        assert!(!l.stall() && l.cut_off());
        let mut l = Liveness::default();
        l.output_closed();
        assert!(l.gone() && !l.has_exited());
        l.reconnected();
        assert!(!l.gone());
        let mut l = Liveness::default();
        l.exit();
        assert!(l.gone() && !l.cut_off());
        let first = l.exited_at;
        l.exit();
        assert_eq!(l.exited_at, first, "the first exit counts");
    }

    #[test]
    fn an_exited_target_is_read_only_for_its_grace() {
        let mut l = Liveness::default();
        let far = Deadline::now() + Duration::from_secs(60);
        assert_eq!(l.read_until(far, Some(Duration::from_millis(200))), far);
        l.exit();
        assert!(l.read_until(far, Some(Duration::from_millis(200))) < far);
        assert_eq!(
            l.read_until(far, None),
            far,
            "a role without a grace reads to the end"
        );
    }

    #[test]
    fn what_was_heard_says_what_the_target_wrote() {
        let mut l = Liveness::default();
        assert!(l.what_was_heard().contains("wrote nothing"));
        l.partial(Duration::from_millis(5));
        assert!(l.what_was_heard().contains("start of a line"));
        l.message(Duration::from_millis(9));
        assert!(l.what_was_heard().contains("1 message meanwhile"));
        assert_eq!(l.first_heard(), Some(Duration::from_millis(5)));
    }
}
