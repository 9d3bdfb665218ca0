//! The `tasks/*` methods, as each era defines them.
//!
//! 2025-11-25 (tasks.mdx): `tasks/get` and `tasks/list` show tasks,
//! `tasks/result` blocks until the task is terminal and then returns what
//! the `tools/call` would have, `tasks/cancel` moves a working task to
//! `cancelled` before it answers with the task and refuses a terminal one
//! with `-32602` (TSK-04). The 2026-07-28 extension (ext-tasks tasks.md):
//! only for a request that declares it (`-32021` otherwise), `tasks/get`
//! inlines the result, `tasks/update` and `tasks/cancel` answer with an
//! empty acknowledgement, and a cancel of a finished task changes nothing.
//! Every answer but a waiting `tasks/result` is queued at once.

use super::progress::attach;
use super::table::{NotCancelled, ProgressRoute};
use super::wire;
use crate::meta::{self, TASKS_EXTENSION};
use crate::outbox::Route;
use crate::registry::{Refused, Registry, MAX_IN_FLIGHT};
use crate::request::{Key, Refusal, Request, Status};
use crate::version::ProtocolVersion;
use reference_wire::{
    error_response, response, RpcError, INTERNAL_ERROR, INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
};
use serde_json::{json, Value};
use std::sync::Arc;

/// Whether `version` defines `method` as a task method this server serves.
pub(crate) fn serves(method: &str, version: ProtocolVersion) -> bool {
    match method {
        "tasks/get" | "tasks/cancel" => version.has_tasks(),
        "tasks/result" | "tasks/list" => version.has_core_tasks(),
        "tasks/update" => version.has_tasks_extension(),
        _ => false,
    }
}

/// Handles a method [`serves`] accepts. `declared`: whether the request
/// declared the tasks extension (2026-07-28 only).
pub(crate) fn handle(
    registry: &Arc<Registry>,
    request: Request,
    version: ProtocolVersion,
    declared: bool,
    route: &Route,
) -> Result<(), Refusal> {
    if version.has_tasks_extension() && !declared {
        return Err(missing_extension(&request.method));
    }
    let Request {
        key,
        id,
        method,
        params,
    } = request;
    let params = params.unwrap_or(Value::Null);
    let result = match method.as_str() {
        "tasks/list" => list(registry, &params, version)?,
        "tasks/result" => return result(registry, key, id, &params, route),
        "tasks/update" => update(registry, &params)?,
        "tasks/get" => get(registry, &params, version)?,
        _ => cancel(registry, &params, version)?,
    };
    let result = if version.has_tasks_extension() {
        meta::complete(version, result)
    } else {
        result
    };
    route.answer(response(&id, result));
    Ok(())
}

/// `-32021`, HTTP 400: the extension's methods need the extension declared
/// on the request itself (ext-tasks §Error Handling).
pub(crate) fn missing_extension(method: &str) -> Refusal {
    let error = RpcError::new(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "Missing required client capability: {method} needs the tasks extension; declare it in this \
             request's params._meta[\"io.modelcontextprotocol/clientCapabilities\"].extensions[{TASKS_EXTENSION:?}] \
             as an object"
        ),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}));
    Refusal {
        error,
        status: Status::BadRequest,
    }
}

/// `params.taskId`, which every method but `tasks/list` needs.
fn task_id<'a>(method: &str, params: &'a Value) -> Result<&'a str, RpcError> {
    params.get("taskId").and_then(Value::as_str).ok_or_else(|| {
        RpcError::new(
            INVALID_PARAMS,
            format!("invalid params: {method} needs params.taskId as a string"),
        )
    })
}

fn get(registry: &Registry, params: &Value, version: ProtocolVersion) -> Result<Value, RpcError> {
    let id = task_id("tasks/get", params)?;
    registry.locked(|l| {
        l.tasks.sweep(l.witness);
        let task = l
            .tasks
            .get(id)
            .ok_or_else(|| wire::unknown("tasks/get", id))?;
        Ok(wire::task(task, version))
    })
}

fn list(registry: &Registry, params: &Value, version: ProtocolVersion) -> Result<Value, RpcError> {
    let cursor = match params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(cursor)) => Some(cursor.as_str()),
        Some(_) => return Err(bad_cursor()),
    };
    registry.locked(|l| {
        let (page, next) = l.tasks.page(cursor, l.witness).map_err(|_| bad_cursor())?;
        let tasks: Vec<Value> = page
            .into_iter()
            .map(|task| wire::task(task, version))
            .collect();
        let mut result = json!({"tasks": tasks});
        if let Some(next) = next {
            result["nextCursor"] = next.into();
        }
        Ok(result)
    })
}

fn bad_cursor() -> RpcError {
    RpcError::new(
        INVALID_PARAMS,
        "invalid params: tasks/list: params.cursor must be a nextCursor this server returned; omit it for the first page",
    )
}

/// 2025-11-25: the task, now `cancelled`, or `-32602` for an unknown or
/// terminal one. The extension: an empty acknowledgement, whatever state the
/// task is in; `-32602` for an unknown one. There, cancellation is
/// cooperative: work that cannot be stopped goes on and the task ends as its
/// work does, while 2025-11-25 moves the task to `cancelled` regardless.
fn cancel(
    registry: &Registry,
    params: &Value,
    version: ProtocolVersion,
) -> Result<Value, RpcError> {
    let id = task_id("tasks/cancel", params)?;
    registry.locked(|l| {
        l.tasks.sweep(l.witness);
        let cooperative = version.has_tasks_extension();
        if cooperative && l.tasks.get(id).is_some_and(|t| !t.stops_on_cancel()) {
            return Ok(json!({}));
        }
        let outcome = l.tasks.cancel(id, l.witness).map(|task| wire::task(task, version));
        if outcome.is_ok() {
            l.settled();
            if registry.verbose() {
                eprintln!("reference-server: cancelled task {id:?} (tasks/cancel)");
            }
        }
        match (outcome, version.has_core_tasks()) {
            (Ok(task), true) => Ok(task),
            (Ok(_) | Err(NotCancelled::Terminal), false) => Ok(json!({})),
            (Err(NotCancelled::Unknown), _) => Err(wire::unknown("tasks/cancel", id)),
            (Err(NotCancelled::Terminal), true) => {
                let status = l.tasks.get(id).map_or("terminal", |t| wire::status(t, version));
                Err(RpcError::new(
                    INVALID_PARAMS,
                    format!(
                        "invalid params: cannot cancel task {id:?}: it is already {status:?}, a terminal status"
                    ),
                ))
            }
        }
    })
}

/// The extension's `tasks/update`: no task of this server ever asks for
/// input, so there is never an outstanding `inputRequests` key, and the
/// responses are ignored as the extension says; the answer is the ack.
fn update(registry: &Registry, params: &Value) -> Result<Value, RpcError> {
    let id = task_id("tasks/update", params)?;
    if !params.get("inputResponses").is_some_and(Value::is_object) {
        return Err(RpcError::new(
            INVALID_PARAMS,
            "invalid params: tasks/update needs params.inputResponses as an object",
        ));
    }
    registry.locked(|l| {
        l.tasks.sweep(l.witness);
        match l.tasks.get(id) {
            Some(_) => Ok(json!({})),
            None => Err(wire::unknown("tasks/update", id)),
        }
    })
}

/// `tasks/result`: at once for a terminal task; otherwise the request waits,
/// in flight like any long request, until the task is terminal or goes away.
/// A `notifications/cancelled` for it ends the wait, not the task (TSK-06).
fn result(
    registry: &Arc<Registry>,
    key: Key,
    id: reference_wire::RequestId,
    params: &Value,
    route: &Route,
) -> Result<(), Refusal> {
    let task_id = task_id("tasks/result", params)?.to_owned();
    let now = registry.locked(|l| {
        l.tasks.sweep(l.witness);
        let task = l
            .tasks
            .get(&task_id)
            .ok_or_else(|| wire::unknown("tasks/result", &task_id))?;
        Ok::<_, RpcError>(wire::outcome(task))
    })?;
    if let Some(outcome) = now {
        route.answer(match outcome {
            Ok(result) => response(&id, result),
            Err(error) => error_response(Some(&id), &error),
        });
        return Ok(());
    }
    let token = match registry.register(key.clone(), route.clone()) {
        Ok(token) => token,
        Err(Refused::Busy) => {
            return Err(RpcError::new(
                INTERNAL_ERROR,
                format!(
                "internal error: {MAX_IN_FLIGHT} requests are in flight; retry tasks/result later"
            ),
            )
            .into())
        }
        // Unreachable: the session checked the id on this same task.
        Err(Refused::Duplicate) => return Ok(()),
    };
    registry.locked(|l| {
        let offered = ProgressRoute {
            route: route.clone(),
            owner: Some(key.clone()),
        };
        attach(l, &task_id, offered);
    });
    let registry = Arc::clone(registry);
    tokio::spawn(async move {
        let outcome = tokio::select! {
            biased;
            // Cancelled: the registry records it and writes nothing.
            () = token.cancelled() => Ok(Value::Null),
            outcome = settled(&registry, &task_id) => outcome,
        };
        registry.finish_with(&key, &id, &token, outcome);
    });
    Ok(())
}

/// Waits until the task is terminal or gone; its `tasks/result` answer.
async fn settled(registry: &Registry, task_id: &str) -> Result<Value, RpcError> {
    loop {
        let notified = registry.task_settled().notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let outcome = registry.locked(|l| match l.tasks.get(task_id) {
            None => Some(Err(wire::unknown("tasks/result", task_id))),
            Some(task) => wire::outcome(task),
        });
        if let Some(outcome) = outcome {
            return outcome;
        }
        notified.await;
    }
}
