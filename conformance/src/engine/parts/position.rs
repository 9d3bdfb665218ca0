//! Where the steps are: the case line being carried out, what the next expected message
//! must be (the pattern the steps wait for) and when it may come (its `! arrives` window,
//! see [`Arrivals`]), and the variables the case has captured so far.
//!
//! Findings are recorded at the line set here; while a pattern is awaited, a client's
//! request that matches it is the case's to take, not the harness's to answer.

use super::arrivals::{Arrivals, Late};
use crate::case::Arrival;
use crate::pattern::{self, Captures};
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// The steps' place in the case.
#[derive(Debug, Default)]
pub struct Position {
    /// The case line being carried out (0: none, as while opening and closing the run).
    line: usize,
    /// The pattern of the expected message the steps are waiting for, if any.
    awaiting: Option<Value>,
    /// The case's variables: what its steps captured, and what the harness set for it.
    captures: Captures,
    /// When the next expected message may arrive.
    arrivals: Arrivals,
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

    /// The id a pattern names for certain: a literal, or a variable already captured.
    pub fn concrete_id(&self, pattern: &Value) -> Option<Value> {
        let id = pattern.get("id")?;
        match id.as_str() {
            Some(text) if text.starts_with('{') && text.ends_with('}') => text
                .strip_prefix("{$")
                .and_then(|t| t.strip_suffix('}'))
                .and_then(|name| self.captures.get(name))
                .cloned(),
            _ => Some(id.clone()),
        }
    }

    /// A wait for the next expected message lasts at least until the end of its `! arrives`
    /// window (`stretch`ed on a busy machine, since the target `started`), past `deadline`:
    /// a message the case allows that late is not missing.
    pub fn arrival_deadline(
        &self,
        deadline: Deadline,
        started: Instant,
        stretch: impl Fn(Duration) -> Duration,
    ) -> Deadline {
        match self.window_end(stretch) {
            Some(end) => deadline.max(Deadline::from_std(started + end)),
            None => deadline,
        }
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

    /// `! arrives`: the next expected message has this window (see [`Arrivals::expect`]).
    pub fn arrives(&mut self, window: Arrival, waited: Option<Duration>) {
        self.arrivals.expect(window, waited);
    }

    /// An expected message arrived `at`: its window's verdict, if it broke one (see
    /// [`Arrivals::arrived`]).
    pub fn arrived(
        &mut self,
        at: Duration,
        waited_now: Option<Duration>,
        lateness: Duration,
    ) -> Option<Late> {
        self.arrivals.arrived(at, waited_now, lateness)
    }

    /// Until when the next expected message may still come (see [`Arrivals::window_end`]).
    pub fn window_end(&self, stretch: impl Fn(Duration) -> Duration) -> Option<Duration> {
        self.arrivals.window_end(stretch)
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
    fn the_window_of_the_next_expected_message_is_kept_with_the_position() {
        let ms = Duration::from_millis;
        let mut at = Position::default();
        assert_eq!(at.window_end(|d| d), None);
        assert_eq!(at.arrived(ms(40), None, ms(0)), None, "no window yet");
        let window = Arrival {
            from: ms(50),
            to: ms(150),
            line: 7,
        };
        at.arrives(window, None);
        assert_eq!(at.window_end(|d| d), Some(ms(190)));
        assert!(matches!(
            at.arrived(ms(60), None, ms(0)),
            Some(Late::Judged(_))
        ));
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
