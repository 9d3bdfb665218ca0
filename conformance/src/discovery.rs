//! What a server offers, asked once per run: its tools (`tools/list`, every page), and which
//! of them play the fixture profile's roles.
//!
//! A tool plays a role only when its name is the role's and its input schema fits the
//! profile's arguments (server-everything's `echo` takes `message`, not `text`: it is not the
//! fixture's `echo`). Discovery lists tools and never calls one: a tool it does not know could
//! write, commit or delete. Mapping other tools onto roles is `conformance init`'s business,
//! and a target file's.

use crate::era::ProtocolVersion;
use crate::fixtures::{Declared, Fixtures, Listed, Mapping, Role, Source};
use crate::transport::{Event, SendError, Transport};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::time::Instant as Deadline;

/// The most pages of `tools/list` read.
const MAX_PAGES: usize = 20;

/// Why a server's tools could not be listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListError {
    /// A request could not be sent.
    #[error("it stopped reading: {0:?}")]
    StoppedReading(SendError),
    /// The server exited while the harness waited for an answer.
    #[error("it exited")]
    Exited,
    /// No answer came in time.
    #[error("no answer to tools/list within {0:?}")]
    NoAnswer(Duration),
    /// The server answered with an error (shown short).
    #[error("tools/list was refused: {0}")]
    Refused(String),
    /// The answer has no `tools` array (shown short).
    #[error("tools/list was answered without a `tools` array: {0}")]
    NoToolsArray(String),
    /// The server declared no `tools` capability in its opening: a client may use only what
    /// was negotiated, so the harness neither lists nor calls its tools.
    #[error("the server declared no `tools` capability in its opening, so the harness does not list or call tools")]
    Undeclared,
}

/// Whether the answer to a session's opening (`initialize`, or `server/discover` in
/// 2026-07-28) declares the `tools` capability: only then may a client list or call tools.
pub fn declares_tools(opening: &Value) -> bool {
    opening
        .pointer("/result/capabilities/tools")
        .is_some_and(Value::is_object)
}

/// One tool as `tools/list` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// Its name.
    pub name: String,
    /// Its input schema (`{}` when it gives none).
    pub input_schema: Value,
    /// It says it changes nothing (`annotations.readOnlyHint: true`).
    pub read_only: bool,
    /// Its description, if any.
    pub description: Option<String>,
    /// Its `execution.taskSupport` (2025-11-25), if it gives one.
    pub task_support: Option<String>,
}

impl Tool {
    /// Reads one entry of `tools/list`'s `tools`.
    pub fn of(entry: &Value) -> Option<Tool> {
        Some(Tool {
            name: entry.get("name")?.as_str()?.to_string(),
            input_schema: entry.get("inputSchema").cloned().unwrap_or(json!({})),
            read_only: entry.pointer("/annotations/readOnlyHint") == Some(&Value::Bool(true)),
            description: entry
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
            task_support: entry
                .pointer("/execution/taskSupport")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }

    /// The type its schema gives argument `name`, if it has that argument.
    pub fn argument_type(&self, name: &str) -> Option<&str> {
        let property = self.input_schema.get("properties")?.get(name)?;
        Some(property.get("type").and_then(Value::as_str).unwrap_or(""))
    }

    /// The arguments its schema requires.
    pub fn required(&self) -> Vec<&str> {
        self.input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
}

/// The arguments a role's calls carry, with the JSON Schema types that fit each.
pub fn role_arguments(role: Role) -> &'static [(&'static str, &'static [&'static str])] {
    const NUMBER: &[&str] = &["integer", "number"];
    match role {
        Role::Echo => &[("text", &["string"])],
        Role::Sleep => &[("ms", NUMBER)],
        Role::Ticker => &[("interval_ms", NUMBER)],
        _ => &[],
    }
}

/// Whether `tool`'s input schema fits the calls the cases make of `role`: every argument the
/// role passes is one it takes, with a type that fits, and it requires no other. A task role
/// needs the task support it is named for (`work_required`: `"required"`).
pub fn fits(tool: &Tool, role: Role) -> bool {
    if role == Role::WorkRequired && tool.task_support.as_deref() != Some("required") {
        return false;
    }
    let arguments = role_arguments(role);
    let takes_each = arguments.iter().all(|(name, types)| {
        tool.argument_type(name)
            .is_some_and(|t| t.is_empty() || types.contains(&t))
    });
    let requires_only_those = tool
        .required()
        .iter()
        .all(|r| arguments.iter().any(|(name, _)| name == r));
    takes_each && requires_only_those
}

/// The fixture profile as far as a server's own tools play it, by name and schema.
pub fn fixtures_of(tools: &[Tool]) -> Fixtures {
    let mut fixtures = Fixtures {
        source: Source::Discovered,
        ..Fixtures::default()
    };
    for role in Role::PROFILE.into_iter().chain(Role::TASK) {
        let playing = tools
            .iter()
            .find(|t| t.name == role.as_str() && fits(t, role));
        fixtures.roles.insert(
            role,
            playing.map(|t| Mapping {
                tool: t.name.clone(),
                arguments: None,
                progress: true,
            }),
        );
    }
    fixtures
}

/// What `tools/list` declared of each tool, by name.
pub fn declared_of(tools: &[Tool]) -> std::collections::BTreeMap<String, Declared> {
    tools
        .iter()
        .map(|t| {
            let declared = Declared {
                task_support: t.task_support.clone(),
            };
            (t.name.clone(), declared)
        })
        .collect()
}

/// The fixtures a run plays with: the target file's mapping, or without one the roles the
/// server's own tools play (from the first listing that succeeded), and either way what
/// `tools/list` declared at each version it was asked at (`listings`: version, then the tools
/// or why none could be listed), so that a case calls a tool only the way it allows.
pub fn fixtures_for(
    mapped: Option<Fixtures>,
    listings: &[(ProtocolVersion, Result<Vec<Tool>, ListError>)],
) -> Fixtures {
    let mut fixtures = mapped.unwrap_or_else(|| {
        // A role is played where any version's listing has a tool that fits it (a tool may
        // declare `taskSupport` only at 2025-11-25); the plan checks each version's listing.
        let mut found = fixtures_of(&[]);
        for tools in listings.iter().filter_map(|(_, l)| l.as_ref().ok()) {
            for (role, mapping) in fixtures_of(tools).roles {
                let slot = found.roles.entry(role).or_insert(None);
                if slot.is_none() {
                    *slot = mapping;
                }
            }
        }
        found
    });
    fixtures.undeclared = listings
        .iter()
        .filter(|(_, listed)| listed == &Err(ListError::Undeclared))
        .map(|(version, _)| *version)
        .collect();
    fixtures.listed = listings
        .iter()
        .filter_map(|(version, listed)| Some((*version, declared_of(listed.as_ref().ok()?))))
        .collect::<Listed>();
    fixtures
}

/// What is wrong with a target file's mapping by the server's own listings: a role mapped to
/// a tool no listing has, or to a tool whose input schema its arguments do not fit (one it
/// requires that they do not give; one they give that it does not take, where it takes no
/// others). Each is said as `fixtures.<role>…: what`, for an error before anything runs.
/// Nothing is said when no listing succeeded.
pub fn misfits(
    fixtures: &Fixtures,
    listings: &[(ProtocolVersion, Result<Vec<Tool>, ListError>)],
) -> Vec<String> {
    let listed: Vec<&Vec<Tool>> = listings
        .iter()
        .filter_map(|(_, l)| l.as_ref().ok())
        .collect();
    if listed.is_empty() || fixtures.source != Source::TargetFile {
        return vec![];
    }
    let mut found = vec![];
    for (&role, mapping) in &fixtures.roles {
        let Some(mapping) = mapping else { continue };
        let Some(tool) = listed
            .iter()
            .find_map(|l| l.iter().find(|t| t.name == mapping.tool))
        else {
            let names: Vec<&str> = listed[0].iter().map(|t| t.name.as_str()).collect();
            found.push(format!(
                "fixtures.{role}.tool: the server lists no tool `{}` (it lists {})",
                mapping.tool,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ));
            continue;
        };
        let base = role.base();
        let given: Vec<String> = match &mapping.arguments {
            Some(template) => template
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default(),
            None => role_arguments(base)
                .iter()
                .map(|(n, _)| n.to_string())
                .collect(),
        };
        let shown = match &mapping.arguments {
            Some(_) => "its arguments",
            None => "the cases' arguments (no `arguments` template)",
        };
        if let Some(missing) = tool
            .required()
            .into_iter()
            .find(|r| !given.iter().any(|g| g == r))
        {
            found.push(format!(
                "fixtures.{role}.arguments: `{}` requires `{missing}`, which {shown} do not give",
                tool.name
            ));
        }
        let closed = tool.input_schema.get("additionalProperties") == Some(&Value::Bool(false));
        if let Some(extra) = given
            .iter()
            .find(|g| closed && tool.argument_type(g).is_none())
        {
            found.push(format!(
                "fixtures.{role}.arguments: `{}` takes no `{extra}` (its input schema allows no other properties)",
                tool.name
            ));
        }
    }
    found
}

/// After an opening the server answered: `notifications/initialized` (handshake era), then
/// every page of `tools/list`, each answer within `wait`. `stamp` adds the stateless era's
/// `_meta` to a request.
pub async fn list_tools<T: Transport>(
    io: &mut T,
    handshake: bool,
    stamp: impl Fn(&mut Value),
    wait: Duration,
) -> Result<Vec<Tool>, ListError> {
    if handshake {
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        io.send(initialized.to_string().as_bytes(), None)
            .await
            .map_err(ListError::StoppedReading)?;
    }
    let mut tools = vec![];
    let mut cursor: Option<Value> = None;
    for page in 0..MAX_PAGES {
        let id = format!("tools-{page}");
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}});
        if let Some(cursor) = &cursor {
            request["params"]["cursor"] = cursor.clone();
        }
        stamp(&mut request);
        let answer = ask(io, &request, &id, wait).await?;
        if let Some(error) = answer.get("error") {
            return Err(ListError::Refused(crate::rules::envelope::short(error)));
        }
        let listed = answer
            .pointer("/result/tools")
            .and_then(Value::as_array)
            .ok_or_else(|| ListError::NoToolsArray(crate::rules::envelope::short(&answer)))?;
        tools.extend(listed.iter().filter_map(Tool::of));
        cursor = answer
            .pointer("/result/nextCursor")
            .filter(|c| !c.is_null())
            .cloned();
        if cursor.is_none() {
            break;
        }
    }
    Ok(tools)
}

/// Sends `request` and waits, within `wait`, for the answer with id `id`.
async fn ask<T: Transport>(
    io: &mut T,
    request: &Value,
    id: &str,
    wait: Duration,
) -> Result<Value, ListError> {
    io.send(request.to_string().as_bytes(), None)
        .await
        .map_err(ListError::StoppedReading)?;
    let deadline = Deadline::now() + wait;
    loop {
        match io.next(deadline).await {
            None if io.finished() => return Err(ListError::Exited),
            None if Deadline::now() < deadline => continue,
            None => return Err(ListError::NoAnswer(wait)),
            Some((_, Event::Message { bytes, .. })) => {
                let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
                    continue;
                };
                if value.get("method").is_none() && value.get("id") == Some(&json!(id)) {
                    return Ok(value);
                }
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_listed_only_where_the_opening_declared_them() {
        let initialize = json!({"result": {"capabilities": {"tools": {}}}});
        let discover = json!({"result": {"capabilities": {"tools": {"listChanged": true}}}});
        assert!(declares_tools(&initialize) && declares_tools(&discover));
        assert!(!declares_tools(
            &json!({"result": {"capabilities": {"prompts": {}}}})
        ));
        assert!(!declares_tools(&json!({"error": {"code": -32601}})));
        // A version whose opening declared none plays no role, whatever the file maps.
        let mut file = Fixtures::default();
        file.roles.insert(
            Role::Echo,
            Some(Mapping {
                tool: "say".into(),
                arguments: None,
                progress: true,
            }),
        );
        let listings = [(ProtocolVersion::V2025_11_25, Err(ListError::Undeclared))];
        let fixtures = fixtures_for(Some(file), &listings);
        let why = fixtures
            .lacks(&need("echo"), ProtocolVersion::V2025_11_25)
            .unwrap();
        assert!(why.contains("declares no `tools` capability"), "{why}");
        assert_eq!(
            fixtures.lacks(&need("echo"), ProtocolVersion::V2026_07_28),
            None
        );
    }

    fn need(word: &str) -> crate::fixtures::FixtureNeed {
        crate::fixtures::FixtureNeed::parse(word).unwrap()
    }

    fn tool(entry: Value) -> Tool {
        Tool::of(&entry).expect("a tool")
    }

    #[test]
    fn a_tool_plays_a_role_only_with_its_name_and_a_fitting_schema() {
        let echo = tool(json!({"name": "echo", "inputSchema": {"type": "object",
            "properties": {"text": {"type": "string"}}, "required": ["text"]}}));
        let everything_echo = tool(json!({"name": "echo", "inputSchema": {"type": "object",
            "properties": {"message": {"type": "string"}}, "required": ["message"]}}));
        let sleep = tool(json!({"name": "sleep", "inputSchema": {"type": "object",
            "properties": {"ms": {"type": "integer"}}}}));
        let strict_sleep = tool(json!({"name": "sleep", "inputSchema": {"type": "object",
            "properties": {"ms": {"type": "integer"}, "why": {"type": "string"}},
            "required": ["ms", "why"]}}));
        let text_sleep = tool(json!({"name": "sleep", "inputSchema": {"type": "object",
            "properties": {"ms": {"type": "string"}}}}));
        let work = tool(json!({"name": "work"}));
        assert!(fits(&echo, Role::Echo));
        assert!(
            !fits(&everything_echo, Role::Echo),
            "takes `message`, not `text`"
        );
        assert!(fits(&sleep, Role::Sleep));
        assert!(
            !fits(&strict_sleep, Role::Sleep),
            "requires what the cases never pass"
        );
        assert!(!fits(&text_sleep, Role::Sleep), "`ms` must be a number");
        assert!(
            fits(&work, Role::Work),
            "no schema: takes nothing, requires nothing"
        );
        let fixtures = fixtures_of(&[everything_echo, sleep, work]);
        assert!(!fixtures.has(Role::Echo));
        assert!(fixtures.has(Role::Sleep) && fixtures.has(Role::Work));
        assert!(!fixtures.has(Role::Ticker) && !fixtures.has(Role::Cancellations));
    }

    #[test]
    fn work_required_plays_only_with_required_task_support() {
        let required =
            tool(json!({"name": "work_required", "execution": {"taskSupport": "required"}}));
        let optional =
            tool(json!({"name": "work_required", "execution": {"taskSupport": "optional"}}));
        let unsaid = tool(json!({"name": "work_required"}));
        assert!(fits(&required, Role::WorkRequired));
        assert!(!fits(&optional, Role::WorkRequired), "a plain call may run");
        assert!(!fits(&unsaid, Role::WorkRequired), "absent means forbidden");
        assert!(fixtures_of(&[required]).has(Role::WorkRequired));
        assert!(!fixtures_of(&[optional]).has(Role::WorkRequired));
    }

    #[test]
    fn read_only_comes_from_the_annotation_only() {
        assert!(tool(json!({"name": "a", "annotations": {"readOnlyHint": true}})).read_only);
        assert!(!tool(json!({"name": "b", "annotations": {"readOnlyHint": "yes"}})).read_only);
        assert!(!tool(json!({"name": "c"})).read_only);
        assert!(
            Tool::of(&json!({"inputSchema": {}})).is_none(),
            "a tool has a name"
        );
    }
}
