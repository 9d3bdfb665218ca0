//! Target files: how to test a third-party server as it is, without a purpose-built fixture
//! server.
//!
//! Cases call the fixture profile's tools by role (`work`, `ping`, `echo`, `sleep`, `ticker`,
//! `cancellations`). A target file says how to start the server and, per role, which of its
//! own tools plays it and with which arguments, or that the role is absent. Cases that need an
//! absent role are skipped with the reason; where only the `cancellations` witness is absent,
//! the harness judges on what it can observe and says so.
//!
//! ```json
//! {
//!   "command": ["npx", "-y", "@modelcontextprotocol/server-everything"],
//!   "env": {"DEBUG": "0"},
//!   "cwd": ".",
//!   "protocolVersion": "2025-06-18",
//!   "fixtures": {
//!     "work":  {"tool": "longRunningOperation", "arguments": {"duration": 3600, "steps": 3600}},
//!     "sleep": {"tool": "longRunningOperation", "arguments": {"duration": "{ms/1000}", "steps": 1}},
//!     "echo":  {"tool": "echo", "arguments": {"message": "{text}"}},
//!     "ping": null, "ticker": null, "cancellations": null
//!   }
//! }
//! ```
//!
//! In `arguments`, a string `"{name}"` is the case's argument `name`; `"{name/N}"` and
//! `"{name*N}"` divide or multiply it by N. Without `fixtures`, the server is taken to
//! implement the profile under its own names.

use crate::target::Launch;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Every role of the fixture profile.
pub const ROLES: [&str; 6] = ["work", "ping", "echo", "sleep", "ticker", "cancellations"];

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

/// How a target's tools stand in for the fixture profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fixtures {
    /// Role → its tool, or `None` when the target has nothing that plays it. A role not in
    /// the map is absent.
    pub roles: BTreeMap<String, Option<Mapping>>,
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
            None => Some(format!("the target file gives no tool for fixture {role}")),
            Some(m) if progress && !m.progress => Some(format!(
                "the target file says `{}` (fixture {role}) sends no progress, which is allowed (PRG-08)",
                m.tool
            )),
            Some(_) => None,
        }
    }
}

/// A parsed target file.
#[derive(Debug, Clone)]
pub struct TargetFile {
    /// How to start the server.
    pub launch: Launch,
    /// The protocol version to request, if the file sets one.
    pub protocol_version: Option<String>,
    /// The fixture mapping; `None` means the server implements the profile itself.
    pub fixtures: Option<Fixtures>,
}

/// Reads a target file. Errors name the file and the field, and say what to write instead.
pub fn load(path: &Path) -> Result<TargetFile, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{shown}: cannot read the target file: {e}"))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{shown}:{}: the target file is not JSON: {e}", e.line()))?;
    parse(&value).map_err(|e| format!("{shown}: {e}"))
}

fn parse(value: &Value) -> Result<TargetFile, String> {
    let object = value
        .as_object()
        .ok_or("a target file is a JSON object; see the README's target file section")?;
    for key in object.keys() {
        if ![
            "command",
            "env",
            "cwd",
            "protocolVersion",
            "fixtures",
            "description",
        ]
        .contains(&key.as_str())
        {
            return Err(format!(
                "unknown field `{key}`; known: command, env, cwd, protocolVersion, fixtures, description"
            ));
        }
    }
    let argv: Vec<String> = object
        .get("command")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect())
        .ok_or("`command` must be a non-empty array of strings (the argv, run without a shell)")?;
    let env = match object.get("env") {
        None => vec![],
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect::<Option<Vec<_>>>()
            .ok_or("`env` values must be strings")?,
        Some(_) => return Err("`env` must be an object of strings".into()),
    };
    let cwd = match object.get("cwd") {
        None => None,
        Some(Value::String(dir)) => Some(dir.into()),
        Some(_) => return Err("`cwd` must be a string".into()),
    };
    let protocol_version = match object.get("protocolVersion") {
        None => None,
        Some(Value::String(v)) => Some(v.clone()),
        Some(_) => return Err("`protocolVersion` must be a string such as \"2025-06-18\"".into()),
    };
    let fixtures = match object.get("fixtures") {
        None => None,
        Some(Value::Object(map)) => Some(parse_fixtures(map)?),
        Some(_) => {
            return Err("`fixtures` must be an object of role → {tool, arguments} or null".into())
        }
    };
    Ok(TargetFile {
        launch: Launch { argv, env, cwd },
        protocol_version,
        fixtures,
    })
}

fn parse_fixtures(map: &Map<String, Value>) -> Result<Fixtures, String> {
    let mut roles = BTreeMap::new();
    for (role, spec) in map {
        if !ROLES.contains(&role.as_str()) {
            return Err(format!(
                "`fixtures.{role}` is no role of the profile; roles: {}",
                ROLES.join(", ")
            ));
        }
        let mapping = match spec {
            Value::Null => None,
            Value::Object(o) => {
                let tool = o.get("tool").and_then(Value::as_str).ok_or_else(|| {
                    format!("`fixtures.{role}.tool` must be the server's tool name")
                })?;
                let arguments = o.get("arguments").cloned();
                if arguments.as_ref().is_some_and(|a| !a.is_object()) {
                    return Err(format!("`fixtures.{role}.arguments` must be an object"));
                }
                let progress = match o.get("progress") {
                    None => true,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => {
                        return Err(format!("`fixtures.{role}.progress` must be true or false"))
                    }
                };
                Some(Mapping {
                    tool: tool.to_string(),
                    arguments,
                    progress,
                })
            }
            _ => {
                return Err(format!(
                    "`fixtures.{role}` must be {{\"tool\": …, \"arguments\": …}} or null"
                ))
            }
        };
        roles.insert(role.clone(), mapping);
    }
    Ok(Fixtures { roles })
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
/// stood for when it rewrote the message.
pub fn rewrite_call(message: &mut Value, fixtures: &Fixtures) -> Option<String> {
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = message.get_mut("params")?.as_object_mut()?;
    let role = params.get("name")?.as_str()?.to_string();
    let mapping = fixtures.mapping(&role)?;
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_a_target_file() {
        let file = parse(&json!({
            "command": ["srv", "--stdio"],
            "env": {"A": "1"},
            "fixtures": {"work": {"tool": "long", "arguments": {"d": 3600}}, "ticker": null}
        }))
        .unwrap();
        assert_eq!(file.launch.argv, ["srv", "--stdio"]);
        assert_eq!(file.launch.env, [("A".to_string(), "1".to_string())]);
        let fixtures = file.fixtures.unwrap();
        assert!(fixtures.has("work"));
        assert!(!fixtures.has("ticker"));
        assert!(!fixtures.has("echo"));
    }

    #[test]
    fn lacks_names_absent_roles_and_tools_without_progress() {
        let file = parse(&json!({
            "command": ["srv"],
            "fixtures": {"work": {"tool": "long", "progress": false}, "echo": {"tool": "say"}}
        }))
        .unwrap();
        let fixtures = file.fixtures.unwrap();
        assert_eq!(fixtures.lacks("echo"), None);
        assert_eq!(fixtures.lacks("work"), None);
        assert!(fixtures
            .lacks("work:progress")
            .unwrap()
            .contains("sends no progress"));
        assert!(fixtures
            .lacks("ticker")
            .unwrap()
            .contains("no tool for fixture ticker"));
        assert_eq!(fixtures.lacks("cancellations"), None);
        assert!(parse(
            &json!({"command": ["x"], "fixtures": {"work": {"tool": "w", "progress": "no"}}})
        )
        .unwrap_err()
        .contains("progress"));
    }

    #[test]
    fn errors_name_the_field() {
        assert!(parse(&json!({"command": []}))
            .unwrap_err()
            .contains("`command`"));
        assert!(parse(&json!({"command": ["x"], "fixtures": {"nap": null}}))
            .unwrap_err()
            .contains("nap"));
        assert!(parse(&json!({"command": ["x"], "colour": 1}))
            .unwrap_err()
            .contains("colour"));
    }

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
}
