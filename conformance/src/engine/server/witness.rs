//! `! witness`: did the work stop? Asks the `cancellations` fixture until the answer is
//! certain, as long as a proof and the target's own CPU waits allow.

use super::super::{Engine, Stop};
use super::witnessed::{excused, listed_unasked, unstopped, witness_severity, Question};
use super::ServerTarget;
use crate::case::{Step, StepKind};
use crate::engine::parts::clock;
use crate::facts::waits::proved_by_time;
use crate::fixtures::{self, Role};
use crate::outcome::Severity;
use crate::pattern::{self, canonical};
use crate::requirement::Req;
use crate::rules::envelope::short;
use crate::transport::Transport;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::time::Instant as Deadline;

/// `! witness ID…`: asks the `cancellations` fixture which requests saw their cancellation. A
/// handler may record its cancellation a moment after the cancel was read, so the question is
/// repeated until every id is listed, or until nothing more can be hoped for: a handler records
/// its cancel soon after the cancel was read or never, so once a question asked a grace after
/// the proof that an id's cancel was read still does not list it, that is the answer (without
/// such a proof, `--reply-timeout` decides). The grace grows by the time the target waited for
/// a CPU since the proof; the reply timeout is stretched by the machine's CPU pressure.
/// `! witness not ID…` (`listed` false) asks once: none of the ids may be listed, their work
/// goes on.
pub(super) async fn witness<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    ids: &[Value],
    listed: bool,
) -> Result<(), Stop> {
    if no_fixture(e, ids, listed) {
        return Ok(());
    }
    let reply = e.clock.stretched(e.played.options().reply_timeout);
    let deadline = clock::now() + reply;
    let mut pause = Duration::from_millis(2);
    loop {
        let asked = e.now();
        let answer = ask(e).await?;
        let Some(all) = fixtures::witness_list(e.transcript.message(answer)) else {
            let shown = short(e.transcript.message(answer));
            e.rule(
                witness_severity(e),
                Req::Can05,
                format!("the `cancellations` fixture did not answer with a JSON array in a text item: {shown}"),
            );
            return Ok(());
        };
        let (listed_ids, earlier) = this_cases(e, all);
        if !listed {
            listed_unasked(e, ids, &listed_ids, &earlier);
            return Ok(());
        }
        note_listed(e, ids, &listed_ids, answer);
        let missing = missing(e, ids, &listed_ids);
        if missing.is_empty() {
            return Ok(());
        }
        let proof = latest_proof(e, &missing);
        let settled_at = proof.map(|(read, grace)| read + grace);
        let settled = settled_at.is_some_and(|at| asked >= at);
        if settled || clock::now() >= deadline {
            let missing = excused(e, missing);
            if !missing.is_empty() {
                let question = Question {
                    asked,
                    proof,
                    settled,
                    reply,
                };
                unstopped(e, missing, &question, listed_ids, &earlier);
            }
            return Ok(());
        }
        // Ask again, less and less often (a handler records its cancel soon or never), and
        // at the latest when the answer would settle it.
        pause = (pause * 2).min(Duration::from_millis(200));
        let mut next = Deadline::now() + pause;
        if let Some(at) = settled_at {
            next = next.min(Deadline::from_std(e.io.started() + at));
        }
        e.pump_until(next).await;
    }
}

/// Without the `cancellations` fixture (a target file says the target lacks it), a note
/// says what is judged instead; true when so.
fn no_fixture<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    ids: &[Value],
    listed: bool,
) -> bool {
    let absent = e.played.lacks_fixture(Role::Cancellations);
    if !absent {
        return false;
    }
    let ids: Vec<String> = ids.iter().map(canonical).collect();
    let message = if listed {
        format!(
            "no witness fixture: whether request {} stopped working is judged only on what \
             can be observed (no response after the barrier, progress stopped, the server \
             still answers)",
            ids.join(", ")
        )
    } else {
        format!(
            "no witness fixture: whether request {} kept working cannot be observed",
            ids.join(", ")
        )
    };
    e.rule(Severity::Note, Req::Can05, message);
    true
}

/// What the witness lists of this case: on a running server, only what it listed since the
/// case opened, and the words that say so.
fn this_cases<T: Transport>(
    e: &Engine<'_, T, ServerTarget>,
    all: Vec<Value>,
) -> (Vec<Value>, String) {
    match &e.side.witness_before {
        Some(before) => {
            let since = fixtures::witness_since(before, &all);
            let earlier = all.len() - since.len();
            (
                since,
                format!(" since the case opened, beyond {earlier} entries of earlier cases"),
            )
        }
        None => (all, String::new()),
    }
}

/// The ledger keeps when the witness's answer at transcript index `answer` listed each of
/// `ids` it lists, for the reports' cancel-to-witness times.
fn note_listed<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    ids: &[Value],
    listed_ids: &[Value],
    answer: usize,
) {
    let at = e.transcript[answer].at;
    for id in ids {
        if listed_ids.iter().any(|l| pattern::json_equal(l, id)) {
            e.ledger.witnessed(id, at);
        }
    }
}

/// The ids the witness does not list, but for requests answered before their cancel was
/// read: those had nothing left to stop.
fn missing<'i, T: Transport>(
    e: &Engine<'_, T, ServerTarget>,
    ids: &'i [Value],
    listed_ids: &[Value],
) -> Vec<&'i Value> {
    ids.iter()
        .filter(|id| !listed_ids.iter().any(|l| pattern::json_equal(l, id)))
        .filter(|id| e.ledger.sent(id).is_none_or(|r| r.answers == 0))
        .collect()
}

/// The latest of the proofs that the missing ids' cancels were read, and the grace after it
/// (grown by the time lost to load): a question asked then settles each of them. `None`:
/// nothing proves one of them was read.
fn latest_proof<T: Transport>(
    e: &Engine<'_, T, ServerTarget>,
    missing: &[&Value],
) -> Option<(Duration, Duration)> {
    missing
        .iter()
        .map(|id| cancel_proof(e, id))
        .collect::<Option<Vec<_>>>()
        .and_then(|p| p.into_iter().max_by_key(|(read, grace)| *read + *grace))
}

/// When the target had certainly read the cancel of `id`, and the grace after it: for a task,
/// the answer to its `tasks/cancel`; for a request, the proof of its cancel. `None`: nothing
/// proves it was read.
fn cancel_proof<T: Transport>(
    e: &Engine<'_, T, ServerTarget>,
    id: &Value,
) -> Option<(Duration, Duration)> {
    if let Some(task) = e.ledger.task_named(id) {
        let (at, waited) = task.cancel_answered?;
        return Some((at, e.waits().grace_after(waited)));
    }
    let mark = e.ledger.sent(id).and_then(|r| r.cancel)?;
    let read = e.waits_if(proved_by_time(&mark)).read_by(&mark)?;
    Some((read, e.waits().grace_after(mark.waited)))
}

/// On a running server the harness did not start for this case, what the `cancellations`
/// witness lists when the case opens: the requests of earlier cases, whose ids this case
/// reuses. `! witness` and `! witness not` then judge only what it lists beyond that, so an
/// earlier case's request 1 neither satisfies `! witness 1` nor breaks `! witness not 1`.
/// Asked once, by a case with a witness step; a server started for the case has nothing to
/// remember.
pub(super) async fn remember_witness<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    steps: &[Step],
) -> Result<(), Stop> {
    let absent = e.played.lacks_fixture(Role::Cancellations);
    if e.io.fresh() || absent || !asks_witness(steps) {
        return Ok(());
    }
    let answer = ask(e).await?;
    // An answer of another shape is judged when a step asks.
    e.side.witness_before = fixtures::witness_list(e.transcript.message(answer));
    Ok(())
}

/// Whether any of `steps` (within loops too) asks the witness.
fn asks_witness(steps: &[Step]) -> bool {
    steps.iter().any(|step| {
        matches!(step.kind, StepKind::Witness(_) | StepKind::Unwitnessed(_))
            || step
                .kind
                .rounds()
                .is_some_and(|(inner, _)| asks_witness(inner))
    })
}

/// Calls the `cancellations` fixture and waits for its answer (its transcript index).
async fn ask<T: Transport>(e: &mut Engine<'_, T, ServerTarget>) -> Result<usize, Stop> {
    let id = e.proofs.next_id("witness");
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "cancellations", "arguments": {}}});
    e.request_internal(&call, Req::Can11).await
}
