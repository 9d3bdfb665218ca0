//! `! poll N every D`: one request sent round after round until its response matches one
//! of the block's expected lines (see `case::poll` for the format).
//!
//! Each round waits for its own response as an expected line would (the reply timeout,
//! stretched on a busy machine), so a slow server is not a missing one; a round's answer
//! that matches no expected line stays in the transcript as it came, and is not a mismatch.
//! Only the bound decides: after `N` rounds the last answer is shown against the first
//! expected line.

use super::parts::diff::Diff;
use super::parts::transcript::Transcript;
use super::{Engine, Side, Stop};
use crate::case::Poll;
use crate::outcome::{FindingKind, Severity};
use crate::pattern::{self, canonical};
use crate::transcript::{self, Direction};
use crate::transport::Transport;
use serde_json::{json, Value};
use tokio::time::Instant as Deadline;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// Plays a poll block.
    pub(crate) async fn poll(&mut self, poll: &Poll) -> Result<(), Stop> {
        let (request, answers) = poll.parts();
        let first_line = answers[0].0;
        let mut last = None;
        for round in 0..poll.rounds {
            self.step.captures_mut().insert("i".into(), json!(round));
            self.step.at(poll.steps[0].line);
            let text = self.fill(request)?;
            let id = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.get("id").cloned())
                .unwrap_or(Value::Null);
            self.write(text, false).await?;
            let sent = Deadline::now();
            let Some(index) = self.poll_answer(first_line, &id).await? else {
                // No answer at all: the expected line's wait reported it.
                self.step.captures_mut().remove("i");
                return Ok(());
            };
            if let Some(line) = self.poll_matched(index, &answers, answers.len() > 1)? {
                self.step.at(line);
                self.step.captures_mut().remove("i");
                return Ok(());
            }
            last = Some(index);
            if round + 1 < poll.rounds {
                self.pump_until(sent + poll.every).await;
            }
        }
        // The last round's `{$i}` stays bound while its answer is shown against the line.
        let exhausted = self.poll_exhausted(poll, first_line, answers[0].1, last);
        self.step.captures_mut().remove("i");
        exhausted
    }

    /// Waits for the response to the round's request `id` (any response: the answers are
    /// compared once it is here); its transcript index, or `None` when none came.
    async fn poll_answer(&mut self, line: usize, id: &Value) -> Result<Option<usize>, Stop> {
        let pattern = json!({"jsonrpc": "2.0", "id": id});
        self.expect(line, &pattern.to_string()).await?;
        Ok(self.transcript.iter().rposition(|e| {
            e.direction == Direction::Received
                && e.consumed_by == Some(line)
                && e.value.as_ref().is_some_and(|v| {
                    v.get("method").is_none()
                        && v.get("id").is_some_and(|v| pattern::json_equal(v, id))
                })
        }))
    }

    /// Compares a round's answer with the expected lines: the line that matched (its
    /// captures kept, the diff showing it as the case wrote it), or `None` (the answer shown
    /// as it came, so the diff has nothing to say about it).
    fn poll_matched(
        &mut self,
        index: usize,
        answers: &[(usize, &str)],
        note_which: bool,
    ) -> Result<Option<usize>, Stop> {
        for (line, text) in answers {
            let filled = self.fill(text)?;
            let Ok(expected) = serde_json::from_str::<Value>(&filled) else {
                self.step.at(*line);
                self.finding(
                    Severity::Fail,
                    FindingKind::CaseBug,
                    "bug in case: the expected message is not JSON after filling in variables"
                        .into(),
                );
                return Err(Stop::Hung);
            };
            let value = self.transcript.message(index);
            if !pattern::matches(&expected, value, self.step.captures_mut()) {
                continue;
            }
            let shown = canonical(&pattern::normalize(&expected, value, self.step.captures()));
            show_round(
                &mut self.diff,
                &mut self.transcript,
                index,
                S::EXPECTS,
                (canonical(&expected), shown),
            );
            if note_which {
                self.step.at(*line);
                self.finding(
                    Severity::Note,
                    FindingKind::Observed,
                    format!(
                        "the poll ended on round {} with the answer line {line} allows: {}",
                        self.step
                            .captures()
                            .get("i")
                            .map(Value::to_string)
                            .unwrap_or_default(),
                        canonical(&expected)
                    ),
                );
            }
            return Ok(Some(*line));
        }
        let shown = canonical(self.transcript.message(index));
        show_round(
            &mut self.diff,
            &mut self.transcript,
            index,
            S::EXPECTS,
            (shown.clone(), shown),
        );
        Ok(None)
    }

    /// No round's answer matched: the last one against the first expected line.
    fn poll_exhausted(
        &mut self,
        poll: &Poll,
        line: usize,
        text: &str,
        last: Option<usize>,
    ) -> Result<(), Stop> {
        self.step.at(line);
        let Some(index) = last else {
            return Ok(());
        };
        let filled = self.fill(text)?;
        let expected: Value = serde_json::from_str(&filled).unwrap_or(Value::Null);
        let value = self.transcript.message(index);
        let diff = pattern::first_difference(&expected, value, self.step.captures())
            .map(|d| d.to_string())
            .unwrap_or_default();
        let shown = canonical(&pattern::normalize(&expected, value, self.step.captures()));
        show_round(
            &mut self.diff,
            &mut self.transcript,
            index,
            S::EXPECTS,
            (canonical(&expected), shown),
        );
        let severity = self.played.severity();
        self.finding(
            severity,
            FindingKind::Unmet,
            format!(
                "after {} rounds, {} ms apart, no answer matched line {line}; the last one: {diff}",
                poll.rounds,
                poll.every.as_millis()
            ),
        );
        if severity == Severity::Fail {
            Err(Stop::Hung)
        } else {
            Ok(())
        }
    }
}

/// Sets what the diff shows for a round: the expected side of `lines` as the case's line (the
/// last one the round's wait added, with the arrow `expects`), its shown side as the answer's
/// line, both on the answer's channel.
fn show_round(
    diff: &mut Diff,
    transcript: &mut Transcript,
    index: usize,
    expects: char,
    (expected, shown): (String, String),
) {
    let channel = transcript[index].channel;
    let prefix = transcript::channel_prefix(Some(channel), channel);
    diff.replace_last(format!("{expects} {prefix}{expected}"));
    transcript[index].shown = Some(format!("{prefix}{shown}"));
}
