//! Settling the roles of a target file: the candidates proposed for each fixture role are
//! checked in one session, the first that holds is chosen, and what was tried is kept for the
//! draft's notes.

use super::check;
use super::propose::{self, Unit};
use super::session::Session;
use super::{Ask, Candidate, RoleDraft, Seen, Tried, Verdict, CHECK_ORDER};
use crate::discovery::{self, Tool};
use crate::fixtures::Role;
use crate::transport::Transport;
use serde_json::Value;
use std::collections::HashMap;

/// Settles every fixture role in [`CHECK_ORDER`]: a tool that played one role with a unit
/// (seconds or milliseconds) is proposed for the later roles with that unit only.
pub(super) async fn fixture_roles<T: Transport>(
    session: &mut Session<T>,
    tools: &[Tool],
    ask: &Ask,
    seen: &mut dyn FnMut(Seen<'_>),
) -> Vec<RoleDraft> {
    let mut roles = vec![];
    let mut units: HashMap<String, Unit> = HashMap::new();
    for role in CHECK_ORDER {
        let candidates = propose::candidates(role, tools)
            .into_iter()
            .filter(|c| match (c.unit, units.get(&c.tool)) {
                (Some(unit), Some(known)) => unit == *known,
                _ => true,
            })
            .collect();
        let draft = settle(session, role, candidates, ask).await;
        if let Some((candidate, _, _)) = draft.chosen() {
            if let Some(unit) = candidate.unit {
                units.entry(candidate.tool.clone()).or_insert(unit);
            }
        }
        seen(Seen::Role(&draft));
        roles.push(draft);
    }
    roles
}

/// A role settled again in a second session replaces the first draft's choice, and what was
/// tried in both is kept, the second session's first.
pub(super) fn settle_again(roles: &mut Vec<RoleDraft>, draft: RoleDraft) {
    match roles.iter_mut().find(|r| r.role == draft.role) {
        Some(earlier) => {
            let mut tried = draft.tried;
            tried.append(&mut earlier.tried);
            earlier.tried = tried;
            earlier.chosen = draft.chosen;
        }
        None => roles.push(draft),
    }
}

/// A task role (`work_required`): the tool of its name whose listing declares the task
/// support the role is named for, as discovery finds it; else any tool whose
/// `execution.taskSupport` is `"required"`, with placeholder arguments for what it requires.
/// Never called by init: its only plain call is one the server must refuse, and a task is
/// the cases' business. But the case calls it plainly, and a server that wrongly ran it
/// would run it for real: a tool not annotated read-only is mapped only when named with
/// `--try`.
pub(super) fn task_role(role: Role, tools: &[Tool], tries: &[String]) -> RoleDraft {
    let named = tools
        .iter()
        .filter(|t| t.name == role.as_str() && discovery::fits(t, role))
        .map(|tool| {
            let why =
                format!("named `{role}`, with `execution.taskSupport: \"required\"` in tools/list");
            (Candidate::of(role, tool, None, why), tool)
        });
    let requiring = tools
        .iter()
        .filter(|t| t.name != role.as_str() && t.task_support.as_deref() == Some("required"))
        .map(|tool| {
            let why = "`execution.taskSupport: \"required\"` in tools/list".to_string();
            (Candidate::of(role, tool, placeholders(tool), why), tool)
        });
    let tried: Vec<Tried> = named
        .chain(requiring)
        .take(propose::MAX_PER_ROLE)
        .map(|(candidate, tool)| {
            let verdict = if tool.read_only || tries.contains(&tool.name) {
                Verdict::Passed {
                    checked: "its listing (a task role is not called)".into(),
                    progress: true,
                }
            } else {
                Verdict::Unchecked(format!(
                    "`{}` is not annotated read-only (`readOnlyHint`): the case calls it plainly, expecting a refusal, and a server that ran it anyway could change things; `--try {}` maps it",
                    tool.name, tool.name
                ))
            };
            Tried { candidate, verdict }
        })
        .collect();
    let chosen = tried
        .iter()
        .position(|t| matches!(t.verdict, Verdict::Passed { .. }));
    RoleDraft {
        role,
        tried,
        chosen,
    }
}

/// Arguments for what `tool`'s input schema requires, a placeholder of each one's type
/// (`None` when it requires nothing): enough for a call the server must refuse.
fn placeholders(tool: &Tool) -> Option<Value> {
    let required = tool.required();
    if required.is_empty() {
        return None;
    }
    let arguments: serde_json::Map<String, Value> = required
        .iter()
        .map(|name| {
            let value = match tool.argument_type(name) {
                Some("integer" | "number") => Value::from(1),
                Some("boolean") => Value::Bool(false),
                Some("array") => Value::Array(vec![]),
                Some("object") => Value::Object(Default::default()),
                _ => Value::from("conformance"),
            };
            (name.to_string(), value)
        })
        .collect();
    Some(Value::Object(arguments))
}

/// Considers a role's candidates in order until one passes its check. `work` prefers a
/// candidate that sends progress: one that passes without is kept only if none does.
pub(super) async fn settle<T: Transport>(
    session: &mut Session<T>,
    role: Role,
    candidates: Vec<Candidate>,
    ask: &Ask,
) -> RoleDraft {
    let mut draft = RoleDraft {
        role,
        tried: vec![],
        chosen: None,
    };
    let mut gone = false;
    for candidate in candidates {
        let verdict = if gone {
            Verdict::Unchecked("the target stopped during an earlier check".into())
        } else if !candidate.read_only && !ask.tries.contains(&candidate.tool) {
            Verdict::Unchecked(format!(
                "`{}` is not annotated read-only (`readOnlyHint`), so init did not call it; `--try {}` lets it",
                candidate.tool, candidate.tool
            ))
        } else {
            let verdict = check::check(session, &candidate, ask.reply).await;
            gone = session.io.finished();
            verdict
        };
        let passed = matches!(verdict, Verdict::Passed { .. });
        let with_progress = matches!(verdict, Verdict::Passed { progress: true, .. });
        draft.tried.push(Tried { candidate, verdict });
        if passed {
            if draft.chosen.is_none() || with_progress {
                draft.chosen = Some(draft.tried.len() - 1);
            }
            if role != Role::Work || with_progress {
                break;
            }
        }
    }
    draft
}
