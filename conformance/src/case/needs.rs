//! `@needs`: what a server must declare for a case to apply to it.
//!
//! Tasks are optional in both forms the protocol has had: a server of 2025-11-25 offers them
//! by declaring `capabilities.tasks.requests.tools.call` in its `initialize` result (TSK-01),
//! one of 2026-07-28 by listing the `io.modelcontextprotocol/tasks` extension under
//! `capabilities.extensions` of its `server/discover` result (TSK-05). A case about tasks
//! against a server that declares neither has nothing to test: it is skipped with the reason,
//! never failed. `@needs no-tasks` is the converse, for the rule about servers without them
//! (TSK-02).
//!
//! `@needs task-cancel`: at 2025-11-25 a server that offers tasks says whether it serves
//! `tasks/cancel` (`capabilities.tasks.cancel`); a case that cancels a task needs it. The 2026
//! extension always has `tasks/cancel`.
//!
//! `@needs subscriptions`: in 2026-07-28 the notifications a server may send outside a request
//! (`tools`, `prompts` or `resources` `listChanged`, `resources.subscribe`) flow only on a
//! `subscriptions/listen` stream, so a server that declares one of them serves that request;
//! one that declares none has nothing to subscribe to, and a case about subscriptions is
//! skipped.

use serde_json::Value;

/// The identifier of the tasks extension (2026-07-28).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// One thing a case needs the server to declare, or not to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Task-augmented `tools/call` (2025-11-25) or the tasks extension (2026-07-28).
    Tasks,
    /// Neither: the server declares no task support for `tools/call`.
    NoTasks,
    /// Something to subscribe to with `subscriptions/listen` (2026-07-28).
    Subscriptions,
    /// `tasks/cancel`: `capabilities.tasks.cancel` at 2025-11-25 (the extension always has it).
    TaskCancel,
}

impl Need {
    /// The words `@needs` takes.
    pub const WORDS: [&'static str; 4] = ["tasks", "no-tasks", "subscriptions", "task-cancel"];

    /// The need a word names.
    pub fn parse(word: &str) -> Option<Need> {
        match word {
            "tasks" => Some(Need::Tasks),
            "no-tasks" => Some(Need::NoTasks),
            "subscriptions" => Some(Need::Subscriptions),
            "task-cancel" => Some(Need::TaskCancel),
            _ => None,
        }
    }

    /// Why the case does not apply to a server that opened with `opening` (the result of
    /// its `initialize`, or of `server/discover` when `stateless`), if it does not.
    pub fn unmet(self, opening: &Value, stateless: bool) -> Option<String> {
        if self == Need::Subscriptions {
            return (!stateless || !declares_subscriptions(opening)).then(|| {
                "the case is about subscriptions, and the server's `server/discover` declares nothing to subscribe to (no `listChanged` for tools, prompts or resources, no `resources.subscribe`)".to_string()
            });
        }
        if self == Need::TaskCancel {
            let cancels = opening
                .pointer("/result/capabilities/tasks/cancel")
                .is_some_and(|v| !v.is_null());
            return (!stateless && !cancels).then(|| {
                "the case cancels a task, and the server's `initialize` does not declare `tasks.cancel` (it need not serve `tasks/cancel`)".to_string()
            });
        }
        let declared = declares_tasks(opening, stateless);
        let what = if stateless {
            format!("the `{TASKS_EXTENSION}` extension in `server/discover`")
        } else {
            "the `tasks.requests.tools.call` capability in `initialize`".to_string()
        };
        match (self, declared) {
            (Need::Tasks, false) => Some(format!(
                "the case is about tasks, and the server does not declare {what} (tasks are optional, TSK-01)"
            )),
            (Need::NoTasks, true) => Some(format!(
                "the case is about servers without tasks, and this one declares {what}"
            )),
            _ => None,
        }
    }
}

/// Whether a `server/discover` result declares notifications a subscription can carry.
fn declares_subscriptions(opening: &Value) -> bool {
    let capabilities = opening.pointer("/result/capabilities");
    let on = |path: &str| capabilities.and_then(|c| c.pointer(path)) == Some(&Value::Bool(true));
    [
        "/tools/listChanged",
        "/prompts/listChanged",
        "/resources/listChanged",
        "/resources/subscribe",
    ]
    .iter()
    .any(|path| on(path))
}

/// Whether an opening result declares task-augmented tool calls.
fn declares_tasks(opening: &Value, stateless: bool) -> bool {
    let capabilities = opening
        .pointer("/result/capabilities")
        .unwrap_or(&Value::Null);
    if stateless {
        capabilities
            .get("extensions")
            .and_then(|e| e.get(TASKS_EXTENSION))
            .is_some_and(|v| !v.is_null())
    } else {
        capabilities
            .pointer("/tasks/requests/tools/call")
            .is_some_and(|v| !v.is_null())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tasks_are_declared_per_era() {
        let core =
            json!({"result": {"capabilities": {"tasks": {"requests": {"tools": {"call": {}}}}}}});
        let ext = json!({"result": {"capabilities": {"extensions": {TASKS_EXTENSION: {}}}}});
        let plain = json!({"result": {"capabilities": {"tools": {}}}});
        assert_eq!(Need::Tasks.unmet(&core, false), None);
        assert_eq!(Need::Tasks.unmet(&ext, true), None);
        assert!(
            Need::Tasks.unmet(&ext, false).is_some(),
            "the extension is no 2025 capability"
        );
        assert!(Need::Tasks.unmet(&core, true).is_some());
        assert!(Need::Tasks.unmet(&plain, false).unwrap().contains("TSK-01"));
        assert_eq!(Need::NoTasks.unmet(&plain, false), None);
        assert!(Need::NoTasks.unmet(&core, false).is_some());
        // Tasks for other requests only (`tasks.list`) do not make tool calls tasks.
        let listing = json!({"result": {"capabilities": {"tasks": {"list": {}}}}});
        assert_eq!(Need::NoTasks.unmet(&listing, false), None);
    }

    #[test]
    fn cancelling_a_task_needs_tasks_cancel_declared_at_2025_11_25() {
        let calls =
            json!({"result": {"capabilities": {"tasks": {"requests": {"tools": {"call": {}}}}}}});
        let cancels = json!({"result": {"capabilities": {"tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}}}});
        assert!(Need::TaskCancel
            .unmet(&calls, false)
            .unwrap()
            .contains("`tasks.cancel`"));
        assert_eq!(Need::TaskCancel.unmet(&cancels, false), None);
        assert_eq!(
            Need::TaskCancel.unmet(&calls, true),
            None,
            "the extension has it"
        );
    }

    #[test]
    fn subscriptions_need_something_to_subscribe_to() {
        let listed = json!({"result": {"capabilities": {"tools": {"listChanged": true}}}});
        let resources = json!({"result": {"capabilities": {"resources": {"subscribe": true}}}});
        let plain = json!({"result": {"capabilities": {"tools": {}}}});
        assert_eq!(Need::Subscriptions.unmet(&listed, true), None);
        assert_eq!(Need::Subscriptions.unmet(&resources, true), None);
        assert!(Need::Subscriptions.unmet(&plain, true).is_some());
        assert!(
            Need::Subscriptions.unmet(&listed, false).is_some(),
            "no subscriptions/listen before 2026-07-28"
        );
    }
}
