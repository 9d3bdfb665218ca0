//! `tools/list`, and what it says about tasks.
//!
//! In 2025-11-25 a tool's `execution.taskSupport` decides whether a call of it must, may
//! or must not be a task, on top of the server's `tasks.requests.tools.call` capability
//! (TSK-01). A client that augments a call it was not allowed to, or fails to augment
//! one that requires it, breaks a MUST, so the client keeps what the last listing said
//! and asks for a listing before its first task call.

use crate::era;
use crate::{CallError, Client, RequestOptions, TaskSupport};
use serde_json::{json, Value};
use std::collections::HashMap;

/// How many pages of `tools/list` are read before the rest is given up: a server whose
/// cursors never end cannot keep the client listing.
const MAX_PAGES: usize = 100;

impl Client {
    /// Lists the server's tools, following `nextCursor` (at most 100 pages), and keeps
    /// each tool's task support for the calls that follow.
    pub async fn list_tools(&self) -> Result<Vec<Value>, CallError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for page in 1..=MAX_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let result = self
                .request("tools/list", params, RequestOptions::default())
                .await?;
            let Some(listed) = result.get("tools").and_then(Value::as_array) else {
                return Err(CallError::InvalidResult(
                    "the tools/list result has no tools array".into(),
                ));
            };
            tools.extend(listed.iter().cloned());
            cursor = result
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if cursor.is_none() {
                break;
            }
            if page == MAX_PAGES {
                crate::log::warn(&format!(
                    "tools/list still had more pages after {MAX_PAGES}; the rest was not read"
                ));
            }
        }
        let support = tools
            .iter()
            .filter_map(|tool| {
                let name = tool.get("name").and_then(Value::as_str)?;
                Some((name.to_owned(), TaskSupport::of(tool)))
            })
            .collect::<HashMap<_, _>>();
        *self
            .shared
            .task_support
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(support);
        Ok(tools)
    }

    /// The task support of `tool` as the last [`list_tools`](Self::list_tools) gave it;
    /// `None` before a listing or for a tool it did not name.
    pub fn task_support(&self, tool: &str) -> Option<TaskSupport> {
        let listed = self
            .shared
            .task_support
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        listed.as_ref()?.get(tool).copied()
    }

    /// Whether tools were listed in this session.
    pub(crate) fn tools_listed(&self) -> bool {
        self.shared
            .task_support
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Whether the server declared task-augmented `tools/call` (2025-11-25:
    /// `capabilities.tasks.requests.tools.call`). Without it no call may be a task, whatever
    /// a tool says (TSK-01).
    pub(crate) fn server_takes_tool_tasks(&self) -> bool {
        era::has_core_tasks(&self.protocol_version())
            && self
                .server_capabilities()
                .pointer("/tasks/requests/tools/call")
                .is_some_and(declared)
    }

    /// Whether the server declared `tasks/cancel` (2025-11-25: `capabilities.tasks.cancel`).
    pub(crate) fn server_takes_task_cancel(&self) -> bool {
        self.server_capabilities()
            .pointer("/tasks/cancel")
            .is_some_and(declared)
    }

    /// How a call of `tool` may run in this session, as far as it is known without a
    /// listing: `Some(Required)` only when the server takes task calls and listed `tool`
    /// as requiring one.
    pub(crate) fn tasks_allowed(&self, tool: &str) -> Option<TaskSupport> {
        if !self.server_takes_tool_tasks() {
            return None;
        }
        self.task_support(tool)
    }
}

/// Whether a capability entry declares the capability: the specification writes `{}`;
/// `null` and `false` are read as not declared.
fn declared(entry: &Value) -> bool {
    !entry.is_null() && entry != &Value::Bool(false)
}
