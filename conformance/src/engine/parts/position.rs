//! Where the steps are: the case line being carried out, the pattern of the expected
//! message they wait for, and the variables the case has captured so far.
//!
//! Findings are recorded at the line set here; while a pattern is awaited, a client's
//! request that matches it is the case's to take, not the harness's to answer.

use crate::pattern::{self, Captures};
use serde_json::Value;

/// The steps' place in the case.
#[derive(Debug, Default)]
pub struct Position {
    /// The case line being carried out (0: none, as while opening and closing the run).
    line: usize,
    /// The pattern of the expected message the steps are waiting for, if any.
    awaiting: Option<Value>,
    /// The case's variables: what its steps captured, and what the harness set for it.
    captures: Captures,
}

impl Position {
    /// The case line being carried out.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The steps move to case line `line`.
    pub fn at(&mut self, line: usize) {
        self.line = line;
    }

    /// The case's variables.
    pub fn captures(&self) -> &Captures {
        &self.captures
    }

    /// The case's variables, to capture or let go of one.
    pub fn captures_mut(&mut self) -> &mut Captures {
        &mut self.captures
    }

    /// The steps wait for a message that matches `pattern`.
    pub fn await_pattern(&mut self, pattern: Value) {
        self.awaiting = Some(pattern);
    }

    /// The steps no longer wait for a message.
    pub fn awaited(&mut self) {
        self.awaiting = None;
    }

    /// Whether the message the steps are waiting for would be `value`: it matches the
    /// pattern awaited, with the variables captured so far (which this leaves as they are).
    pub fn awaits(&self, value: &Value) -> bool {
        self.awaiting
            .as_ref()
            .is_some_and(|p| pattern::matches(p, value, &mut self.captures.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_an_awaited_pattern_takes_a_message_and_captures_stay_as_they_were() {
        let mut at = Position::default();
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage"});
        assert!(!at.awaits(&request), "nothing is awaited");
        at.await_pattern(json!({"id": "{$req}", "method": "sampling/createMessage"}));
        assert!(at.awaits(&request));
        assert!(at.captures().is_empty(), "judging a match captures nothing");
        assert!(!at.awaits(&json!({"id": 7, "method": "roots/list"})));
        at.awaited();
        assert!(!at.awaits(&request));
    }

    #[test]
    fn the_line_moves_and_variables_are_kept() {
        let mut at = Position::default();
        assert_eq!(at.line(), 0);
        at.at(12);
        at.captures_mut()
            .insert("version".into(), json!("2025-11-25"));
        assert_eq!(at.line(), 12);
        assert_eq!(at.captures()["version"], json!("2025-11-25"));
    }
}
