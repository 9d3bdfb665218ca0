//! Expected messages: waiting for the first message that matches a case's pattern, and, when
//! none does, showing the closest one in a diff.

use super::parts::transcript::Transcript;
use super::proof::{Ran, Wait};
use super::{Engine, Side, Stop, Why};
use crate::facts::ledger::{Due, Ledger};
use crate::outcome::{FindingKind, Severity};
use crate::pattern::{self, canonical};
use crate::transcript::{self, Direction};
use crate::transport::Transport;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::time::Instant as Deadline;

/// Why progress a case expects cannot come: the server answers requests of the session with
/// `application/json`, so a running request has no stream for it.
const NO_PROGRESS_STREAM: &str = "the server answers requests with application/json, so a running request has no stream for its progress to reach the client on (sending no progress is allowed, PRG-08)";

/// What a pattern's message would answer, and when it is due: the harness's request with
/// the id the pattern names (`id`), or (for an error without an id, the answer to an
/// unreadable line) the last line the case sent.
fn subject(
    ledger: &Ledger,
    transcript: &Transcript,
    pattern: &Value,
    id: Option<&Value>,
) -> (Option<usize>, Due) {
    if let Some(request) = id.and_then(|id| ledger.sent(id)) {
        return (Some(request.index), request.due);
    }
    let unreadable = pattern.get("error").is_some()
        && pattern.get("method").is_none()
        && pattern.get("id").is_none_or(Value::is_null);
    if unreadable {
        let last = transcript
            .iter()
            .rposition(|e| e.direction == Direction::Sent && !e.internal);
        return (last, Due::AtOnce);
    }
    (None, Due::Unknown)
}

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// An expected line: waits for the first unmatched message that matches. Meanwhile the
    /// pattern is what the steps await, so a client's request that matches it is left to the
    /// case rather than answered by the harness.
    pub(crate) async fn expect(&mut self, line: usize, text: &str) -> Result<(), Stop> {
        // The expected line's pattern, with loop variables filled in.
        let pattern = pattern::fill_pattern(text, self.step.captures()).map_err(|e| {
            self.step.at(line);
            self.finding(
                Severity::Fail,
                FindingKind::CaseBug,
                format!(
                    "bug in case: the expected message is not JSON after filling in variables: {e}"
                ),
            );
            Stop::Hung
        })?;
        self.step.await_pattern(pattern.clone());
        let done = self.expect_pattern(line, pattern).await;
        self.step.awaited();
        done
    }

    async fn expect_pattern(&mut self, line: usize, mut pattern: Value) -> Result<(), Stop> {
        let id = self.step.concrete_id(&pattern);
        let mapped = id
            .as_ref()
            .and_then(|id| self.ledger.sent(id))
            .is_some_and(|r| r.mapped);
        if mapped && pattern.get("result").is_some() {
            // A target's own tool stands in for the role: its result is its business.
            pattern["result"] = json!("{object}");
        }
        let (subject, due) = subject(&self.ledger, &self.transcript, &pattern, id.as_ref());
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
                self.transcript.show_channel(index, channel);
                self.arrived(line, at);
                return Ok(());
            }
            if let Some(done) = self.answered_otherwise(line, &pattern, id.as_ref(), from) {
                return done;
            }
            if let Some(stop) = self.stopped(Why::Step).await {
                return Err(stop);
            }
            let (deadline, ran) = self.answer_deadline(began, subject, due);
            let started = self.io.started();
            let deadline = self
                .step
                .arrival_deadline(deadline, started, |d| self.clock.stretched(d));
            let tick = self.patience().tick(deadline, Duration::from_millis(250));
            // A wait ends only once the harness has caught up with what the target wrote.
            let got = self.next(tick).await;
            if !got {
                if let Some(stop) = self.stopped(Why::Silence).await {
                    return Err(stop);
                }
                if self.io.finished() {
                    let session = self.streams.session();
                    let candidate = self
                        .transcript
                        .candidate_for(&pattern, id.as_ref(), session);
                    return self.mismatch(line, &pattern, candidate, ran);
                }
            }
            let ran = match self.patience().state(deadline, &mut past) {
                Wait::On => None,
                Wait::Quiet => Some(ran),
                Wait::Talking(talked) => Some(Ran::Talking(Box::new(ran), talked)),
            };
            if let Some(ran) = ran {
                return self.waited_out(line, &pattern, id.as_ref(), ran);
            }
            self.probe_if_due(began, subject, due).await;
        }
    }

    /// The wait for `pattern` is over without a match: a mismatch against the closest
    /// candidate, or, over HTTP, a skip where progress for a request answered as JSON had no
    /// stream to come on (judged only once the wait is over: a server may upgrade a request
    /// to SSE with its first progress, and a server may send no progress, PRG-08).
    fn waited_out(
        &mut self,
        line: usize,
        pattern: &Value,
        id: Option<&Value>,
        ran: Ran,
    ) -> Result<(), Stop> {
        let progress =
            pattern.get("method").and_then(Value::as_str) == Some("notifications/progress");
        if progress
            && self
                .expected_channel(pattern)
                .is_some_and(|c| self.streams.no_stream_for_progress(c))
        {
            return Err(Stop::Skip(NO_PROGRESS_STREAM.into()));
        }
        let session = self.streams.session();
        let candidate = self.transcript.candidate_for(pattern, id, session);
        self.mismatch(line, pattern, candidate, ran)
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
        let session = self.streams.session();
        if let Some(index) = self.transcript.response_with_id(id, from, session) {
            return Some(self.mismatch(line, pattern, Some(index), ran));
        }
        if self
            .ledger
            .sent(id)
            .and_then(|r| self.streams.unanswerable(r))
            .is_some()
        {
            let candidate = self.transcript.candidate_for(pattern, Some(id), session);
            return Some(self.mismatch(line, pattern, candidate, ran));
        }
        None
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
        let severity = self.played.severity();
        let Some(index) = candidate else {
            let is_response = pattern.get("result").is_some() || pattern.get("error").is_some();
            let what = if is_response {
                "no response"
            } else {
                "no message"
            };
            let mut why = S::absence(self);
            let unanswerable = pattern.get("id").and_then(|id| self.ledger.sent(id));
            if let Some(reason) = unanswerable.and_then(|r| self.streams.unanswerable(r)) {
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
        let value = self.transcript.message(index);
        let diff = pattern::first_difference(pattern, value, self.step.captures())
            .map(|d| d.to_string())
            .unwrap_or_default();
        let shown = canonical(&pattern::normalize(pattern, value, self.step.captures()));
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
