//! What the witness's answer shows, once it is in: the ids it lists that no cancel was sent
//! for (`! witness not`), the ids it does not list that it cannot judge (each with a note),
//! and the ids whose work did not stop on the cancel. The question is asked in `witness`.

use super::super::proof;
use super::super::Engine;
use super::ServerTarget;
use crate::facts::waits::proved_by_time;
use crate::outcome::{Doubt, Severity};
use crate::pattern::{self, canonical};
use crate::requirement::Req;
use crate::rules::envelope::Problem;
use crate::transport::Transport;
use serde_json::Value;
use std::time::Duration;

/// `! witness not`: the ids the witness lists observed a cancellation the harness never
/// sent, a task's (TSK-03) or a request's (HTTP-10).
pub(super) fn listed_unasked<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    ids: &[Value],
    listed_ids: &[Value],
    earlier: &str,
) {
    let stopped: Vec<String> = ids
        .iter()
        .filter(|id| listed_ids.iter().any(|l| pattern::json_equal(l, id)))
        .map(canonical)
        .collect();
    let (tasks, stopped): (Vec<String>, Vec<String>) = stopped.into_iter().partition(|id| {
        e.ledger
            .task_named(&serde_json::from_str(id).unwrap_or_default())
            .is_some()
    });
    if !tasks.is_empty() {
        e.rule(
            witness_severity(e),
            Req::Tsk03,
            format!(
                "the server's witness lists task {}: its work observed a cancellation, yet the harness sent no `tasks/cancel` for it (tasks are cancelled only with `tasks/cancel`, CAN-15)",
                tasks.join(", ")
            ),
        );
    }
    if !stopped.is_empty() {
        e.rule(
            witness_severity(e),
            Req::Http10,
            format!(
                "the server's witness lists request {}{earlier}: its handler observed a cancellation the harness never sent (a closed stream is no cancel up to 2025-11-25, AMB-24)",
                stopped.join(", ")
            ),
        );
    }
}

/// Takes from the missing ids those the witness cannot judge, each with a note: a request
/// whose stream closed before anything showed it arrived (the server may never have started
/// the work), and one whose tool could have ended on its own before its cancel was read
/// (answered or not: a server may drop the response of a request cancelled after its
/// handler returned, and its handler never saw the cancel, CAN-09). Returns the rest.
pub(super) fn excused<'i, T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    missing: Vec<&'i Value>,
) -> Vec<&'i Value> {
    let (unseen, missing): (Vec<&Value>, Vec<&Value>) = missing.into_iter().partition(|id| {
        e.ledger
            .sent(id)
            .and_then(|r| r.cancel)
            .and_then(|m| m.closed)
            .is_some_and(|closed| !closed.arrived)
    });
    let (ended, missing): (Vec<&Value>, Vec<&Value>) = missing
        .into_iter()
        .partition(|id| ended_on_its_own(e, id).is_some());
    for id in ended {
        let (why, doubt) = ended_on_its_own(e, id).unwrap_or_default();
        let message = format!(
            "the server's witness does not list request {}, but {why}: its work may have ended before the cancel was read, leaving nothing to stop (CAN-09); the timing cannot tell",
            canonical(id)
        );
        let note = Problem::new(Severity::Note, Req::Can08, message);
        e.problems([match doubt {
            Some(doubt) => note.doubting(doubt),
            None => note,
        }]);
    }
    if !unseen.is_empty() {
        let unseen: Vec<String> = unseen.iter().map(|v| canonical(v)).collect();
        let message = format!(
            "the server's witness does not list request {}, but nothing had shown the request arrived (no response head, nothing on its stream) when the harness closed its stream: the server may never have started the work, so the timing cannot tell whether it stopped",
            unseen.join(", ")
        );
        e.problems([Problem::new(Severity::Note, Req::Can05, message).doubting(Doubt::Unarrived)]);
    }
    missing
}

/// The last question asked of the witness, and why its answer is final.
pub(super) struct Question {
    /// When it was asked (since the target started).
    pub(super) asked: Duration,
    /// The latest proof that a missing id's cancel was read, and the grace after it.
    pub(super) proof: Option<(Duration, Duration)>,
    /// Whether it was asked a grace after that proof; else the reply timeout ran out.
    pub(super) settled: bool,
    /// The reply timeout, stretched for the machine's CPU pressure.
    pub(super) reply: Duration,
}

/// Why the answer to `question` is final, for the finding.
fn why_final<T: Transport>(e: &Engine<'_, T, ServerTarget>, question: &Question) -> String {
    if !question.settled {
        return format!("asked for {:?}", question.reply);
    }
    let grace = question.proof.map_or(e.calm_grace(), |(_, grace)| grace);
    format!(
        "asked {} ms after the target had certainly read the cancel (a grace of {} ms{})",
        question
            .proof
            .map(|(read, _)| question.asked.saturating_sub(read).as_millis())
            .unwrap_or_default(),
        grace.as_millis(),
        proof::stretched_from(grace, e.calm_grace())
    )
}

/// The ids the witness does not list, once its answer is final: their work did not stop on
/// the cancel, a task's (its era's task rule) or a request's (CAN-05).
pub(super) fn unstopped<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    missing: Vec<&Value>,
    question: &Question,
    listed_ids: Vec<Value>,
    earlier: &str,
) {
    let why = why_final(e, question);
    let (tasks, missing): (Vec<&Value>, Vec<&Value>) = missing
        .into_iter()
        .partition(|id| e.ledger.task_named(id).is_some());
    if !tasks.is_empty() {
        let tasks: Vec<String> = tasks.iter().map(|v| canonical(v)).collect();
        e.rule(
            witness_severity(e),
            crate::rules::tasks::cancel_rule(e.protocol()),
            format!(
                "the server's witness does not list task {}: its work never observed `tasks/cancel`, so it did not stop ({why}; listed: {})",
                tasks.join(", "),
                canonical(&Value::Array(listed_ids.clone()))
            ),
        );
    }
    if missing.is_empty() {
        return;
    }
    let missing: Vec<String> = missing.iter().map(|v| canonical(v)).collect();
    e.rule(
        witness_severity(e),
        Req::Can05,
        format!(
            "the server's witness does not list request {}: its handler never observed the cancellation, so the work did not stop ({why}; listed{earlier}: {})",
            missing.join(", "),
            canonical(&Value::Array(listed_ids))
        ),
    );
}

/// Why a request the witness does not list may have had nothing left to stop when its cancel
/// was read: its tool (a `sleep`) could have ended on its own by then, as the response rules
/// judge a response that crossed its cancel (CAN-09). `None` when the cancel was certainly read
/// before the tool's end, or the tool's end is unknown.
fn ended_on_its_own<T: Transport>(
    e: &Engine<'_, T, ServerTarget>,
    id: &Value,
) -> Option<(String, Option<Doubt>)> {
    let request = e.ledger.sent(id)?;
    let end = request.natural_end?;
    let mark = request.cancel?;
    let ms = |d: Duration| d.as_millis();
    if mark.sent >= end {
        return Some((
            format!(
                "its cancel was sent at +{} ms, when the tool could already have finished (+{} ms)",
                ms(mark.sent),
                ms(end)
            ),
            None,
        ));
    }
    let read = e.waits_if(proved_by_time(&mark)).read_by(&mark)?;
    if read >= end {
        return Some((
            format!(
                "the proof that its cancel was read came at +{} ms, after the tool could have finished (+{} ms)",
                ms(read),
                ms(end)
            ),
            None,
        ));
    }
    let lost = e.waits().lost_since(mark.waited)?;
    (read + lost >= end).then(|| {
        let why = format!(
            "the target had read its cancel {} ms before the tool could have finished, but its processes waited {} ms {}",
            ms(end.saturating_sub(read)),
            ms(lost),
            crate::rules::server::cancel::WAITED_PAST_END
        );
        (why, Some(Doubt::WaitedPastEnd))
    })
}

/// Stopping work on a cancel is a SHOULD (CAN-05): at most a warning, whatever the case.
pub(super) fn witness_severity<T: Transport>(e: &Engine<'_, T, ServerTarget>) -> Severity {
    e.played.severity().min(Severity::Warn)
}
