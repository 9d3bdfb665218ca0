//! `tools/call`: its params, whether it runs plainly or as a task, and the
//! handler of a long tool.
//!
//! An instant tool is answered here at once. A long tool runs as a tokio
//! task of its own under the token the registry gives its request, raced
//! against that token: whichever ends first decides, under the registry's
//! lock, whether its response is written. A call that becomes an MCP task
//! is handed to `tasks/` instead, which answers with the task handle.

use crate::meta;
use crate::outbox::Route;
use crate::registry::{Refused, Registry, MAX_IN_FLIGHT};
use crate::request::{Key, Refusal};
use crate::tasks::{self, Mode, NewTask, Work};
use crate::tools::{self, Call, Context, Reporter, ToolError};
use crate::version::ProtocolVersion;
use reference_wire::{response, RequestId, RpcError, INVALID_PARAMS};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Serves `tools/call`; `declared`: whether a 2026-07-28 request declared
/// the tasks extension. Its answer (now, or later for a long tool) goes to
/// `route`; a protocol error comes back for the transport to deliver.
pub(crate) fn serve(
    registry: &Arc<Registry>,
    key: Key,
    id: &RequestId,
    params: Option<Value>,
    version: ProtocolVersion,
    declared: bool,
    route: &Route,
) -> Result<(), Refusal> {
    let CallParams {
        name,
        args,
        progress_token,
        task,
    } = call_params(params).map_err(|message| RpcError::new(INVALID_PARAMS, message))?;
    let mode = tasks::mode(&name, task.as_ref(), version, declared)?;
    let work = match tools::prepare(&name, &args, version) {
        Ok(Call::Long(tool)) => Work::Run(tool),
        Ok(Call::Instant(result)) => {
            route.answer(response(id, meta::complete(version, result)));
            return Ok(());
        }
        Err(ToolError::BadArguments(message)) if version.input_errors_are_tool_results() => {
            let result = tools::error_result(message);
            // 2025-11-25: a client that asked for a task gets one, which
            // ends with the error result (`failed`); otherwise it is the answer.
            let asked_for_task = matches!(mode, Mode::Task { .. }) && version.has_core_tasks();
            if !asked_for_task {
                route.answer(response(id, meta::complete(version, result)));
                return Ok(());
            }
            Work::Done(result)
        }
        Err(ToolError::BadArguments(message) | ToolError::Unknown(message)) => {
            return Err(RpcError::new(INVALID_PARAMS, message).into())
        }
    };
    let tool = match (mode, work) {
        (Mode::Task { ttl_ms }, work) => {
            let new = NewTask {
                work,
                ttl_ms,
                progress_token,
                version,
            };
            tasks::start(registry, id, new, route);
            return Ok(());
        }
        (Mode::Plain, Work::Run(tool)) => tool,
        // A known result without a task was answered above.
        (Mode::Plain, Work::Done(_)) => return Ok(()),
    };
    let token = match registry.register(key.clone(), route.clone()) {
        Ok(token) => token,
        Err(Refused::Busy) => {
            let busy = format!(
                "server busy: {MAX_IN_FLIGHT} requests are in flight; cancel some or wait for them to finish"
            );
            route.answer(response(
                id,
                meta::complete(version, tools::error_result(busy)),
            ));
            return Ok(());
        }
        // Unreachable: `request` checked the id on this same task.
        Err(Refused::Duplicate) => return Ok(()),
    };
    let registry = Arc::clone(registry);
    let (id, route) = (id.clone(), route.clone());
    tokio::spawn(async move {
        let cx = Context {
            registry: &registry,
            reporter: Reporter::Request {
                token: &token,
                route: &route,
            },
            progress_token,
            version,
        };
        let result = tokio::select! {
            biased;
            () = token.cancelled() => Value::Null,
            result = tools::run(tool, cx) => meta::complete(version, result),
        };
        registry.finish(&key, &id, &token, result);
    });
    Ok(())
}

/// The parts of a `tools/call` request.
struct CallParams {
    name: String,
    args: Map<String, Value>,
    progress_token: Option<Value>,
    /// `params.task`, unchecked: what it means depends on the version.
    task: Option<Value>,
}

/// Splits `tools/call` params into name, arguments, progress token and task.
fn call_params(params: Option<Value>) -> Result<CallParams, String> {
    let Some(Value::Object(mut params)) = params else {
        return Err("invalid params: tools/call needs a params object with a \"name\"".into());
    };
    let Some(Value::String(name)) = params.remove("name") else {
        return Err("invalid params: tools/call needs params.name as a string".into());
    };
    let args = match params.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(args)) => args,
        Some(_) => {
            return Err("invalid params: params.arguments must be an object when present".into())
        }
    };
    let progress_token = match params.get("_meta").and_then(|m| m.get("progressToken")) {
        None => None,
        Some(token) if RequestId::from_value(token).is_some() => Some(token.clone()),
        Some(_) => {
            return Err(
                "invalid params: params._meta.progressToken must be a string or an integer".into(),
            )
        }
    };
    let task = params.remove("task");
    Ok(CallParams {
        name,
        args,
        progress_token,
        task,
    })
}
