//! Where a task's progress goes: the route a working task's progress
//! notifications take, and the `tasks/result` streams that offer themselves
//! as that route (2025-11-25, PRG-10).
//!
//! Apart from `run.rs` because the tools send progress through here while
//! they run (`tools.rs`), and `run.rs` runs the tools: this module needs
//! only the registry and the table, so the imports point one way.

use super::table::{ProgressRoute, State};
use super::wire::RELATED_TASK;
use crate::outbox::Route;
use crate::registry::{Locked, Registry};
use reference_wire::notification;
use serde_json::{json, Value};

/// Sends one progress notification of a task's work, tied to the task in
/// `_meta`, to wherever its progress goes now; nothing once the task is no
/// longer working. The check and the push happen under the registry lock, so
/// once `tasks/cancel` has moved the task to `cancelled` nothing more is
/// queued (PRG-10).
pub(crate) async fn send(registry: &Registry, task_id: &str, mut params: Value) {
    if let Value::Object(fields) = &mut params {
        fields.insert("_meta".into(), json!({RELATED_TASK: {"taskId": task_id}}));
    }
    let line = notification("notifications/progress", Some(params));
    // Wait for room outside the lock, then decide under it.
    let Some(route) = registry.locked(|l| live_route(l, task_id)) else {
        return;
    };
    route.room().await;
    registry.locked(|l| {
        if let Some(route) = live_route(l, task_id) {
            route.notify(line);
        }
    });
}

/// Where a working task's progress goes now, if anywhere.
fn live_route(l: &Locked<'_>, task_id: &str) -> Option<Route> {
    let task = l.tasks.get(task_id).filter(|t| t.is_working())?;
    let progress = task.progress()?;
    match &progress.owner {
        Some(owner) if !l.is_in_flight(owner) => None,
        _ => Some(progress.route.clone()),
    }
}

/// A `tasks/result` request waiting on `route` (filed under `owner`) offers
/// its stream for the task's progress, unless the progress already has a
/// live route.
pub(crate) fn attach(l: &mut Locked<'_>, task_id: &str, offered: ProgressRoute) {
    let live = live_route(l, task_id).is_some();
    if let Some(task) = l.tasks.get_mut(task_id) {
        if !live && matches!(task.state, State::Working) {
            task.set_progress(offered);
        }
    }
}
