//! What the opening of the session settled: whether it completed, the protocol version the
//! run uses as agreed (or, when the harness plays the server, as played), and, for a case
//! that went on in a session an earlier case opened, the messages that opened it.

use serde_json::Value;

/// The opening of the session, as far as it went.
#[derive(Debug, Default)]
pub struct Opening {
    /// The protocol version agreed (or played).
    version: Option<String>,
    /// Whether the harness's own opening completed (server targets).
    completed: bool,
    /// The messages of a shared session's opening, which an earlier case sent and read.
    adopted: Vec<Value>,
}

impl Opening {
    /// The protocol version agreed, once one is.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// The run now uses `version`: agreed at the opening, or at a later `initialize`.
    pub fn agree(&mut self, version: String) {
        self.version = Some(version);
    }

    /// The harness's own opening of the session completed; it stays so.
    pub fn complete(&mut self) {
        self.completed = true;
    }

    /// Whether the harness's own opening of the session completed.
    pub fn completed(&self) -> bool {
        self.completed
    }

    /// The case goes on in a session an earlier case opened with `messages`.
    pub fn adopt(&mut self, messages: Vec<Value>) {
        self.adopted = messages;
    }

    /// The version, whether the opening completed, and the messages of an adopted opening,
    /// for the report.
    pub fn into_parts(self) -> (Option<String>, bool, Vec<Value>) {
        (self.version, self.completed, self.adopted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_agreement_replaces_the_version_and_completion_stays() {
        let mut o = Opening::default();
        assert_eq!((o.version(), o.completed()), (None, false));
        o.agree("2025-03-26".into());
        o.complete();
        o.agree("2025-11-25".into());
        assert_eq!(o.version(), Some("2025-11-25"));
        assert_eq!(o.into_parts(), (Some("2025-11-25".into()), true, vec![]));
    }
}
