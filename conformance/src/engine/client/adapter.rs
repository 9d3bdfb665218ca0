//! What a client adapter reports and how it ends: its outcome lines on stdout, judged against
//! the case's `@outcomes`, and its exit once its actions are done.

use super::ClientTarget;
use crate::case::Level;
use crate::engine::{Engine, Stop};
use crate::outcome::{FindingKind, Severity};
use crate::pattern::{canonical, json_equal};
use crate::requirement::Req;
use crate::rules::envelope::short;
use crate::transcript::Direction;
use crate::transport::Transport;
use serde_json::Value;

/// One line the adapter wrote to its stdout: an outcome report, or a breach of the contract.
pub(super) fn adapter_line<T: Transport>(e: &mut Engine<'_, T, ClientTarget>, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes).into_owned();
    e.io.note(format!("[adapter stdout] {text}"));
    let parsed: Option<Value> = serde_json::from_slice(bytes).ok();
    let action = parsed
        .as_ref()
        .and_then(|v| v.get("action"))
        .and_then(Value::as_u64);
    let outcome = parsed
        .as_ref()
        .and_then(|v| v.get("outcome"))
        .and_then(Value::as_str);
    let decline = parsed
        .as_ref()
        .and_then(|v| v.get("decline"))
        .and_then(Value::as_str);
    if let Some(why) = decline {
        e.side.declined.get_or_insert_with(|| why.to_string());
        return;
    }
    match (action, outcome) {
        (Some(action), Some(_)) => {
            let value = parsed.clone().unwrap_or(Value::Null);
            if e.side.outcomes.insert(action as usize, value).is_some() {
                e.finding(
                    Severity::Fail,
                    FindingKind::Adapter,
                    format!("the adapter reported action {action} twice: `{text}`"),
                );
            }
        }
        _ => e.finding(
            Severity::Fail,
            FindingKind::Adapter,
            format!(
                "the adapter wrote `{}` to its stdout, which is not an outcome line \
                 ({{\"action\":N,\"outcome\":\"…\"}}); its logs belong on stderr",
                text.chars().take(200).collect::<String>()
            ),
        ),
    }
}

/// The case's end when the adapter declined it: a client that does not speak the case's
/// transport or version says so with `{"decline": "why"}` on its stdout, and the case is
/// skipped with its words.
pub(super) fn declined<T: Transport>(e: &mut Engine<'_, T, ClientTarget>) -> Option<Stop> {
    let why = e.side.declined.take()?;
    Some(Stop::Skip(format!("the client declined: {why}")))
}

/// Whether the adapter reported every action but `exit`: a session that ends after this
/// ended as the case told it to.
pub(super) fn actions_done<T: Transport>(e: &Engine<'_, T, ClientTarget>) -> bool {
    e.played
        .case()
        .actions
        .iter()
        .enumerate()
        .all(|(i, a)| a.get("exit").is_some() || e.side.outcomes.contains_key(&i))
}

/// After the last step: the adapter reports its remaining actions and exits.
pub(super) async fn wind_down<T: Transport>(e: &mut Engine<'_, T, ClientTarget>) {
    let waited = e.await_exit(e.played.options().reply_timeout).await;
    if !e.liveness.exited {
        e.side.hung = true;
        let done = e.side.outcomes.len();
        e.rule(
            e.case_severity(),
            Req::Tmo02,
            format!(
                "the client was still running {:.1} s after the case's last step ({done} of {} actions reported); it hangs, or the adapter does not exit after its last action",
                waited.as_secs_f64(),
                e.played.case().actions.len()
            ),
        );
    } else {
        // The outcome lines and the last messages written just before exiting are still on
        // their way.
        e.read_to_end().await;
        if let Some(status) = e.io.exit_status().filter(|s| !s.success()) {
            e.finding(
                Severity::Fail,
                FindingKind::Adapter,
                format!("the client exited with {status}; an adapter exits 0 once its actions are done (a crash is a failure)"),
            );
        }
    }
    judge_outcomes(e);
}

/// After the steps stopped on a failure already reported: the harness answers what the
/// client still waits for as a plain server would, lets the adapter finish (within
/// `--reply-timeout`) and reads what it still says, so that late messages are judged by the
/// standing rules; how the adapter reports its actions is then noted, not judged again.
pub(super) async fn settle<T: Transport>(e: &mut Engine<'_, T, ClientTarget>) {
    e.serve_outstanding().await;
    e.await_exit(e.played.options().reply_timeout).await;
    if e.liveness.exited {
        e.read_to_end().await;
    }
    judge_outcomes(e);
}

/// Compares the adapter's outcome lines with `@outcomes`. After the steps stopped on a
/// failure, a difference follows from that failure: it is noted, not judged again. In an
/// info case, what each action with alternatives ended as is recorded for the reader.
pub(super) fn judge_outcomes<T: Transport>(e: &mut Engine<'_, T, ClientTarget>) {
    e.step.at(e.played.case().outcomes_line);
    let stopped = e.side.stopped;
    let because = stopped
        .map(|line| format!(" (the case had stopped at line {line}; see the finding there)"))
        .unwrap_or_default();
    let expected = e.played.case().outcomes.clone();
    for (i, allowed) in expected.iter().enumerate() {
        let any = allowed.iter().any(|w| w == "*");
        let got = e
            .side
            .outcomes
            .get(&i)
            .and_then(|v| v.get("outcome"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let action = short(&e.played.case().actions[i]);
        match got {
            Some(word)
                if allowed.len() > 1
                    && e.played.case().level == Level::Info
                    && stopped.is_none() =>
            {
                let detail = observed_detail(e, i);
                e.finding(
                    Severity::Note,
                    FindingKind::Observed,
                    format!("action {i} {action} ended as `{word}`{detail}"),
                );
            }
            _ if any => {}
            Some(word) if allowed.contains(&word) => {}
            Some(word) => {
                let cancelled = allowed.iter().all(|w| w == "cancelled" || w == "timeout");
                let (severity, kind) = if cancelled && word == "result" {
                    (
                        e.case_severity().min(Severity::Warn),
                        FindingKind::Rule(Req::Can07),
                    )
                } else {
                    (e.case_severity(), FindingKind::Unmet)
                };
                let severity = if stopped.is_some() {
                    Severity::Note
                } else {
                    severity
                };
                let detail = e.side.outcomes.get(&i).map(short).unwrap_or_default();
                e.finding(
                    severity,
                    kind,
                    format!(
                        "action {i} {action} ended as `{word}`, expected {}: {detail}{because}",
                        allowed.join(" or ")
                    ),
                );
            }
            None => {
                let severity = if stopped.is_some() || e.side.hung {
                    Severity::Note
                } else {
                    e.case_severity()
                };
                let because = if e.side.hung && stopped.is_none() {
                    " (the adapter was still running; see the TMO-02 finding)".to_string()
                } else {
                    because.clone()
                };
                e.finding(
                    severity,
                    FindingKind::Unmet,
                    format!(
                        "the adapter never reported how action {i} {action} ended (expected {}){because}",
                        allowed.join(" or ")
                    ),
                )
            }
        }
    }
    for (i, value) in &e.side.outcomes.clone() {
        if *i >= e.played.case().actions.len() {
            e.finding(
                Severity::Fail,
                FindingKind::Adapter,
                format!(
                    "the adapter reported action {i}, but the case has {} actions: {}",
                    e.played.case().actions.len(),
                    short(value)
                ),
            );
        }
    }
}

/// For the record of an info case: what the client did on the wire about the requests it
/// sent, so the reader learns which behaviour the case saw (a cancel and when, or none).
fn observed_detail<T: Transport>(e: &Engine<'_, T, ClientTarget>, action: usize) -> String {
    let call = &e.played.case().actions[action];
    if call.get("call").is_none() && call.get("ping").is_none() {
        return String::new();
    }
    let mut cancels = vec![];
    for entry in e
        .transcript
        .iter()
        .filter(|t| t.direction == Direction::Received)
    {
        let Some(value) = &entry.value else { continue };
        if value.get("method").and_then(Value::as_str) != Some("notifications/cancelled") {
            continue;
        }
        let Some(id) = value.pointer("/params/requestId") else {
            continue;
        };
        let request = e.transcript.iter().find(|t| {
            t.direction == Direction::Received
                && t.value.as_ref().is_some_and(|v| {
                    v.get("method").is_some() && v.get("id").is_some_and(|i| json_equal(i, id))
                })
        });
        if let Some(request) = request {
            let token = request
                .value
                .as_ref()
                .and_then(|v| v.pointer("/params/_meta/progressToken"))
                .cloned();
            let progress = e
                .transcript
                .iter()
                .filter(|t| t.direction == Direction::Sent && t.at <= entry.at)
                .filter(|t| {
                    t.value.as_ref().is_some_and(|v| {
                        v.get("method").and_then(Value::as_str) == Some("notifications/progress")
                            && token.is_some()
                            && v.pointer("/params/progressToken") == token.as_ref()
                    })
                })
                .count();
            cancels.push(format!(
                "the client cancelled request {} {} ms after sending it, after {progress} progress notification{}",
                canonical(id),
                entry.at.saturating_sub(request.at).as_millis(),
                if progress == 1 { "" } else { "s" }
            ));
        }
    }
    if cancels.is_empty() {
        "; the client sent no cancel".into()
    } else {
        format!("; {}", cancels.join("; "))
    }
}
