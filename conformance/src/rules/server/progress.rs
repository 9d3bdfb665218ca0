//! Progress a server reports: only for a token a request in flight carries (PRG-06), with a
//! numeric `progress` (PRG-02) that increases within a stream (PRG-03, AMB-07), never after the
//! request's response (PRG-07), and nothing after the proof that its cancel was read (CAN-05),
//! unless flight or load explains it (CAN-08, judged once the case has ended). A request
//! answered with a `CreateTaskResult` (2025-11-25) lends its token to the task it created:
//! that progress is the task's rule's (PRG-10, `rules::tasks`), and only its values are
//! judged here.

use super::{after_cancel_rule, after_cancel_severity};
use crate::era::ProtocolVersion;
use crate::exchange::Channel;
use crate::facts::ledger::{LateProgress, Ledger, SentRequest};
use crate::facts::waits::Waits;
use crate::outcome::Severity;
use crate::pattern::canonical;
use crate::requirement::Req;
use crate::rules::envelope::Problem;
use serde_json::Value;
use std::time::Duration;

/// What is known when a progress notification comes.
#[derive(Debug, Clone, Copy)]
pub struct ProgressFacts<'a> {
    /// Its `params`.
    pub params: Option<&'a Value>,
    /// The channel it came on.
    pub channel: Channel,
    /// When it came, since the target started.
    pub at: Duration,
    /// The case line being carried out.
    pub line: usize,
    /// The request its token names (its ledger key and entry), if a request carries it.
    pub request: Option<(&'a str, &'a SentRequest)>,
    /// The clock, read when it came.
    pub waits: Waits,
    /// Whether the request was answered with a task its progress now belongs to, which the
    /// task's own rule judged (PRG-10): not progress after a response, and no cancel of the
    /// request to answer to, but its values are still judged.
    pub task: bool,
}

/// What a progress notification makes of its request's ledger entry, and what was wrong.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProgressVerdict {
    /// The findings, in order.
    pub problems: Vec<Problem>,
    /// Whether it counts as progress for the request (its token names one).
    pub counted: bool,
    /// A progress after the proof that the request's cancel was read, to judge at the end.
    pub late: Option<LateProgress>,
    /// Its numeric value, to compare the next one with.
    pub value: Option<f64>,
}

/// A progress notification as it came, before the ledger is asked what it is about.
#[derive(Debug, Clone, Copy)]
pub struct Arrived<'a> {
    /// Its `params`.
    pub params: Option<&'a Value>,
    /// The channel it came on.
    pub channel: Channel,
    /// When it came, since the target started.
    pub at: Duration,
    /// The line being carried out (a case's, or a trace's).
    pub line: usize,
    /// Whether the version has tasks in its core (2025-11-25): a request answered with a
    /// task lends its token to the task.
    pub core: bool,
}

/// What [`progress_in`] found: the findings (the task's rule's first), the ledger key of
/// the request the token names, and the verdict to apply to that request's entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProgressJudged {
    /// The findings, in order.
    pub problems: Vec<Problem>,
    /// The key of the request its token names, if one does.
    pub key: Option<String>,
    /// What it makes of that request's entry.
    pub verdict: ProgressVerdict,
}

/// Judges one progress notification against the requests of `ledger` (its token scoped as
/// `scope`). Progress for the token of a request answered with a task is the task's
/// (2025-11-25): its own rule judges it first (PRG-10), then only its values are judged.
/// `waits(needed)` reads the clock, the target's CPU waits only where `needed`.
pub fn progress_in(
    ledger: &Ledger,
    scope: Option<&str>,
    arrived: &Arrived,
    waits: impl Fn(bool) -> Waits,
) -> ProgressJudged {
    let token = arrived.params.and_then(|p| p.get("progressToken"));
    let key = token.and_then(|t| ledger.token_in(scope, t)).cloned();
    let answered = key
        .as_ref()
        .and_then(|k| ledger.request(k))
        .is_some_and(|r| r.answers > 0);
    let record = key
        .as_deref()
        .filter(|_| answered && arrived.core)
        .and_then(|k| Some((k, ledger.task_of(k)?)));
    let mut problems = vec![];
    if let Some((key, record)) = record {
        let clock = waits(record.terminal.is_some());
        problems.extend(crate::rules::tasks::progress_of_task(
            key, arrived.at, record, &clock,
        ));
    }
    let request = key.as_deref().and_then(|k| Some((k, ledger.request(k)?)));
    let proved = request.is_some_and(|(_, r)| r.cancel.is_some_and(|m| m.read.is_some()));
    let verdict = progress(&ProgressFacts {
        params: arrived.params,
        channel: arrived.channel,
        at: arrived.at,
        line: arrived.line,
        request,
        waits: waits(proved),
        task: record.is_some(),
    });
    problems.extend(verdict.problems.iter().cloned());
    ProgressJudged {
        problems,
        key,
        verdict,
    }
}

/// Judges one progress notification.
pub fn progress(facts: &ProgressFacts) -> ProgressVerdict {
    let token = facts.params.and_then(|p| p.get("progressToken"));
    let Some((key, request)) = facts.request else {
        let shown = token.map(canonical).unwrap_or_else(|| "none".into());
        return ProgressVerdict {
            problems: vec![Problem::new(
                Severity::Fail,
                Req::Prg06,
                format!("progress for token {shown}, which no request in flight carries"),
            )],
            ..ProgressVerdict::default()
        };
    };
    let mut verdict = ProgressVerdict {
        counted: true,
        ..ProgressVerdict::default()
    };
    if request.answers > 0 {
        // A task's progress is its own rule's (PRG-10): only its values are judged here.
        if !facts.task {
            verdict.problems.push(Problem::new(
                Severity::Fail,
                Req::Prg07,
                format!("progress for request {key} after its response; progress must stop when the operation completes"),
            ));
        }
    } else if let Some(mark) = request.cancel {
        if let Some(read) = facts.waits.read_by(&mark).filter(|read| *read <= facts.at) {
            verdict.late = Some(after_proof(facts, request, read, &mark));
        }
    }
    let Some(value) = facts
        .params
        .and_then(|p| p.get("progress"))
        .and_then(Value::as_f64)
    else {
        verdict.problems.push(Problem::new(
            Severity::Fail,
            Req::Prg02,
            format!("progress for request {key} without a numeric `progress`"),
        ));
        return verdict;
    };
    verdict.value = Some(value);
    // Progress is compared within one stream only: across HTTP streams, arrival order is not
    // send order (AMB-07).
    let last = request
        .last_progress
        .filter(|(_, on)| *on == facts.channel)
        .map(|(prev, _)| prev);
    match last {
        Some(prev) if value < prev => verdict.problems.push(Problem::new(
            Severity::Fail,
            Req::Prg03,
            format!("progress for request {key} went down from {prev} to {value}; it must increase"),
        )),
        Some(prev) if value == prev => verdict.problems.push(Problem::new(
            Severity::Warn,
            Req::Prg03,
            format!("progress for request {key} repeated {value}; it must increase with every notification"),
        )),
        _ => {}
    }
    verdict
}

/// A progress that came after the proof (at `read`) that its request's cancel was read: judged
/// once the case has ended (see [`late_progress`]), since whether load or flight explains it
/// depends on whether more came after.
///
/// The first is explained when it came within a grace of the proof (longer by the target's
/// CPU waits since). A later one is explained by a handler that was kept from running while
/// the cancel travelled (ticks it owed piled up): the target's CPU waits since the cancel was
/// sent. A ticker behind its own schedule (ticks due before the proof, not yet sent) may send
/// what it owed before it looks at its cancel again: at once, as a burst within that grace.
/// Progress that goes on coming after that is not a backlog, however many ticks the schedule
/// says were due (a tool that ignores the ticker's interval owes nothing).
fn after_proof(
    facts: &ProgressFacts,
    request: &SentRequest,
    read: Duration,
    mark: &crate::facts::ledger::CancelMark,
) -> LateProgress {
    let waits = &facts.waits;
    let after = facts.at.saturating_sub(read);
    let seen = request.progress_seen + 1;
    let within_grace = after < waits.grace_after(mark.waited);
    let owed = within_grace
        && request.tick.is_some_and(|tick| {
            let due = read.saturating_sub(request.sent).as_micros() / tick.as_micros().max(1);
            u128::from(seen) <= due + 1
        });
    let explained = if request.after_proof.is_empty() {
        within_grace
    } else {
        owed || waits
            .lost_since(mark.sent_waited)
            .is_some_and(|lost| after < lost)
    };
    LateProgress {
        line: facts.line,
        after,
        explained,
    }
}

/// Progress that came after the proof that its request's cancel was read, judged once
/// nothing more will come (see [`late_progress`]), over every request of `ledger`, with the
/// line each came at; `version_of` says the version each request (by key) was sent in. A
/// live run and a checked trace both end with it.
pub fn late_progress_in(
    ledger: &Ledger,
    waits: &Waits,
    version_of: impl Fn(&str) -> Option<ProtocolVersion>,
) -> Vec<(usize, Problem)> {
    let mut late: Vec<(&str, &SentRequest)> = ledger
        .sent_requests()
        .iter()
        .filter(|(_, r)| !r.after_proof.is_empty())
        .map(|(key, r)| (key.as_str(), r))
        .collect();
    if late.is_empty() {
        return vec![];
    }
    late.sort_by(|a, b| a.0.cmp(b.0));
    // Each request is judged on its own, at its own version.
    late.into_iter()
        .flat_map(|one| late_progress(&[one], waits, version_of(one.0)))
        .collect()
}

/// Progress that came after the proof that its request's cancel was read, once nothing more
/// will come: `late` lists each such request (ledger key, entry) in key order. A server that
/// writes from several tasks does not keep order: the first message right after the proof may
/// have been produced before the cancel was read. A handler kept from running by a busy machine
/// may also not have seen the cancel yet when it runs again, and send a few more before it
/// does. When every such message is explained so (see `after_proof`), and they stopped, the
/// target gets the benefit of the doubt (a note); when any is not, every one but an explained
/// first is judged. Returns each finding with the case line it belongs to.
pub fn late_progress(
    late: &[(&str, &SentRequest)],
    waits: &Waits,
    version: Option<ProtocolVersion>,
) -> Vec<(usize, Problem)> {
    let mut found = vec![];
    for (key, request) in late {
        let (Some(mark), Some(first)) = (request.cancel, request.after_proof.first()) else {
            continue;
        };
        let messages = &request.after_proof;
        if messages.iter().all(|m| m.explained) {
            let message = if messages.len() == 1 {
                one_explained(key, first, waits, waits.lost_since(mark.waited))
            } else {
                format!(
                    "{} progress for request {key} came within {} ms of the proof that its cancel was read, and then stopped; the tool was behind its own schedule or the target had waited {} ms for a CPU since the cancel was sent: a handler kept from running may not have seen the cancel yet (the timing cannot tell), so they are not judged",
                    messages.len(),
                    messages[messages.len() - 1].after.as_millis(),
                    waits.lost_since(mark.sent_waited).unwrap_or_default().as_millis()
                )
            };
            found.push((
                first.line,
                Problem::new(Severity::Note, Req::Can08, message),
            ));
            continue;
        }
        let judged = if first.explained {
            found.push((
                first.line,
                Problem::new(
                    Severity::Note,
                    Req::Can08,
                    format!("one progress for request {key} came just after the proof that its cancel was read; it may have been produced before (the timing cannot tell), so it is not judged"),
                ),
            ));
            &messages[1..]
        } else {
            &messages[..]
        };
        for m in judged {
            let message = format!(
                "progress for request {key} after the target had read its cancel ({}){}",
                mark.proof(),
                after_cancel_rule(version)
            );
            found.push((
                m.line,
                Problem::new(after_cancel_severity(version), Req::Can05, message),
            ));
        }
    }
    found
}

/// The note for one progress that came just after the proof, within its grace.
fn one_explained(
    key: &str,
    first: &LateProgress,
    waits: &Waits,
    since_proof: Option<Duration>,
) -> String {
    let busy = if first.after >= waits.calm {
        format!(
            " ({} ms after it: later than the {} ms a calm machine allows, but the target waited {} ms for a CPU since)",
            first.after.as_millis(),
            waits.calm.as_millis(),
            since_proof.unwrap_or_default().as_millis()
        )
    } else {
        String::new()
    };
    format!("one progress for request {key} came just after the proof that its cancel was read{busy}; it may have been produced before (the timing cannot tell), so it is not judged")
}

#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;
