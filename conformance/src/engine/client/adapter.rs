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

/// What one line on the adapter's stdout says.
#[derive(Debug, PartialEq)]
enum AdapterLine {
    /// `{"decline": "why"}`: the client does not speak the case's transport or version.
    Decline(String),
    /// `{"action": N, "outcome": "…"}`: how action N ended (the whole line).
    Outcome(u64, Value),
    /// Anything else: a breach of the adapter's contract.
    Other,
}

/// Reads one line of the adapter's stdout.
fn read_line(bytes: &[u8]) -> AdapterLine {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return AdapterLine::Other;
    };
    if let Some(why) = value.get("decline").and_then(Value::as_str) {
        return AdapterLine::Decline(why.to_string());
    }
    let action = value.get("action").and_then(Value::as_u64);
    let outcome = value.get("outcome").and_then(Value::as_str);
    match (action, outcome) {
        (Some(action), Some(_)) => AdapterLine::Outcome(action, value),
        _ => AdapterLine::Other,
    }
}

/// One line the adapter wrote to its stdout: an outcome report, or a breach of the contract.
pub(super) fn adapter_line<T: Transport>(e: &mut Engine<'_, T, ClientTarget>, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes).into_owned();
    e.io.note(format!("[adapter stdout] {text}"));
    match read_line(bytes) {
        AdapterLine::Decline(why) => {
            e.side.declined.get_or_insert(why);
        }
        AdapterLine::Outcome(action, value) => {
            if e.side.outcomes.insert(action as usize, value).is_some() {
                e.finding(
                    Severity::Fail,
                    FindingKind::Adapter,
                    format!("the adapter reported action {action} twice: `{text}`"),
                );
            }
        }
        AdapterLine::Other => e.finding(
            Severity::Fail,
            FindingKind::Adapter,
            format!(
                "the adapter wrote `{}` to its stdout, which is not an outcome line ({{\"action\":N,\"outcome\":\"…\"}}); its logs belong on stderr",
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
    if !e.liveness.has_exited() {
        e.side.hung = true;
        let done = e.side.outcomes.len();
        e.rule(
            e.played.severity(),
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
    if e.liveness.has_exited() {
        e.read_to_end().await;
    }
    judge_outcomes(e);
}

/// Compares the adapter's outcome lines with `@outcomes`. After the steps stopped on a
/// failure, a difference follows from that failure: it is noted, not judged again. In an
/// info case, what each action with alternatives ended as is recorded for the reader.
pub(super) fn judge_outcomes<T: Transport>(e: &mut Engine<'_, T, ClientTarget>) {
    let case = e.played.case();
    e.step.at(case.outcomes_line);
    for (i, allowed) in case.outcomes.iter().enumerate() {
        judge_outcome(e, i, allowed);
    }
    let actions = case.actions.len();
    let beyond: Vec<String> = e
        .side
        .outcomes
        .range(actions..)
        .map(|(i, value)| {
            format!(
                "the adapter reported action {i}, but the case has {actions} actions: {}",
                short(value)
            )
        })
        .collect();
    for message in beyond {
        e.finding(Severity::Fail, FindingKind::Adapter, message);
    }
}

/// Words that point at the finding the steps stopped on, if they stopped.
fn because_stopped(stopped: Option<usize>) -> String {
    stopped
        .map(|line| format!(" (the case had stopped at line {line}; see the finding there)"))
        .unwrap_or_default()
}

/// How action `i` ended, against the words `allowed` for it.
fn judge_outcome<T: Transport>(e: &mut Engine<'_, T, ClientTarget>, i: usize, allowed: &[String]) {
    let stopped = e.side.stopped;
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
            if allowed.len() > 1 && e.played.case().level == Level::Info && stopped.is_none() =>
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
        Some(word) => ended_otherwise(e, i, &action, &word, allowed),
        None => never_reported(e, i, &action, allowed),
    }
}

/// Action `i` ended as `word`, which `@outcomes` does not allow: a result where only a cancel
/// or a timeout was allowed breaks CAN-07 (a SHOULD); any other word, the case.
fn ended_otherwise<T: Transport>(
    e: &mut Engine<'_, T, ClientTarget>,
    i: usize,
    action: &str,
    word: &str,
    allowed: &[String],
) {
    let stopped = e.side.stopped;
    let cancelled = allowed.iter().all(|w| w == "cancelled" || w == "timeout");
    let (severity, kind) = if cancelled && word == "result" {
        (
            e.played.severity().min(Severity::Warn),
            FindingKind::Rule(Req::Can07),
        )
    } else {
        (e.played.severity(), FindingKind::Unmet)
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
            "action {i} {action} ended as `{word}`, expected {}: {detail}{}",
            allowed.join(" or "),
            because_stopped(stopped)
        ),
    );
}

/// The adapter never said how action `i` ended: unmet, unless the steps had stopped or the
/// adapter hung (both judged already).
fn never_reported<T: Transport>(
    e: &mut Engine<'_, T, ClientTarget>,
    i: usize,
    action: &str,
    allowed: &[String],
) {
    let stopped = e.side.stopped;
    let severity = if stopped.is_some() || e.side.hung {
        Severity::Note
    } else {
        e.played.severity()
    };
    let because = if e.side.hung && stopped.is_none() {
        " (the adapter was still running; see the TMO-02 finding)".to_string()
    } else {
        because_stopped(stopped)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_outcome_line_names_its_action_and_a_decline_says_why() {
        let line = br#"{"action":2,"outcome":"cancelled","detail":"x"}"#;
        assert_eq!(
            read_line(line),
            AdapterLine::Outcome(
                2,
                json!({"action": 2, "outcome": "cancelled", "detail": "x"})
            )
        );
        assert_eq!(
            read_line(br#"{"decline":"no HTTP","action":1,"outcome":"result"}"#),
            AdapterLine::Decline("no HTTP".into())
        );
    }

    #[test]
    fn anything_else_on_stdout_breaks_the_contract() {
        for line in [
            &b"starting up"[..],
            br#"{"action":1}"#,
            br#"{"action":"1","outcome":"result"}"#,
            br#"{"outcome":"result"}"#,
            br#"{"decline":7}"#,
        ] {
            assert_eq!(read_line(line), AdapterLine::Other, "{line:?}");
        }
    }
}
