//! Expected messages: waiting for the first message that matches a case's pattern, and, when
//! none does, showing the closest one in a diff.

use super::proof::{Ran, Wait};
use super::{Engine, Side, Stop};
use crate::facts::ledger::Due;
use crate::outcome::{FindingKind, Severity};
use crate::pattern::{self, canonical};
use crate::transcript::{self, Direction, Entry};
use crate::transport::{Channel, Transport};
use serde_json::{json, Value};
use tokio::time::Instant as Deadline;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// An expected line's pattern, with loop variables filled in.
    fn fill_pattern(&mut self, line: usize, text: &str) -> Result<Value, Stop> {
        pattern::fill_pattern(text, self.step.captures()).map_err(|e| {
            self.step.at(line);
            self.finding(
                Severity::Fail,
                FindingKind::CaseBug,
                format!(
                    "bug in case: the expected message is not JSON after filling in variables: {e}"
                ),
            );
            Stop::Hung
        })
    }

    /// The id a pattern names for certain: a literal, or a variable already captured.
    fn concrete_id(&self, pattern: &Value) -> Option<Value> {
        let id = pattern.get("id")?;
        match id.as_str() {
            Some(text) if text.starts_with('{') && text.ends_with('}') => text
                .strip_prefix("{$")
                .and_then(|t| t.strip_suffix('}'))
                .and_then(|name| self.step.captures().get(name))
                .cloned(),
            _ => Some(id.clone()),
        }
    }

    /// An unconsumed response of the current session with this id that arrived at or after
    /// transcript index `from`.
    fn response_with_id(&self, id: &Value, from: usize) -> Option<usize> {
        self.transcript
            .iter()
            .enumerate()
            .skip(from)
            .find(|(_, e)| {
                e.direction == Direction::Received
                    && e.consumed_by.is_none()
                    && !e.internal
                    && e.session == self.streams.session()
                    && e.value.as_ref().is_some_and(|v| {
                        v.get("method").is_none()
                            && v.get("id").is_some_and(|v| pattern::json_equal(v, id))
                    })
            })
            .map(|(i, _)| i)
    }

    /// The unmatched message a pattern is closest to: the one with its id, or else the first
    /// of its method (a response pattern is only ever compared with responses).
    fn candidate_for(&self, pattern: &Value) -> Option<usize> {
        let session = self.streams.session();
        let unconsumed = |e: &Entry| {
            e.direction == Direction::Received
                && e.consumed_by.is_none()
                && !e.internal
                && e.session == session
        };
        let entries = self.transcript.iter().enumerate();
        if let Some(id) = self.concrete_id(pattern) {
            return entries
                .filter(|(_, e)| unconsumed(e))
                .find(|(_, e)| {
                    e.value
                        .as_ref()
                        .and_then(|v| v.get("id"))
                        .is_some_and(|v| pattern::json_equal(v, &id))
                })
                .map(|(i, _)| i);
        }
        let method = pattern.get("method");
        entries
            .filter(|(_, e)| unconsumed(e))
            .find(|(_, e)| {
                e.value.as_ref().is_some_and(|v| {
                    v.get("method") == method && (method.is_some() || v.get("id").is_some())
                })
            })
            .map(|(i, _)| i)
    }

    /// What a pattern's message would answer, and when it is due: the harness's request with
    /// the pattern's id, or (for an error without an id, the answer to an unreadable line) the
    /// last line the case sent.
    fn subject(&self, pattern: &Value) -> (Option<usize>, Due) {
        if let Some(request) = self
            .concrete_id(pattern)
            .and_then(|id| self.ledger.sent(&id))
        {
            return (Some(request.index), request.due);
        }
        let unreadable = pattern.get("error").is_some()
            && pattern.get("method").is_none()
            && pattern.get("id").is_none_or(Value::is_null);
        if unreadable {
            let last = self
                .transcript
                .iter()
                .rposition(|e| e.direction == Direction::Sent && !e.internal);
            return (last, Due::AtOnce);
        }
        (None, Due::Unknown)
    }

    /// An expected line: waits for the first unmatched message that matches. Meanwhile the
    /// pattern is what the steps await, so a client's request that matches it is left to the
    /// case rather than answered by the harness.
    pub(crate) async fn expect(&mut self, line: usize, text: &str) -> Result<(), Stop> {
        let pattern = self.fill_pattern(line, text)?;
        self.step.await_pattern(pattern.clone());
        let done = self.expect_pattern(line, pattern).await;
        self.step.awaited();
        done
    }

    async fn expect_pattern(&mut self, line: usize, mut pattern: Value) -> Result<(), Stop> {
        let id = self.concrete_id(&pattern);
        let mapped = id
            .as_ref()
            .and_then(|id| self.ledger.sent(id))
            .is_some_and(|r| r.mapped);
        if mapped && pattern.get("result").is_some() {
            // A target's own tool stands in for the role: its result is its business.
            pattern["result"] = json!("{object}");
        }
        let (subject, due) = self.subject(&pattern);
        let channel = self.expected_channel(&pattern);
        let prefix = channel.map(|c| format!("{c} ")).unwrap_or_default();
        self.diff
            .push(format!("{} {prefix}{}", S::EXPECTS, canonical(&pattern)));
        let began = Deadline::now();
        let mut past = None;
        let mut scanned = 0;
        loop {
            // Only messages that arrived since the last look can match: the others did not,
            // and nothing that decides a match has changed meanwhile.
            let from = scanned;
            scanned = self.transcript.len();
            if let Some((index, at)) = transcript::take_match_from(
                &mut self.transcript,
                from,
                &pattern,
                self.step.captures_mut(),
                line,
                self.streams.session(),
            ) {
                self.show_channel(index, channel);
                self.arrived(line, at);
                return Ok(());
            }
            if let Some(done) = self.answered_otherwise(line, &pattern, id.as_ref(), from) {
                return done;
            }
            if let Some(stop) = S::halted(self) {
                return Err(stop);
            }
            let (deadline, ran) = self.answer_deadline(began, subject, due);
            let deadline = self.arrival_deadline(deadline);
            let tick = self.tick(deadline, std::time::Duration::from_millis(250));
            // A wait ends only once the harness has caught up with what the target wrote.
            let got = self.next(tick).await;
            if !got {
                if self.liveness.cut_off() {
                    return Err(Stop::Hung);
                }
                if let Some(stop) = S::ended(self) {
                    return Err(stop);
                }
                if self.io.finished() {
                    let candidate = self.candidate_for(&pattern);
                    return self.mismatch(line, &pattern, candidate, ran);
                }
            }
            let ran = match self.wait_state(deadline, &mut past) {
                Wait::On => None,
                Wait::Quiet => Some(ran),
                Wait::Talking(talked) => Some(Ran::Talking(Box::new(ran), talked)),
            };
            if let Some(ran) = ran {
                // Over HTTP, progress for a request answered as JSON had no stream to come on
                // (judged only once the wait is over: a server may upgrade a request to SSE
                // with its first progress).
                if let Some(reason) = self.progress_unreachable(&pattern) {
                    return Err(Stop::Skip(reason));
                }
                let candidate = self.candidate_for(&pattern);
                return self.mismatch(line, &pattern, candidate, ran);
            }
            self.probe_if_due(began, subject, due).await;
        }
    }

    /// Whether the wait for `pattern`, a response to request `id`, is over without a match:
    /// a response for the id that does not match (another will not follow), or over HTTP a
    /// response whose stream was refused or ended (it will never come).
    fn answered_otherwise(
        &mut self,
        line: usize,
        pattern: &Value,
        id: Option<&Value>,
        from: usize,
    ) -> Option<Result<(), Stop>> {
        let id = id?;
        let ran = Ran::Out(self.played.options().reply_timeout);
        if let Some(index) = self.response_with_id(id, from) {
            return Some(self.mismatch(line, pattern, Some(index), ran));
        }
        if self.unanswerable(id).is_some() {
            let candidate = self.candidate_for(pattern);
            return Some(self.mismatch(line, pattern, candidate, ran));
        }
        None
    }

    /// A matched message's line in the diff shows its channel as the expectation did.
    fn show_channel(&mut self, index: usize, expected: Option<Channel>) {
        let entry = &mut self.transcript[index];
        let prefix = transcript::channel_prefix(expected, entry.channel);
        if let Some(shown) = entry.shown.as_mut() {
            shown.insert_str(0, &prefix);
        }
    }

    /// Reports an expectation that did not hold: the closest message in a diff (and as a
    /// replacement for blessing), or that nothing came. A missing message at the must level
    /// stops the case; anything else lets it go on.
    fn mismatch(
        &mut self,
        line: usize,
        pattern: &Value,
        candidate: Option<usize>,
        ran: Ran,
    ) -> Result<(), Stop> {
        self.step.at(line);
        let severity = self.case_severity();
        let Some(index) = candidate else {
            let is_response = pattern.get("result").is_some() || pattern.get("error").is_some();
            let what = if is_response {
                "no response"
            } else {
                "no message"
            };
            let mut why = S::absence(self);
            if let Some(reason) = pattern.get("id").and_then(|id| self.unanswerable(id)) {
                why.push_str(&format!(" ({reason})"));
            }
            self.finding(
                severity,
                FindingKind::Unmet,
                format!(
                    "{what} matching line {line} {}{why}: {}",
                    ran.explain(),
                    canonical(pattern)
                ),
            );
            return if severity == Severity::Fail {
                Err(Stop::Hung)
            } else {
                Ok(())
            };
        };
        let value = self.value(index);
        let diff = pattern::first_difference(pattern, &value, self.step.captures())
            .map(|d| d.to_string())
            .unwrap_or_default();
        let shown = canonical(&pattern::normalize(pattern, &value, self.step.captures()));
        let channel = self.expected_channel(pattern);
        let entry = &mut self.transcript[index];
        entry.consumed_by = Some(line);
        entry.shown = Some(format!(
            "{}{shown}",
            transcript::channel_prefix(channel, entry.channel)
        ));
        self.diff.bless(line, format!("{} {shown}", S::EXPECTS));
        self.finding(
            severity,
            FindingKind::Mismatch,
            format!("the message differs from the expected one; {diff}"),
        );
        Ok(())
    }
}
