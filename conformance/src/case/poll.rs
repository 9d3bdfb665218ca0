//! `! poll N every D` … `! end`: asking again until the answer is the awaited one.
//!
//! A task's status changes on the server's schedule, not the client's: a client polls
//! `tasks/get` until the status it waits for shows, within a bound. The block says that
//! declaratively: one `>` request (its id varies with `{$i}`, since an id is never used twice)
//! and one or more `<` lines, the answers that end the poll. Each round sends the request and
//! waits for its response; a response that matches none of the `<` lines is kept in the
//! transcript as a round of the poll, and the next round starts `D` after the previous one was
//! sent. After `N` rounds without a match, the last response is shown against the first `<`
//! line, a mismatch at the case's level. With more than one `<` line, any of them ends the
//! poll, and the run notes which one did (the spec allows each, and the reader learns which).

use super::{CaseError, Step, StepKind};
use std::time::Duration;

/// A parsed poll block.
#[derive(Debug, Clone, PartialEq)]
pub struct Poll {
    /// The most rounds.
    pub rounds: usize,
    /// The time from one round's request to the next one's.
    pub every: Duration,
    /// The block's steps: one `Send`, then one or more `Expect` (checked by [`Poll::check`]).
    pub steps: Vec<Step>,
}

impl Poll {
    /// The request each round sends, and the answers that end the poll, each with its line.
    pub fn parts(&self) -> (&str, Vec<(usize, &str)>) {
        let request = match &self.steps[0].kind {
            StepKind::Send(text) => text.as_str(),
            _ => unreachable!("checked when parsed"),
        };
        let answers = self.steps[1..]
            .iter()
            .filter_map(|s| match &s.kind {
                StepKind::Expect(text) => Some((s.line, text.as_str())),
                _ => None,
            })
            .collect();
        (request, answers)
    }

    /// A closed block must hold one request line (with an id) and then only expected lines;
    /// `error` makes the error at a line of the case.
    pub fn check(
        &self,
        open: usize,
        error: impl Fn(usize, &str) -> CaseError,
    ) -> Result<(), CaseError> {
        let Some(first) = self.steps.first() else {
            return Err(error(
                open,
                "this poll has no steps; write one request and the answers that end it",
            ));
        };
        let StepKind::Send(text) = &first.kind else {
            return Err(error(
                first.line,
                "a poll starts with the request it sends each round (a `>` line in a server case)",
            ));
        };
        let has_id = serde_json::from_str::<serde_json::Value>(&text.replace("{$", "{"))
            .ok()
            .and_then(|v| v.get("id").cloned())
            .is_some_and(|id| id.is_string() || id.is_number());
        if !has_id {
            return Err(error(
                first.line,
                "a poll's request needs an id (use `{$i}` in it: ids are never used twice)",
            ));
        }
        if self.steps.len() < 2 {
            return Err(error(open, "a poll needs at least one expected line after its request: the answer that ends it"));
        }
        match self.steps[1..]
            .iter()
            .find(|s| !matches!(s.kind, StepKind::Expect(_)))
        {
            Some(other) => Err(error(
                other.line,
                "a poll holds one request and then only expected lines (the answers that end it)",
            )),
            None => Ok(()),
        }
    }
}
