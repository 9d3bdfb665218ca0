//! The task roles (`task_work`, `task_sleep`, `task_ticker`): which tool the cases call where
//! they call `work`, `sleep` or `ticker` as a task. A tool runs as a task only if it says so:
//! at 2025-11-25 its `execution.taskSupport` is `optional` or `required` (absent means
//! `forbidden`), so only such tools are proposed, and a server as it ships often has one
//! long-running tool that forbids tasks and another that requires them. At 2026-07-28 no tool
//! says (under the tasks extension the server decides per call), so `task_work` is proposed
//! from `work`'s candidates and believed only once a call of it answered with a task.
//!
//! A check calls the tool as the cases will (read-only tools only, or those named with
//! `--try`, as for every role): the call must be answered at once with a task that is
//! `working`; `work`'s must still be working a second later, `sleep`'s must complete after
//! about the time asked, `ticker`'s must send progress on the call's token. Then the task is
//! cancelled (`tasks/cancel`).

use super::calls::{arguments, median_gap, token, SLEEPS, TICK_MS, WORK_WATCH};
use super::propose;
use super::session::{cut, failure, Enough, Session};
use super::{Candidate, Tried, Verdict};
use crate::case::{Need, TASKS_EXTENSION};
use crate::discovery::Tool;
use crate::era::{ProtocolVersion, META_CAPABILITIES};
use crate::fixtures::{sleep_natural_end, Role};
use crate::rules::envelope::short;
use crate::transcript::span;
use crate::transport::Transport;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The task roles init drafts at a version (each plays its [`Role::base`] as a task): at
/// 2026-07-28 only `task_work`, the one role its cases call as a task.
pub fn roles(version: ProtocolVersion) -> &'static [Role] {
    const CORE: [Role; 3] = [Role::TaskWork, Role::TaskSleep, Role::TaskTicker];
    if version.has_core_tasks() {
        &CORE
    } else {
        &CORE[..1]
    }
}

/// Whether the server offers tasks in the session: the `tasks.requests.tools.call` capability
/// (2025-11-25) or the tasks extension (2026-07-28).
pub fn offered<T: Transport>(session: &Session<T>) -> bool {
    let core = session.version.has_core_tasks();
    let stateless = !session.version.has_handshake();
    (core || stateless) && Need::Tasks.unmet(&session.opening, stateless).is_none()
}

/// The tools a task role passed over, with why (noted, never called).
#[derive(Debug, Default)]
pub struct PassedOver {
    /// Tools that could play the profile role but do not run as a task: always noted.
    pub forbidding: Vec<Tried>,
    /// Tools that run as a task but do not look like the role: noted when none held.
    pub unlike: Vec<Tried>,
}

/// The candidates for `role` (a task role playing its [`Role::base`]), best first, and the
/// tools passed over: at 2025-11-25 only tools that declare they run as a task are proposed.
pub fn candidates(
    role: Role,
    tools: &[Tool],
    version: ProtocolVersion,
) -> (Vec<Candidate>, PassedOver) {
    let base = role.base();
    let as_task = |mut c: Candidate| {
        c.role = role;
        c
    };
    if !version.has_core_tasks() {
        let found = propose::candidates(base, tools);
        return (
            found.into_iter().map(as_task).collect(),
            PassedOver::default(),
        );
    }
    let runs_as_task = |t: &Tool| {
        let declared = crate::fixtures::Declared {
            task_support: t.task_support.clone(),
        };
        declared.runs_as_task()
    };
    let task_tools: Vec<Tool> = tools.iter().filter(|t| runs_as_task(t)).cloned().collect();
    let found: Vec<Candidate> = propose::candidates(base, &task_tools)
        .into_iter()
        .map(as_task)
        .collect();
    let mut passed = PassedOver::default();
    for tool in &task_tools {
        if !found.iter().any(|c| c.tool == tool.name) {
            let why = format!(
                "declares `taskSupport: {}`, but nothing in its name, description or input schema says it plays `{base}` ({})",
                tool.task_support.as_deref().unwrap_or_default(),
                base.needs()
            );
            passed.unlike.push(passed_over(role, tool, why));
        }
    }
    for candidate in propose::candidates(base, tools) {
        let Some(tool) = tools.iter().find(|t| t.name == candidate.tool) else {
            continue;
        };
        let noted = passed
            .forbidding
            .iter()
            .any(|p| p.candidate.tool == tool.name);
        if !runs_as_task(tool) && !noted {
            let why = match &tool.task_support {
                Some(s) => format!("could play `{base}`, but declares `taskSupport: {s}`"),
                None => format!(
                    "could play `{base}`, but declares no `taskSupport` (`forbidden`): it does not run as a task"
                ),
            };
            passed.forbidding.push(passed_over(role, tool, why));
        }
    }
    (found, passed)
}

/// A tool noted as passed over for `role`, never called.
fn passed_over(role: Role, tool: &Tool, why: String) -> Tried {
    Tried {
        candidate: Candidate {
            role,
            tool: tool.name.clone(),
            arguments: None,
            read_only: tool.read_only,
            why: "listed by the server".into(),
            unit: None,
        },
        verdict: Verdict::Unchecked(format!("passed over: {why}")),
    }
}

/// Whether what a session of the handshake era saw hints that the server runs tools as tasks
/// in another era too: a tasks capability or the tasks extension in its `initialize` result,
/// or a tool that declares `taskSupport`.
pub fn hinted(opening: &Value, tools: &[Tool]) -> bool {
    let capabilities = opening.pointer("/result/capabilities");
    let declared = |path: &str| capabilities.and_then(|c| c.pointer(path)).is_some();
    let extension = capabilities
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some();
    declared("/tasks") || extension || tools.iter().any(|t| t.task_support.is_some())
}

/// Calls `candidate` as a task, the way its role's cases will, and says whether it plays it.
pub async fn check<T: Transport>(
    session: &mut Session<T>,
    candidate: &Candidate,
    reply: Duration,
) -> Verdict {
    let base = candidate.role.base();
    let case_arguments = match base {
        Role::Sleep => json!({"ms": SLEEPS[0]}),
        Role::Ticker => json!({"interval_ms": TICK_MS}),
        _ => json!({}),
    };
    let arguments = arguments(candidate, case_arguments);
    let core = session.version.has_core_tasks();
    let token = token(base);
    let mut params = json!({"name": candidate.tool, "arguments": arguments});
    if core {
        params["task"] = json!({"ttl": 60000});
        params["_meta"] = json!({"progressToken": token});
    } else {
        params["_meta"] = declaration();
    }
    let sent = Instant::now();
    let enough = Enough {
        within: reply,
        progress: None,
    };
    let created = session
        .request("tools/call", params, Some(&token), enough)
        .await;
    let asked = match core {
        true => format!("called as a task with {arguments}"),
        false => format!(
            "called as a task at {} (the extension declared in `_meta`) with {arguments}",
            session.version
        ),
    };
    let Some(answer) = created.answer else {
        let what = if created.gone {
            "the target stopped".to_string()
        } else {
            format!(
                "no answer within {}: a tool that runs as a task is answered at once with the task",
                span(reply)
            )
        };
        return Verdict::Failed(format!("{asked}, {what}"));
    };
    if let Some(why) = failure(&answer) {
        return Verdict::Failed(format!("{asked}, {why}"));
    }
    let Some((id, status)) = task_of(&answer, core) else {
        return Verdict::Failed(format!(
            "{asked}, it answered `{}`, not a task",
            cut(&short(&answer), 160)
        ));
    };
    let created_after = span(created.answered_after.unwrap_or_default());
    let seen = match base {
        Role::Sleep => sleep(session, &id, sent, reply).await,
        Role::Ticker => ticker(session, &token, reply).await,
        _ => work(session, &id, reply).await,
    };
    if base != Role::Sleep {
        let _ = ask(session, "tasks/cancel", &id, reply).await;
    }
    match seen {
        Ok(seen) => Verdict::Passed {
            checked: format!(
                "{asked}, it answered with task `{id}` (`{status}`) in {created_after}; {seen}"
            ),
            progress: true,
        },
        Err(why) => Verdict::Failed(format!("{asked}, it answered with task `{id}`; {why}")),
    }
}

/// The tasks extension declared in a request's `_meta` (2026-07-28).
fn declaration() -> Value {
    json!({ META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}} })
}

/// The task id and status a call's answer created, if it is a task.
fn task_of(answer: &Value, core: bool) -> Option<(String, String)> {
    let result = answer.get("result")?;
    let task = if core {
        result.get("task")?
    } else {
        (result.get("resultType")? == "task").then_some(result)?
    };
    let id = task.get("taskId")?.as_str()?.to_string();
    let status = task.get("status")?.as_str()?.to_string();
    Some((id, status))
}

/// Asks `method` about task `id`; the answer's result, if one came.
async fn ask<T: Transport>(
    session: &mut Session<T>,
    method: &str,
    id: &str,
    reply: Duration,
) -> Option<Value> {
    let mut params = json!({"taskId": id});
    if !session.version.has_core_tasks() {
        params["_meta"] = declaration();
    }
    let enough = Enough {
        within: reply,
        progress: None,
    };
    let watched = session.request(method, params, None, enough).await;
    watched.answer?.get("result").cloned()
}

/// The status `tasks/get` gives task `id`.
async fn status<T: Transport>(session: &mut Session<T>, id: &str, reply: Duration) -> String {
    match ask(session, "tasks/get", id, reply).await {
        Some(result) => result
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("(none)")
            .to_string(),
        None => "(no answer)".to_string(),
    }
}

/// `work`'s task is still working after a while.
async fn work<T: Transport>(
    session: &mut Session<T>,
    id: &str,
    reply: Duration,
) -> Result<String, String> {
    tokio::time::sleep(WORK_WATCH).await;
    match status(session, id, reply).await.as_str() {
        "working" => Ok(format!(
            "`tasks/get` {} later said `working`, and init cancelled it",
            span(WORK_WATCH)
        )),
        other => Err(format!(
            "`tasks/get` {} later said `{other}`: the role runs until cancelled",
            span(WORK_WATCH)
        )),
    }
}

/// `sleep`'s task completes after about the time asked, polled with `tasks/get`.
async fn sleep<T: Transport>(
    session: &mut Session<T>,
    id: &str,
    sent: Instant,
    reply: Duration,
) -> Result<String, String> {
    let ms = SLEEPS[0];
    let give_up = Duration::from_millis(ms) * 2 + reply;
    loop {
        let now = status(session, id, reply).await;
        let after = sent.elapsed();
        match now.as_str() {
            "completed" if after < sleep_natural_end(ms) => {
                return Err(format!(
                    "asked for {ms} ms, it completed after {}: sooner than asked",
                    span(after)
                ))
            }
            "completed" => {
                return Ok(format!(
                    "asked for {ms} ms, `tasks/get` said `completed` after {}",
                    span(after)
                ))
            }
            "working" | "submitted" if after < give_up => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            other => {
                return Err(format!(
                    "asked for {ms} ms, `tasks/get` said `{other}` after {}",
                    span(after)
                ))
            }
        }
    }
}

/// `ticker`'s task sends progress on the call's token about every `interval_ms`.
async fn ticker<T: Transport>(
    session: &mut Session<T>,
    token: &str,
    reply: Duration,
) -> Result<String, String> {
    let enough = Enough {
        within: reply,
        progress: Some((4, Duration::ZERO)),
    };
    let watched = session
        .watch(None, Some(token), Instant::now(), enough)
        .await;
    let asked = Duration::from_millis(TICK_MS);
    match median_gap(&watched.progress) {
        Some(median) if median >= asked / 3 && median <= asked * 10 => Ok(format!(
            "{} progress notifications on its token about every {}, and init cancelled it",
            watched.progress.len(),
            span(median)
        )),
        Some(median) => Err(format!(
            "progress about every {}, not every {}",
            span(median),
            span(asked)
        )),
        None => Err(format!(
            "{} progress notification(s) on its token in {}; a ticker sends one every `interval_ms`",
            watched.progress.len(),
            span(watched.watched)
        )),
    }
}
