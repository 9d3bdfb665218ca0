//! A task's work: how a `tools/call` becomes a task and how its work runs
//! (where its progress goes is `progress.rs`).
//!
//! The task is in the table and its `CreateTaskResult` is queued, under one
//! lock, before the work starts, so a `tasks/get` that follows the answer
//! always finds it (ext-tasks §Task Creation) and on stdio nothing of the
//! work comes before the answer. The work then runs as a tokio task of its
//! own, raced against the task's token (fired by `tasks/cancel` or by the
//! task's removal) and its `ttl`. Nothing of it is tied to the request that
//! created it: a `notifications/cancelled` or a closed stream for that
//! request touches nothing (TSK-03).

use super::table::ProgressRoute;
use super::wire;
use crate::outbox::Route;
use crate::registry::Registry;
use crate::tools::{self, Context, LongTool, Reporter};
use crate::version::ProtocolVersion;
use reference_wire::{error_response, response, RequestId, RpcError, INTERNAL_ERROR};
use serde_json::Value;
use std::sync::Arc;

use super::table::MAX_TASKS;

/// What a new task does.
pub(crate) enum Work {
    /// Runs a long tool.
    Run(LongTool),
    /// Nothing left to run: the call's result is already known (arguments
    /// that do not match the schema, an `isError` result in 2025-11-25).
    Done(Value),
}

/// A `tools/call` that becomes a task.
pub(crate) struct NewTask {
    pub work: Work,
    pub ttl_ms: u64,
    /// The call's `progressToken`, which stays in use while the task works
    /// (2025-11-25, PRG-10); the extension has no progress on tasks (PRG-11).
    pub progress_token: Option<Value>,
    pub version: ProtocolVersion,
}

/// Creates the task and answers `id` on `route` with its `CreateTaskResult`,
/// then starts the work. A table full of working tasks is an error answer.
pub(crate) fn start(registry: &Arc<Registry>, id: &RequestId, new: NewTask, route: &Route) {
    let NewTask {
        work,
        ttl_ms,
        progress_token,
        version,
    } = new;
    // On stdio the work's progress shares stdout with everything else; on
    // HTTP the call's own stream ends with this answer, so progress waits
    // for a `tasks/result` stream to carry it (`attach`).
    let progress = route.is_shared().then(|| ProgressRoute {
        route: route.clone(),
        owner: None,
    });
    let stops_on_cancel = match &work {
        Work::Run(tool) => tool.stops_on_cancel(),
        Work::Done(_) => true,
    };
    let created = registry.locked(|l| {
        let (task, token) = l
            .tasks
            .create(ttl_ms, progress, stops_on_cancel, l.witness)
            .ok()?;
        route.answer(response(id, wire::created(task, version)));
        let (task_id, expires) = (task.id.clone(), task.expires());
        if let Work::Done(result) = &work {
            l.tasks.finish(&task_id, result.clone(), l.witness);
            l.settled();
        }
        Some((task_id, token, expires))
    });
    let Some((task_id, token, expires)) = created else {
        let full = RpcError::new(
            INTERNAL_ERROR,
            format!(
                "internal error: {MAX_TASKS} tasks are working; cancel some with tasks/cancel or wait for them to finish"
            ),
        );
        route.answer(error_response(Some(id), &full));
        return;
    };
    let Work::Run(tool) = work else {
        return;
    };
    let registry = Arc::clone(registry);
    tokio::spawn(async move {
        let cx = Context {
            registry: &registry,
            reporter: Reporter::Task(&task_id),
            progress_token: progress_token.filter(|_| version.has_core_tasks()),
            version,
        };
        let ended = tokio::select! {
            biased;
            () = token.cancelled(), if stops_on_cancel => Ended::Stopped,
            () = tokio::time::sleep_until(expires) => Ended::Expired,
            result = tools::run(tool, cx) => Ended::Finished(result),
        };
        registry.locked(|l| match ended {
            Ended::Stopped => l.tasks.stopped(&task_id, l.witness),
            Ended::Expired => {
                if l.tasks.remove(&task_id, l.witness) {
                    l.settled();
                }
            }
            Ended::Finished(result) => {
                if l.tasks.finish(&task_id, result, l.witness) {
                    l.settled();
                }
            }
        });
    });
}

/// How a task's work ended.
enum Ended {
    /// Its token fired: `tasks/cancel`, or the task was removed.
    Stopped,
    /// Its `ttl` ran out while it worked: the task goes away.
    Expired,
    Finished(Value),
}
