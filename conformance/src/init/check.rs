//! Checking a proposal by calling it, the way the cases will: an echo must give back the text
//! it was given, a sleep must take about the time asked for, `work` and `ticker` must send
//! progress when given a token and still be running when init cancels them, the witness
//! must answer a JSON array. Whether a call stops when cancelled is the cases' business.
//!
//! Only `inspect` decides which candidates are called; these functions call what they are
//! given.

use super::calls::{arguments, fresh_text, median_gap, token, SLEEPS, TICK_MS, WORK_WATCH};
use super::propose::PING_TEXT;
use super::session::{cut, failure, result_text, Enough, Session, Watched};
use super::{Candidate, Verdict};
use crate::fixtures::{sleep_natural_end, witness_list, Role};
use crate::transcript::span;
use crate::transport::Transport;
use serde_json::{json, Value};
use std::time::Duration;

/// Calls `candidate` as its role's cases would and says whether it plays the role. `reply` is
/// how long an answer or progress may take beyond what was asked for.
pub async fn check<T: Transport>(
    session: &mut Session<T>,
    candidate: &Candidate,
    reply: Duration,
) -> Verdict {
    match candidate.role {
        Role::Echo => echo(session, candidate, reply).await,
        Role::Ping => ping(session, candidate, reply).await,
        Role::Sleep => sleep(session, candidate, reply).await,
        Role::Work => work(session, candidate, reply).await,
        Role::Ticker => ticker(session, candidate, reply).await,
        Role::Cancellations => witness(session, candidate, reply).await,
        Role::TaskWork | Role::TaskTicker | Role::TaskSleep => {
            super::tasks::check(session, candidate, reply).await
        }
        other @ Role::WorkRequired => {
            Verdict::Unchecked(format!("init knows no check for `{other}`"))
        }
    }
}

/// Calls and waits for the answer only.
async fn answer_of<T: Transport>(
    session: &mut Session<T>,
    candidate: &Candidate,
    case_arguments: Value,
    within: Duration,
) -> Result<(Value, Duration), CallError> {
    let arguments = arguments(candidate, case_arguments);
    let watched = session
        .call(
            &candidate.tool,
            &arguments,
            None,
            Enough {
                within,
                progress: None,
            },
        )
        .await;
    match watched {
        Watched {
            answer: Some(answer),
            answered_after: Some(after),
            ..
        } => match failure(&answer) {
            Some(why) => Err(CallError::Failed { arguments, why }),
            None => Ok((answer, after)),
        },
        Watched { gone: true, .. } => Err(CallError::Gone { arguments }),
        _ => Err(CallError::NoAnswer { arguments, within }),
    }
}

/// Why a checking call gave no answer to judge (the role's check fails with it).
#[derive(Debug, thiserror::Error)]
enum CallError {
    /// The call was answered with an error.
    #[error("called with {arguments}, {why}")]
    Failed {
        /// The arguments it was called with.
        arguments: Value,
        /// What the answer says went wrong.
        why: String,
    },
    /// The target stopped before it answered.
    #[error("called with {arguments}, the target stopped before it answered")]
    Gone {
        /// The arguments it was called with.
        arguments: Value,
    },
    /// No answer in time.
    #[error("called with {arguments}, no answer within {}", span(*.within))]
    NoAnswer {
        /// The arguments it was called with.
        arguments: Value,
        /// How long the check waited.
        within: Duration,
    },
}

async fn echo<T: Transport>(s: &mut Session<T>, c: &Candidate, reply: Duration) -> Verdict {
    let text = fresh_text();
    let (answer, after) = match answer_of(s, c, json!({"text": text}), reply).await {
        Ok(a) => a,
        Err(why) => return Verdict::Failed(why.to_string()),
    };
    let got = result_text(&answer).unwrap_or_default();
    let checked = if got == text {
        format!("answered exactly the text it was given, in {}", span(after))
    } else if got.contains(&text) {
        format!(
            "answered `{}` for a text it was given, in {} (not the text alone; cases accept any result of a mapped tool)",
            cut(&got.replace(&text, "<text>"), 120),
            span(after)
        )
    } else {
        return Verdict::Failed(format!("given `{text}`, it answered `{}`", cut(&got, 120)));
    };
    Verdict::Passed {
        checked,
        progress: true,
    }
}

async fn ping<T: Transport>(s: &mut Session<T>, c: &Candidate, reply: Duration) -> Verdict {
    let (answer, after) = match answer_of(s, c, json!({}), reply).await {
        Ok(a) => a,
        Err(why) => return Verdict::Failed(why.to_string()),
    };
    let got = result_text(&answer).unwrap_or_default();
    let fixed_text = c
        .arguments
        .as_ref()
        .is_some_and(|a| a.to_string().contains(PING_TEXT));
    if fixed_text && !got.contains(PING_TEXT) {
        return Verdict::Failed(format!(
            "given `{PING_TEXT}`, it answered `{}`",
            cut(&got, 120)
        ));
    }
    Verdict::Passed {
        checked: format!("answered `{}` in {}", cut(&got, 120), span(after)),
        progress: true,
    }
}

async fn sleep<T: Transport>(s: &mut Session<T>, c: &Candidate, reply: Duration) -> Verdict {
    let mut took = vec![];
    for ms in SLEEPS {
        let asked = Duration::from_millis(ms);
        let within = asked * 2 + reply;
        let after = match answer_of(s, c, json!({"ms": ms}), within).await {
            Ok((_, after)) => after,
            Err(why) => return Verdict::Failed(format!("asked for {ms} ms: {why}")),
        };
        if after < sleep_natural_end(ms) {
            return Verdict::Failed(format!(
                "asked for {ms} ms, it answered after {}: sooner than asked",
                span(after)
            ));
        }
        // About the time asked for: a busy machine may add a second.
        if after > asked * 2 + Duration::from_secs(1) {
            return Verdict::Failed(format!(
                "asked for {ms} ms, it answered after {}: much later than asked",
                span(after)
            ));
        }
        took.push(format!("{ms} ms took {}", span(after)));
    }
    Verdict::Passed {
        checked: format!("asked to sleep, {}", took.join(", ")),
        progress: true,
    }
}

async fn work<T: Transport>(s: &mut Session<T>, c: &Candidate, reply: Duration) -> Verdict {
    let arguments = arguments(c, json!({}));
    let token = token(Role::Work);
    let enough = Enough {
        within: reply.max(WORK_WATCH),
        progress: Some((1, WORK_WATCH)),
    };
    let watched = s.call(&c.tool, &arguments, Some(&token), enough).await;
    if let Some(why) = ended_on_its_own(&watched, &arguments) {
        return Verdict::Failed(why);
    }
    match watched.progress.first() {
        Some(first) => Verdict::Passed {
            checked: format!(
                "given a progress token, progress came {} after the call ({} notification(s) in {}), and it was still running when init cancelled it",
                span(*first),
                watched.progress.len(),
                span(watched.watched)
            ),
            progress: true,
        },
        None => Verdict::Passed {
            checked: format!(
                "given a progress token, it sent no progress in {} and was still running when init cancelled it (`\"progress\": false`: cases that wait for its progress are skipped)",
                span(watched.watched)
            ),
            progress: false,
        },
    }
}

async fn ticker<T: Transport>(s: &mut Session<T>, c: &Candidate, reply: Duration) -> Verdict {
    let arguments = arguments(c, json!({"interval_ms": TICK_MS}));
    let asked_as = match c.arguments {
        Some(_) => format!("{arguments} (`interval_ms` {TICK_MS})"),
        None => arguments.to_string(),
    };
    let token = token(Role::Ticker);
    let enough = Enough {
        within: reply,
        progress: Some((4, Duration::ZERO)),
    };
    let watched = s.call(&c.tool, &arguments, Some(&token), enough).await;
    if let Some(why) = ended_on_its_own(&watched, &arguments) {
        return Verdict::Failed(why);
    }
    let Some(median) = median_gap(&watched.progress) else {
        return Verdict::Failed(format!(
            "called with {arguments} and a progress token: {} progress notification(s) in {}; a ticker sends one every `interval_ms`",
            watched.progress.len(),
            span(watched.watched)
        ));
    };
    let asked = Duration::from_millis(TICK_MS);
    if median < asked / 3 || median > asked * 10 {
        return Verdict::Failed(format!(
            "called with {asked_as} and a progress token: progress about every {}, not every {}",
            span(median),
            span(asked)
        ));
    }
    Verdict::Passed {
        checked: format!(
            "called with {asked_as} and a progress token: {} progress notifications about every {}, and it was still running when init cancelled it",
            watched.progress.len(),
            span(median)
        ),
        progress: true,
    }
}

/// Why a call that should run until cancelled did not.
fn ended_on_its_own(watched: &Watched, arguments: &Value) -> Option<String> {
    if let (Some(answer), Some(after)) = (&watched.answer, watched.answered_after) {
        let what = failure(answer).unwrap_or_else(|| "it answered".into());
        return Some(format!(
            "called with {arguments}, {what} after {}, on its own: the role runs until cancelled",
            span(after)
        ));
    }
    watched
        .gone
        .then(|| format!("called with {arguments}, the target stopped"))
}

async fn witness<T: Transport>(s: &mut Session<T>, c: &Candidate, reply: Duration) -> Verdict {
    let (answer, after) = match answer_of(s, c, json!({}), reply).await {
        Ok(a) => a,
        Err(why) => return Verdict::Failed(why.to_string()),
    };
    match witness_list(&answer) {
        Some(ids) => Verdict::Passed {
            checked: format!(
                "answered a JSON array ({} id(s)) in {}",
                ids.len(),
                span(after)
            ),
            progress: true,
        },
        None => Verdict::Failed(format!(
            "answered `{}`, not a JSON array of request ids",
            cut(&result_text(&answer).unwrap_or_default(), 120)
        )),
    }
}
