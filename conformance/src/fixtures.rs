//! The fixture profile as the harness knows it: the roles cases call (`work`, `ping`, `echo`,
//! `sleep`, `ticker`, `cancellations`), what each role's behaviour lets a verdict conclude,
//! and how a target file maps a role onto one of a third-party server's own tools.
//!
//! What a role tells the harness: `work` and `ticker` never end on their own, so a response
//! after their cancel was caused by it; `sleep {ms}` cannot finish before `ms` has passed; the
//! `cancellations` witness answers with a JSON array of the request ids whose handlers saw
//! their cancellation.

use crate::pattern::json_equal;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// Every role of the fixture profile.
pub const ROLES: [&str; 6] = ["work", "ping", "echo", "sleep", "ticker", "cancellations"];

/// Roles only a server with tasks (2025-11-25) can play: `work_required` is `work` whose
/// `execution.taskSupport` is `"required"`, so a plain call of it must be refused (TSK-01).
/// Discovered and mapped like the profile's roles; `conformance init` maps them from the
/// listing alone, never calling them.
pub const TASK_ROLES: [&str; 1] = ["work_required"];

/// Whether `name` is a role a case may call: one of [`ROLES`] or [`TASK_ROLES`].
pub fn is_role(name: &str) -> bool {
    ROLES.contains(&name) || TASK_ROLES.contains(&name)
}

/// Which tool plays a role.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    /// The server's tool name.
    pub tool: String,
    /// Argument template; `None` passes the case's arguments unchanged.
    pub arguments: Option<Value>,
    /// Whether the tool reports progress when asked (`"progress": false` in the file: sending
    /// progress is optional, PRG-08, so cases that wait for it are skipped).
    pub progress: bool,
}

/// Where a mapping of roles onto tools came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Source {
    /// A target file.
    #[default]
    TargetFile,
    /// The server's own `tools/list`, by name and schema (no target file).
    Discovered,
}

/// How a target's tools stand in for the fixture profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fixtures {
    /// Role → its tool, or `None` when the target has nothing that plays it. A role not in
    /// the map is absent.
    pub roles: BTreeMap<String, Option<Mapping>>,
    /// Where the mapping came from.
    pub source: Source,
}

/// What a role's calls must do, as a skip reason says it.
pub fn role_needs(role: &str) -> &'static str {
    match role {
        "work" => "a call that runs until cancelled, with progress",
        "ticker" => "a call that sends progress every `interval_ms` until cancelled",
        "sleep" => "a call that answers after `ms` milliseconds",
        "echo" => "a call that answers with the `text` it was given",
        "ping" => "a call that answers `Server: still available`",
        "cancellations" => {
            "the witness: a call that lists the requests whose handlers saw their cancellation"
        }
        "work_required" => {
            "a tool like `work` whose `execution.taskSupport` is `\"required\"`: it only runs as a task"
        }
        _ => "a tool of the fixture profile",
    }
}

impl Fixtures {
    /// The role's tool, if the target has one.
    pub fn mapping(&self, role: &str) -> Option<&Mapping> {
        self.roles.get(role).and_then(Option::as_ref)
    }

    /// Whether the target has something playing `role`.
    pub fn has(&self, role: &str) -> bool {
        self.mapping(role).is_some()
    }

    /// Why a case that needs `needs` (a role, or `role:progress` for a role that must report
    /// progress) cannot run against this target, if it cannot.
    pub fn lacks(&self, needs: &str) -> Option<String> {
        let (role, progress) = match needs.split_once(':') {
            Some((role, "progress")) => (role, true),
            _ => (needs, false),
        };
        match self.mapping(role) {
            None if role == "cancellations" => None,
            None => Some(match self.source {
                Source::TargetFile => format!(
                    "needs a tool that plays `{role}` ({}); the target file maps none",
                    role_needs(role)
                ),
                Source::Discovered if TASK_ROLES.contains(&role) => format!(
                    "needs a tool that plays `{role}` ({}); map one with a target file",
                    role_needs(role)
                ),
                Source::Discovered => format!(
                    "needs a tool that plays `{role}` ({}); map one with a target file (`conformance init` drafts it)",
                    role_needs(role)
                ),
            }),
            Some(m) if progress && !m.progress => Some(format!(
                "the target file says `{}` (fixture {role}) sends no progress, which is allowed (PRG-08)",
                m.tool
            )),
            Some(_) => None,
        }
    }
}

/// Roles whose calls never end on their own: any response to one that follows its cancel was
/// caused by the cancel, so the barrier does not excuse it.
pub const ENDLESS_ROLES: [&str; 3] = ["work", "ticker", "work_required"];

/// Whether a call of `role` never ends on its own.
pub fn is_endless(role: &str) -> bool {
    ENDLESS_ROLES.contains(&role)
}

/// How long after it was sent a `sleep {ms}` call could have ended on its own at the earliest:
/// `ms` less a margin for timers that fire a little early (a tenth, at least 5 ms).
pub fn sleep_natural_end(ms: u64) -> Duration {
    Duration::from_millis(ms - (ms / 10).max(5).min(ms))
}

/// The ids the `cancellations` witness listed in its answer (a JSON array in the first text
/// item), or `None` when the answer is not of that shape.
pub fn witness_list(answer: &Value) -> Option<Vec<Value>> {
    answer
        .pointer("/result/content/0/text")
        .and_then(Value::as_str)
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| v.as_array().cloned())
}

/// What a `cancellations` witness lists beyond an earlier answer `before` (a running server
/// that served earlier cases lists their requests too). A witness is a log, oldest first, that
/// grows at its end, and a bounded one drops its oldest entries as it grows: the newest end of
/// `before` that `now` starts with was there already. Of a witness kept in another order (a
/// set, sorted), the first entries of each id, as many as `before` listed, are the old ones.
pub fn witness_since(before: &[Value], now: &[Value]) -> Vec<Value> {
    let continued = |rest: &[Value]| {
        rest.len() <= now.len() && rest.iter().zip(now).all(|(a, b)| json_equal(a, b))
    };
    if let Some(rest) = (0..before.len())
        .map(|dropped| &before[dropped..])
        .find(|r| continued(r))
    {
        return now[rest.len()..].to_vec();
    }
    let mut old: Vec<(&Value, usize)> = vec![];
    for id in before {
        match old.iter_mut().find(|(seen, _)| json_equal(seen, id)) {
            Some((_, n)) => *n += 1,
            None => old.push((id, 1)),
        }
    }
    now.iter()
        .filter(
            |entry| match old.iter_mut().find(|(id, _)| json_equal(id, entry)) {
                Some((_, n)) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            },
        )
        .cloned()
        .collect()
}

/// Fills an argument template from the case's arguments.
pub fn fill_arguments(template: &Value, case_arguments: &Value) -> Value {
    match template {
        Value::String(s) => {
            let Some(inner) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else {
                return template.clone();
            };
            let (name, op) = match inner.find(['/', '*']) {
                Some(at) => (&inner[..at], Some((&inner[at..at + 1], &inner[at + 1..]))),
                None => (inner, None),
            };
            let Some(value) = case_arguments.get(name) else {
                return template.clone();
            };
            match op {
                None => value.clone(),
                Some((op, factor)) => match (value.as_f64(), factor.parse::<f64>()) {
                    (Some(v), Ok(f)) if f != 0.0 => {
                        let result = if op == "/" { v / f } else { v * f };
                        if value.is_i64() && result.fract() == 0.0 && result.abs() < 9.0e15 {
                            Value::from(result as i64)
                        } else {
                            serde_json::Number::from_f64(result)
                                .map(Value::Number)
                                .unwrap_or(Value::Null)
                        }
                    }
                    _ => template.clone(),
                },
            }
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fill_arguments(v, case_arguments)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| fill_arguments(v, case_arguments))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Rewrites a `tools/call` of a profile role into the target's own tool. Returns the role it
/// stood for when it rewrote the message. A role played by the tool of its own name with the
/// case's arguments (what discovery finds) is the profile itself: nothing is rewritten, and the
/// case's expectations of its results hold as written.
pub fn rewrite_call(message: &mut Value, fixtures: &Fixtures) -> Option<String> {
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = message.get_mut("params")?.as_object_mut()?;
    let role = params.get("name")?.as_str()?.to_string();
    let mapping = fixtures.mapping(&role)?;
    if mapping.tool == role && mapping.arguments.is_none() {
        return None;
    }
    params.insert("name".into(), Value::String(mapping.tool.clone()));
    if let Some(template) = &mapping.arguments {
        let case_arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
        params.insert(
            "arguments".into(),
            fill_arguments(template, &case_arguments),
        );
    }
    Some(role)
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rewrites_calls_with_templates() {
        let mut fixtures = Fixtures::default();
        fixtures.roles.insert(
            "sleep".into(),
            Some(Mapping {
                tool: "longRun".into(),
                arguments: Some(json!({"duration": "{ms/1000}", "steps": 1})),
                progress: true,
            }),
        );
        let mut call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":500}}});
        assert_eq!(rewrite_call(&mut call, &fixtures).as_deref(), Some("sleep"));
        assert_eq!(
            call["params"],
            json!({"name":"longRun","arguments":{"duration":0.5,"steps":1}})
        );
        assert_eq!(
            fill_arguments(&json!("{ms*2}"), &json!({"ms": 30})),
            json!(60)
        );
        assert_eq!(
            fill_arguments(&json!("{missing}"), &json!({})),
            json!("{missing}")
        );
        let mut other = json!({"jsonrpc":"2.0","id":2,"method":"ping"});
        assert_eq!(rewrite_call(&mut other, &fixtures), None);
    }

    #[test]
    fn a_witness_lists_beyond_its_earlier_answer_what_is_new() {
        let ids = |v: Value| v.as_array().cloned().unwrap();
        let since =
            |before: Value, now: Value| Value::Array(witness_since(&ids(before), &ids(now)));
        // A fresh server, and one that grew: what it added is new.
        assert_eq!(since(json!([]), json!([1, 2])), json!([1, 2]));
        assert_eq!(since(json!([1, 2]), json!([1, 2])), json!([]));
        // An earlier case's request 1 is not this case's: only a second entry is.
        assert_eq!(since(json!([1, 2, 1]), json!([1, 2, 1, 1])), json!([1]));
        assert_eq!(since(json!([1, "a"]), json!([1, "a", 2.0])), json!([2.0]));
        assert_eq!(
            since(json!([1]), json!([1.0])),
            json!([]),
            "the same id in another spelling"
        );
        // A witness that keeps each id once cannot say that an old id was listed again.
        assert_eq!(since(json!([1, 2]), json!([1, 2, 5])), json!([5]));
        // A bounded log dropped its oldest entries as it grew.
        assert_eq!(since(json!([1, 2, 3]), json!([2, 3, 1])), json!([1]));
        assert_eq!(since(json!([1, 1, 2]), json!([1, 2, 7, 8])), json!([7, 8]));
        assert_eq!(
            since(json!([1, 2]), json!([3, 4])),
            json!([3, 4]),
            "every old entry dropped"
        );
        // A witness kept sorted: each id's old entries are as many as before.
        assert_eq!(since(json!([1, 5]), json!([1, 2, 5])), json!([2]));
    }
}
