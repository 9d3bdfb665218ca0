//! Whether the target can still be talked to: its process, its output, whether it reads what
//! the harness writes, and whether what it writes can be read at all. Every wait asks this
//! part before it waits on: a target that is gone, or cut off, has nothing more to say.

use crate::engine::parts::clock;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// What the harness knows of the target's state.
#[derive(Debug, Default)]
pub struct Liveness {
    /// The target process exited.
    pub exited: bool,
    /// When the target process exited, as the harness saw it.
    pub exited_at: Option<Instant>,
    /// A client finished its actions and ended its session while steps remained: what the
    /// harness would still send goes nowhere, and the remaining expected messages are checked
    /// against what the client sent before it ended.
    pub ended: bool,
    /// The target's output ended (a server's stdout, a client's relay connection).
    pub output_closed: bool,
    /// When the target first wrote anything (since it started): it had started by then.
    pub heard: Option<Duration>,
    /// The target stopped reading what the harness writes (reported once).
    pub stalled: bool,
    /// The target wrote a line to stdout that is not JSON: the case ends there (nothing it
    /// says after can be trusted to be framed as it meant).
    pub garbled: bool,
    /// How many messages the target wrote.
    pub received: usize,
    /// The target wrote the start of a line it has not finished (yet).
    pub partial: bool,
}

impl Liveness {
    /// Whether the harness has stopped talking with the target: it stopped reading, or wrote
    /// what is not JSON on stdout.
    pub fn cut_off(&self) -> bool {
        self.stalled || self.garbled
    }

    /// Whether the target is gone: its process exited or its output closed.
    pub fn gone(&self) -> bool {
        self.exited || self.output_closed
    }

    /// The target wrote something `at` after it started: it has started.
    pub fn heard(&mut self, at: Duration) {
        self.heard.get_or_insert(at);
    }

    /// The target process exited now (the first time counts).
    pub fn exit(&mut self) {
        self.exited = true;
        self.exited_at.get_or_insert_with(clock::now);
    }

    /// A complete message came.
    pub fn message(&mut self) {
        self.received += 1;
        self.partial = false;
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
        l.garbled = true;
        assert!(l.cut_off() && !l.gone());
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
        l.partial = true;
        assert!(l.what_was_heard().contains("start of a line"));
        l.message();
        assert!(l.what_was_heard().contains("1 message meanwhile"));
        l.heard(Duration::from_millis(5));
        l.heard(Duration::from_millis(9));
        assert_eq!(l.heard, Some(Duration::from_millis(5)));
    }
}
