//! What a client adapter reports and how it ends: its outcome lines on stdout, judged against
//! the case's `@outcomes`, and its exit once its actions are done.

use super::client::ClientTarget;
use super::Engine;
use crate::outcome::{FindingKind, Severity};
use crate::rules::envelope::short;
use crate::transport::Transport;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant as Deadline;

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

/// Whether the adapter reported every action but `exit`: a session that ends after this
/// ended as the case told it to.
pub(super) fn actions_done<T: Transport>(e: &Engine<'_, T, ClientTarget>) -> bool {
    e.case
        .actions
        .iter()
        .enumerate()
        .all(|(i, a)| a.get("exit").is_some() || e.side.outcomes.contains_key(&i))
}

/// After the last step: the adapter reports its remaining actions and exits.
pub(super) async fn wind_down<T: Transport>(e: &mut Engine<'_, T, ClientTarget>) {
    let deadline = Deadline::now() + e.options.reply_timeout;
    while !e.exited && e.next(deadline).await {}
    // The outcome lines written just before exiting are still in the pipe.
    e.pump_until(Deadline::now() + Duration::from_millis(100))
        .await;
    if !e.exited {
        let done = e.side.outcomes.len();
        e.rule(
            e.case_severity(),
            "TMO-02",
            format!(
                "the client was still running {:?} after the case's last step ({done} of {} actions reported); it hangs, or the adapter does not exit after its last action",
                e.options.reply_timeout,
                e.case.actions.len()
            ),
        );
    } else if let Some(status) = e.io.exit_status().filter(|s| !s.success()) {
        e.finding(
            Severity::Fail,
            FindingKind::Adapter,
            format!("the client exited with {status}; an adapter exits 0 once its actions are done (a crash is a failure)"),
        );
    }
    judge_outcomes(e);
}

/// Compares the adapter's outcome lines with `@outcomes`.
pub(super) fn judge_outcomes<T: Transport>(e: &mut Engine<'_, T, ClientTarget>) {
    e.line = e.case.outcomes_line;
    let expected = e.case.outcomes.clone();
    for (i, allowed) in expected.iter().enumerate() {
        let any = allowed.iter().any(|w| w == "*");
        let got = e
            .side
            .outcomes
            .get(&i)
            .and_then(|v| v.get("outcome"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let action = short(&e.case.actions[i]);
        match got {
            _ if any => {}
            Some(word) if allowed.contains(&word) => {}
            Some(word) => {
                let cancelled = allowed.iter().all(|w| w == "cancelled" || w == "timeout");
                let (severity, kind) = if cancelled && word == "result" {
                    (
                        e.case_severity().min(Severity::Warn),
                        FindingKind::Rule("CAN-07"),
                    )
                } else {
                    (e.case_severity(), FindingKind::Unmet)
                };
                let detail = e.side.outcomes.get(&i).map(short).unwrap_or_default();
                e.finding(
                    severity,
                    kind,
                    format!(
                        "action {i} {action} ended as `{word}`, expected {}: {detail}",
                        allowed.join(" or ")
                    ),
                );
            }
            None => e.finding(
                e.case_severity(),
                FindingKind::Unmet,
                format!(
                    "the adapter never reported how action {i} {action} ended (expected {})",
                    allowed.join(" or ")
                ),
            ),
        }
    }
    for (i, value) in &e.side.outcomes.clone() {
        if *i >= e.case.actions.len() {
            e.finding(
                Severity::Fail,
                FindingKind::Adapter,
                format!(
                    "the adapter reported action {i}, but the case has {} actions: {}",
                    e.case.actions.len(),
                    short(value)
                ),
            );
        }
    }
}
