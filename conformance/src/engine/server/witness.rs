//! `! witness`: did the work stop? Asks the `cancellations` fixture until the answer is
//! certain, as long as a proof and the target's own CPU waits allow.

use super::super::proof;
use super::super::{Engine, Stop};
use super::ServerTarget;
use crate::case::{Step, StepKind};
use crate::fixtures;
use crate::outcome::Severity;
use crate::pattern::{self, canonical};
use crate::requirement::Req;
use crate::rules::envelope::short;
use crate::transport::Transport;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// Stopping work on a cancel is a SHOULD (CAN-05): at most a warning, whatever the case.
pub(super) fn witness_severity<T: Transport>(e: &Engine<'_, T, ServerTarget>) -> Severity {
    e.case_severity().min(Severity::Warn)
}

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
    if e.played
        .options()
        .fixtures
        .as_ref()
        .is_some_and(|f| !f.has("cancellations"))
    {
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
        return Ok(());
    }
    let reply = e.clock.stretched(e.played.options().reply_timeout);
    let deadline = Instant::now() + reply;
    let mut pause = Duration::from_millis(2);
    loop {
        let asked = e.now();
        let answer = ask(e).await?;
        let Some(all) = fixtures::witness_list(&answer) else {
            e.rule(
                witness_severity(e),
                Req::Can05,
                format!("the `cancellations` fixture did not answer with a JSON array in a text item: {}", short(&answer)),
            );
            return Ok(());
        };
        // On a running server, only what it listed since the case opened is this case's.
        let (listed_ids, earlier) = match &e.side.witness_before {
            Some(before) => {
                let since = fixtures::witness_since(before, &all);
                let earlier = all.len() - since.len();
                (
                    since,
                    format!(" since the case opened, beyond {earlier} entries of earlier cases"),
                )
            }
            None => (all, String::new()),
        };
        if !listed {
            let stopped: Vec<String> = ids
                .iter()
                .filter(|id| listed_ids.iter().any(|l| pattern::json_equal(l, id)))
                .map(canonical)
                .collect();
            let (tasks, stopped): (Vec<String>, Vec<String>) =
                stopped.into_iter().partition(|id| {
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
            return Ok(());
        }
        // A request answered before its cancel was read had nothing left to stop.
        let missing: Vec<&Value> = ids
            .iter()
            .filter(|id| !listed_ids.iter().any(|l| pattern::json_equal(l, id)))
            .filter(|id| e.ledger.sent(id).is_none_or(|r| r.answers == 0))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        // When a question asked now would settle each missing id: a grace after the proof that
        // its cancel was read (`None`: nothing proves it was).
        // The latest of the proofs, and the grace after it (grown by the time lost to load).
        let proof = missing
            .iter()
            .map(|id| cancel_proof(e, id))
            .collect::<Option<Vec<_>>>()
            .and_then(|p| p.into_iter().max_by_key(|(read, grace)| *read + *grace));
        let grace = proof.map_or(e.calm_grace(), |(_, grace)| grace);
        let settled_at = proof.map(|(read, grace)| read + grace);
        let settled = settled_at.is_some_and(|at| asked >= at);
        if settled || Instant::now() >= deadline {
            // A stream closed before its request showed it had arrived may have been closed
            // before the server started the work: then there was nothing to stop, and the
            // witness cannot tell the two apart.
            let (unseen, missing): (Vec<&Value>, Vec<&Value>) =
                missing.into_iter().partition(|id| {
                    e.ledger
                        .sent(id)
                        .and_then(|r| r.cancel)
                        .and_then(|m| m.closed)
                        .is_some_and(|closed| !closed.arrived)
                });
            // Nor had one whose tool could have ended on its own before its cancel was read,
            // answered or not: a server may drop the response of a request cancelled after its
            // handler returned (rmcp does), and its handler never saw the cancel (CAN-09).
            let (ended, missing): (Vec<&Value>, Vec<&Value>) = missing
                .into_iter()
                .partition(|id| ended_on_its_own(e, id).is_some());
            for id in ended {
                let why = ended_on_its_own(e, id).unwrap_or_default();
                e.rule(
                    Severity::Note,
                    Req::Can08,
                    format!(
                        "the server's witness does not list request {}, but {why}: its work may have ended before the cancel was read, leaving nothing to stop (CAN-09); the timing cannot tell",
                        canonical(id)
                    ),
                );
            }
            if !unseen.is_empty() {
                let unseen: Vec<String> = unseen.iter().map(|v| canonical(v)).collect();
                e.rule(
                    Severity::Note,
                    Req::Can05,
                    format!(
                        "the server's witness does not list request {}, but nothing had shown the request arrived (no response head, nothing on its stream) when the harness closed its stream: the server may never have started the work, so the timing cannot tell whether it stopped",
                        unseen.join(", ")
                    ),
                );
            }
            if missing.is_empty() {
                return Ok(());
            }
            let why = if settled {
                format!(
                    "asked {} ms after the target had certainly read the cancel (a grace of {} ms{})",
                    proof
                        .map(|(read, _)| asked.saturating_sub(read).as_millis())
                        .unwrap_or_default(),
                    grace.as_millis(),
                    proof::stretched_from(grace, e.calm_grace())
                )
            } else {
                format!("asked for {reply:?}")
            };
            let (tasks, missing): (Vec<&Value>, Vec<&Value>) = missing
                .into_iter()
                .partition(|id| e.ledger.task_named(id).is_some());
            if !tasks.is_empty() {
                let tasks: Vec<String> = tasks.iter().map(|v| canonical(v)).collect();
                e.rule(
                    witness_severity(e),
                    e.task_cancel_rule(),
                    format!(
                        "the server's witness does not list task {}: its work never observed `tasks/cancel`, so it did not stop ({why}; listed: {})",
                        tasks.join(", "),
                        canonical(&Value::Array(listed_ids.clone()))
                    ),
                );
            }
            if missing.is_empty() {
                return Ok(());
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

/// When the target had certainly read the cancel of `id`, and the grace after it: for a task,
/// the answer to its `tasks/cancel`; for a request, the proof of its cancel. `None`: nothing
/// proves it was read.
fn cancel_proof<T: Transport>(
    e: &Engine<'_, T, ServerTarget>,
    id: &Value,
) -> Option<(Duration, Duration)> {
    if let Some(task) = e.ledger.task_named(id) {
        let (at, waited) = task.cancel_answered?;
        return Some((at, e.grace_after(waited)));
    }
    let mark = e.ledger.sent(id).and_then(|r| r.cancel)?;
    Some((e.read_by(&mark)?, e.grace_after(mark.waited)))
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
    let absent = e
        .played
        .options()
        .fixtures
        .as_ref()
        .is_some_and(|f| !f.has("cancellations"));
    if e.io.fresh() || absent || !asks_witness(steps) {
        return Ok(());
    }
    let answer = ask(e).await?;
    // An answer of another shape is judged when a step asks.
    e.side.witness_before = fixtures::witness_list(&answer);
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

/// Calls the `cancellations` fixture and waits for its answer.
async fn ask<T: Transport>(e: &mut Engine<'_, T, ServerTarget>) -> Result<Value, Stop> {
    let id = e.proofs.next_id("witness");
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "cancellations", "arguments": {}}});
    e.request_internal(call, Req::Can11).await
}

/// Why a request the witness does not list may have had nothing left to stop when its cancel
/// was read: its tool (a `sleep`) could have ended on its own by then, as the response rules
/// judge a response that crossed its cancel (CAN-09). `None` when the cancel was certainly read
/// before the tool's end, or the tool's end is unknown.
fn ended_on_its_own<T: Transport>(e: &Engine<'_, T, ServerTarget>, id: &Value) -> Option<String> {
    let request = e.ledger.sent(id)?;
    let end = request.natural_end?;
    let mark = request.cancel?;
    let ms = |d: Duration| d.as_millis();
    if mark.sent >= end {
        return Some(format!(
            "its cancel was sent at +{} ms, when the tool could already have finished (+{} ms)",
            ms(mark.sent),
            ms(end)
        ));
    }
    let read = e.read_by(&mark)?;
    if read >= end {
        return Some(format!(
            "the proof that its cancel was read came at +{} ms, after the tool could have finished (+{} ms)",
            ms(read),
            ms(end)
        ));
    }
    let lost = e.lost_since(mark.waited)?;
    (read + lost >= end).then(|| {
        format!(
            "the target had read its cancel {} ms before the tool could have finished, but its processes waited {} ms for a CPU since, so its handler may not have run before the tool's end",
            ms(end - read),
            ms(lost)
        )
    })
}
