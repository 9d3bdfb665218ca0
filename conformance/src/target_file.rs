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
//! `"{name*N}"` divide or multiply it by N. A mapping may carry a `"note"` (a string for the
//! person reading the file: `conformance init` says there what it checked), and a role may be
//! only `{"note": "…"}`: absent, like `null`, with the reason. Without `fixtures`, the server
//! is taken to implement the profile under its own names.

use crate::fixtures::{Fixtures, Mapping, ROLES};
use crate::transport::process::Launch;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// A parsed target file.
#[derive(Debug, Clone)]
pub struct TargetFile {
    /// How to start the server (for an HTTP server that is already running, none).
    pub launch: Option<Launch>,
    /// The server's MCP endpoint over Streamable HTTP (`{port}` is a free loopback port the
    /// harness picks and puts into the command too); `None` for a stdio server.
    pub url: Option<String>,
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
            "url",
            "env",
            "cwd",
            "protocolVersion",
            "fixtures",
            "description",
        ]
        .contains(&key.as_str())
        {
            return Err(format!(
                "unknown field `{key}`; known: command, url, env, cwd, protocolVersion, fixtures, description"
            ));
        }
    }
    let url =
        match object.get("url") {
            None => None,
            Some(Value::String(url)) => Some(url.clone()),
            Some(_) => return Err(
                "`url` must be a string, the MCP endpoint, e.g. \"http://127.0.0.1:{port}/mcp\""
                    .into(),
            ),
        };
    let argv: Option<Vec<String>> = match object.get("command") {
        None if url.is_some() => None,
        command => Some(
            command
                .and_then(Value::as_array)
                .filter(|a| !a.is_empty())
                .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect())
                .ok_or("`command` must be a non-empty array of strings (the argv, run without a shell); a server over HTTP that is already running needs only `url`")?,
        ),
    };
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
        launch: argv.map(|argv| Launch { argv, env, cwd }),
        url,
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
                if o.get("note").is_some_and(|n| !n.is_string()) {
                    return Err(format!("`fixtures.{role}.note` must be a string"));
                }
                if o.get("tool").is_none() && o.contains_key("note") {
                    // A role left out, with the reason (`conformance init` writes these).
                    roles.insert(role.clone(), None);
                    continue;
                }
                let tool = o.get("tool").and_then(Value::as_str).ok_or_else(|| {
                    format!("`fixtures.{role}.tool` must be the server's tool name (or leave the role out, or give only a `note` saying why)")
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
    Ok(Fixtures {
        roles,
        source: crate::fixtures::Source::TargetFile,
    })
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
        let launch = file.launch.unwrap();
        assert_eq!(launch.argv, ["srv", "--stdio"]);
        assert_eq!(launch.env, [("A".to_string(), "1".to_string())]);
        assert_eq!(file.url, None);
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
            .contains("needs a tool that plays `ticker`"));
        assert_eq!(fixtures.lacks("cancellations"), None);
        let noted = parse(&json!({"command": ["srv"], "fixtures": {
            "echo": {"tool": "say", "note": "checked"},
            "sleep": {"note": "no tool sleeps"}
        }}))
        .unwrap()
        .fixtures
        .unwrap();
        assert!(noted.has("echo"));
        assert!(noted.roles.contains_key("sleep") && !noted.has("sleep"));
        assert!(
            parse(&json!({"command": ["x"], "fixtures": {"echo": {"tool": "e", "note": 1}}}))
                .unwrap_err()
                .contains("note")
        );
        assert!(parse(
            &json!({"command": ["x"], "fixtures": {"work": {"tool": "w", "progress": "no"}}})
        )
        .unwrap_err()
        .contains("progress"));
    }

    #[test]
    fn http_targets_give_a_url() {
        let file = parse(&json!({
            "command": ["srv", "--port", "{port}"],
            "url": "http://127.0.0.1:{port}/mcp"
        }))
        .unwrap();
        assert_eq!(file.url.as_deref(), Some("http://127.0.0.1:{port}/mcp"));
        assert_eq!(file.launch.unwrap().argv[2], "{port}");
        let running = parse(&json!({"url": "http://127.0.0.1:8000/mcp"})).unwrap();
        assert!(running.launch.is_none());
        assert!(parse(&json!({"url": 8000})).unwrap_err().contains("`url`"));
        assert!(parse(&json!({})).unwrap_err().contains("needs only `url`"));
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
}
