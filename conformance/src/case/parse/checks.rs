//! Checks across a parsed case's steps: what one role, one transport or one era cannot carry
//! out is an error at the step's line, not a surprise during a run.

use super::super::*;
use super::control::Parser;

/// In 2026-07-28 a server never sends requests (RPC-15): a client case where the harness
/// plays such a server can neither send a request (`<` with a method and an id), nor ping
/// the client (`! barrier`), nor cancel a request of its own (`! cancel`).
pub(super) fn check_no_server_requests(p: &Parser, steps: &[Step]) -> Result<(), CaseError> {
    for step in steps {
        let request = match &step.kind {
            StepKind::Send(text) => serde_json::from_str::<Value>(&text.replace("{$", "{"))
                .is_ok_and(|v| v.get("method").is_some() && v.get("id").is_some()),
            StepKind::Barrier | StepKind::Cancel { .. } => true,
            kind => {
                if let Some(steps) = kind.inner() {
                    check_no_server_requests(p, steps)?;
                }
                false
            }
        };
        if request {
            return Err(p.error(
                step.line,
                "in 2026-07-28 the server sends the client no requests (RPC-15), so this case                  can send none, and has no `! barrier` or `! cancel` of its own; drop the line,                  or add `@plays handshake` for a server of the handshake era",
            ));
        }
    }
    Ok(())
}

/// Steps that only one role or one transport can carry out need a case of that role that runs
/// only over that transport, and `! status` must follow the request it judges.
pub(super) fn check_transport_steps(
    p: &Parser,
    case: &Case,
    steps: &[Step],
) -> Result<(), CaseError> {
    let http_only = case.transports == [TransportKind::Http];
    let stdio_only = case.transports == [TransportKind::Stdio];
    let server = Some(Role::Server);
    let http = Some(TransportKind::Http);
    let mut previous: Option<&StepKind> = None;
    for step in steps {
        let (word, role, needs) = match &step.kind {
            StepKind::Disconnect(_) => ("disconnect", None, http),
            StepKind::Header { .. } => ("header", server, http),
            StepKind::Status(_) => ("status", server, http),
            StepKind::Session(_) => ("session", server, http),
            StepKind::DeleteSession => ("delete-session", server, http),
            StepKind::Listen => ("listen", server, http),
            StepKind::ServerExit => ("server-exit", Some(Role::Client), None),
            StepKind::Cancelled(_) => ("cancelled", Some(Role::Client), None),
            StepKind::ExpireSession => ("expire-session", Some(Role::Client), http),
            StepKind::CloseStdin => ("close-stdin", server, Some(TransportKind::Stdio)),
            // A client case's `! exit` is judged over either transport.
            StepKind::Exit(_) if case.role == Role::Server => {
                ("exit", server, Some(TransportKind::Stdio))
            }
            StepKind::Silent { .. } => ("silent", server, None),
            StepKind::Poll(_) => ("poll", server, None),
            StepKind::Alive(_) => ("alive", server, None),
            StepKind::Witness(_) => ("witness", server, None),
            StepKind::Unwitnessed(_) => ("witness not", server, None),
            _ => ("", None, None),
        };
        if let Some(role) = role.filter(|r| *r != case.role) {
            let which = if role == Role::Client {
                "client"
            } else {
                "server"
            };
            return Err(p.error(step.line, format!("`! {word}` is for {which} cases")));
        }
        match needs {
            Some(TransportKind::Http) if !http_only => {
                return Err(p.error(
                    step.line,
                    format!("`! {word}` is an HTTP step; add `@transports http`"),
                ));
            }
            Some(TransportKind::Stdio) if !stdio_only => {
                return Err(p.error(
                    step.line,
                    format!("`! {word}` is a stdio step; add `@transports stdio`"),
                ));
            }
            _ => {}
        }
        if let StepKind::Status(_) = step.kind {
            let follows_request = matches!(
                previous,
                Some(
                    StepKind::Send(_)
                        | StepKind::Cancel { .. }
                        | StepKind::DeleteSession
                        | StepKind::Listen
                )
            );
            if !follows_request {
                return Err(p.error(
                    step.line,
                    "`! status` judges the request just made: put it right after a `>` line, \
                     `! cancel`, `! listen` or `! delete-session`",
                ));
            }
        }
        if let Some(steps) = step.kind.inner() {
            check_transport_steps(p, case, steps)?;
        }
        previous = Some(&step.kind);
    }
    Ok(())
}

/// A server case that ends the process (`! close-stdin`, `! exit`) or performs the opening
/// itself (`@handshake none`) cannot share a target with other cases: it says why with
/// `@fresh`, so the reason stays in the case file for a reviewer to read.
pub(super) fn check_fresh(p: &Parser, case: &Case, steps: &[Step]) -> Result<(), CaseError> {
    if case.role != Role::Server || case.fresh.is_some() {
        return Ok(());
    }
    if !case.handshake {
        return Err(p.error(
            0,
            "a case that performs the opening itself (`@handshake none`) needs a target of its own: add `@fresh REASON`",
        ));
    }
    for step in steps {
        if matches!(step.kind, StepKind::CloseStdin | StepKind::Exit(_)) {
            return Err(p.error(
                step.line,
                "this step ends the server's process, which other cases could share: add `@fresh REASON`",
            ));
        }
        if let Some(inner) = step.kind.inner() {
            check_fresh(p, case, inner)?;
        }
    }
    Ok(())
}

/// A server case that calls a role as a task (`params.task`, or the tasks extension declared
/// in the call's `_meta`) says so in `@fixtures` (`work:task`, or `echo:no-task` when the call
/// is one the tool must refuse), so that the plan checks what the tool declares and a target
/// file's `task_work` plays it.
pub(super) fn check_task_calls(p: &Parser, case: &Case, steps: &[Step]) -> Result<(), CaseError> {
    for step in steps {
        if let Some(inner) = step.kind.inner() {
            check_task_calls(p, case, inner)?;
        }
        let StepKind::Send(text) = &step.kind else {
            continue;
        };
        let text = super::super::deviation::placeholders_as_zero(text);
        let Ok(message) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let Some(params) = message.get("params") else {
            continue;
        };
        let Some(role) = params
            .get("name")
            .and_then(Value::as_str)
            .and_then(crate::fixtures::Role::parse)
        else {
            continue;
        };
        let called_as_task = message.get("method").and_then(Value::as_str) == Some("tools/call")
            && crate::fixtures::is_task_call(params);
        let declared = case
            .fixtures
            .iter()
            .any(|need| need.role == role && need.task.is_some());
        if called_as_task && !declared {
            return Err(p.error(
                step.line,
                format!("this line calls `{role}` as a task: say so in `@fixtures` with `{role}:task` (or `{role}:no-task` when the tool must refuse it), so that the run checks what the target's tool declares"),
            ));
        }
    }
    Ok(())
}
