//! Which of a server's tools could play each role, by name, description and input schema
//! alone: pure functions of `tools/list`, so that what is proposed can be reviewed without
//! running anything. Checking a proposal is `check`'s job.
//!
//! The heuristics, per role (a tool named as the role whose schema fits it always comes
//! first, with the case's arguments passed unchanged):
//! - `echo`: a tool named or described like an echo (echo, say, repeat, parrot, mirror) that
//!   takes one string, required (or the only one it has): `{"that": "{text}"}`.
//! - `ping`: a tool named ping, health, heartbeat or alive that requires nothing; else every
//!   echo candidate with its text fixed to `Server: still available`.
//! - `sleep`: a tool named or described as sleeping, waiting, delaying or running long, with a
//!   numeric duration argument (ms, millis, duration, seconds, delay, …) and nothing else
//!   required: `"{ms}"` for milliseconds, `"{ms/1000}"` for seconds (whole seconds cannot
//!   play it: cases sleep 30 ms). A unit neither the name nor a description gives is
//!   proposed both ways, seconds first (a wrong guess then answers at once, not in an hour).
//! - `work`, `ticker`: a tool described as long-running, or as reporting progress or steps,
//!   with such a duration: `work` asks for an hour (progress every 200 ms where it takes a
//!   `steps` argument), `ticker` sets the interval through the steps (so it needs one). A
//!   unit not given is proposed both ways, milliseconds first (a wrong guess then runs
//!   longer, not shorter).
//! - `cancellations`: only the witness by name (`cancellations`, or a name with it that says
//!   it lists requests): a tool that merely lists cancelled things would mislead verdicts.

mod timed;

use super::Candidate;
use crate::discovery::{fits, Tool};
use crate::fixtures::Role;
use serde_json::{json, Value};
use timed::{long_running, sleep_like};

/// The most candidates proposed for one role.
pub(super) const MAX_PER_ROLE: usize = 4;

/// What `ping` answers in the fixture profile; an echo plays it with this text.
pub const PING_TEXT: &str = "Server: still available";

/// A duration's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Millis,
    /// Seconds.
    Seconds,
}

/// The candidates for `role` among `tools`, best first.
pub fn candidates(role: Role, tools: &[Tool]) -> Vec<Candidate> {
    let named = |t: &Tool| t.name == role.as_str() && fits(t, role);
    let mut found: Vec<Candidate> = tools
        .iter()
        .filter(|t| named(t))
        .map(|t| {
            Candidate::of(
                role,
                t,
                None,
                format!("named `{role}`, takes what the cases pass"),
            )
        })
        .collect();
    for tool in tools.iter().filter(|t| !named(t)) {
        found.extend(by_likeness(role, tool));
    }
    found.truncate(MAX_PER_ROLE);
    found
}

fn by_likeness(role: Role, tool: &Tool) -> Vec<Candidate> {
    match role {
        Role::Echo => echo_like(tool)
            .map(|(property, why)| {
                Candidate::of(role, tool, Some(json!({ property: "{text}" })), why)
            })
            .into_iter()
            .collect(),
        Role::Ping => ping_like(tool),
        Role::Sleep => sleep_like(tool),
        Role::Work | Role::Ticker => long_running(role, tool),
        Role::Cancellations => witness_like(tool).into_iter().collect(),
        Role::WorkRequired | Role::TaskWork | Role::TaskTicker | Role::TaskSleep => vec![],
    }
}

/// The words of a name or a text, lower case: `trigger-long-running-operation`,
/// `longRunningOperation` and `long_running operation` all give long, running, operation.
pub fn words(text: &str) -> Vec<String> {
    let mut words = vec![];
    let mut word = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

fn any_word(text: &str, of: &[&str]) -> Option<String> {
    words(text).into_iter().find(|w| of.contains(&w.as_str()))
}

fn description(tool: &Tool) -> &str {
    tool.description.as_deref().unwrap_or("")
}

fn properties(tool: &Tool) -> Vec<(&str, &Value)> {
    tool.input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default()
}

fn type_of(property: &Value) -> &str {
    property.get("type").and_then(Value::as_str).unwrap_or("")
}

fn is_number(property: &Value) -> bool {
    matches!(type_of(property), "number" | "integer")
}

/// `(property, why)` when `tool` looks like an echo.
fn echo_like(tool: &Tool) -> Option<(String, String)> {
    const NAMES: [&str; 6] = ["echo", "say", "repeat", "parrot", "mirror", "reflect"];
    const SAID: [&str; 6] = ["echo", "echoes", "echoed", "repeats", "parrots", "mirrors"];
    let hint = any_word(&tool.name, &NAMES)
        .map(|w| format!("named like an echo (`{w}`)"))
        .or_else(|| {
            any_word(description(tool), &SAID).map(|w| format!("described as an echo (`{w}`)"))
        })?;
    let strings: Vec<&str> = properties(tool)
        .into_iter()
        .filter(|(_, p)| type_of(p) == "string")
        .map(|(name, _)| name)
        .collect();
    let required = tool.required();
    let property = match required.as_slice() {
        [one] if strings.contains(one) => one.to_string(),
        [] if strings.len() == 1 => strings[0].to_string(),
        _ => return None,
    };
    Some((
        property.clone(),
        format!("{hint}, takes one string `{property}`"),
    ))
}

fn ping_like(tool: &Tool) -> Vec<Candidate> {
    const NAMES: [&str; 5] = ["ping", "health", "healthcheck", "heartbeat", "alive"];
    if let Some(word) = any_word(&tool.name, &NAMES) {
        if tool.required().is_empty() {
            return vec![Candidate::of(
                Role::Ping,
                tool,
                None,
                format!("named like a liveness check (`{word}`), requires nothing"),
            )];
        }
    }
    let exact_echo = tool.name == Role::Echo.as_str() && fits(tool, Role::Echo);
    let property = if exact_echo {
        Some(("text".to_string(), "the fixture's `echo`".to_string()))
    } else {
        echo_like(tool)
    };
    property
        .map(|(property, why)| {
            Candidate::of(
                Role::Ping,
                tool,
                Some(json!({ property: PING_TEXT })),
                format!("{why}; the text fixed to `{PING_TEXT}`"),
            )
        })
        .into_iter()
        .collect()
}

fn witness_like(tool: &Tool) -> Option<Candidate> {
    let named = words(&tool.name)
        .iter()
        .any(|w| w == Role::Cancellations.as_str());
    let lists_requests = any_word(description(tool), &["request", "requests"]).is_some();
    (named && lists_requests && tool.required().is_empty()).then(|| {
        Candidate::of(
            Role::Cancellations,
            tool,
            None,
            "named `cancellations`, described as listing requests".into(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(entry: Value) -> Tool {
        Tool::of(&entry).expect("a tool")
    }

    #[test]
    fn words_split_every_naming_style() {
        assert_eq!(
            words("trigger-long-running-operation"),
            ["trigger", "long", "running", "operation"]
        );
        assert_eq!(
            words("longRunningOperation"),
            ["long", "running", "operation"]
        );
        assert_eq!(words("duration_ms"), ["duration", "ms"]);
        assert_eq!(words("HTTPServer"), ["httpserver"]);
    }

    #[test]
    fn echo_candidates_need_a_hint_and_one_string() {
        let say = tool(json!({"name": "say", "inputSchema": {"type": "object",
            "properties": {"message": {"type": "string"}}, "required": ["message"]}}));
        let query = tool(json!({"name": "query", "inputSchema": {"type": "object",
            "properties": {"sql": {"type": "string"}}, "required": ["sql"]}}));
        let two = tool(json!({"name": "echo_to", "inputSchema": {"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a", "b"]}}));
        let found = candidates(Role::Echo, &[query, two, say]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].tool, "say");
        assert_eq!(found[0].arguments, Some(json!({"message": "{text}"})));
    }

    #[test]
    fn whole_seconds_cannot_sleep_and_an_unknown_unit_is_tried_both_ways() {
        let whole = tool(json!({"name": "wait", "inputSchema": {"type": "object",
            "properties": {"seconds": {"type": "integer"}}, "required": ["seconds"]}}));
        assert!(candidates(Role::Sleep, &[whole]).is_empty());
        let vague = tool(json!({"name": "pause", "inputSchema": {"type": "object",
            "properties": {"duration": {"type": "number"}}}}));
        let found = candidates(Role::Sleep, &[vague]);
        assert_eq!(
            found
                .iter()
                .map(|c| c.arguments.clone())
                .collect::<Vec<_>>(),
            [
                Some(json!({"duration": "{ms/1000}"})),
                Some(json!({"duration": "{ms}"}))
            ]
        );
    }

    #[test]
    fn a_duration_without_a_hint_is_no_sleep() {
        let ttl = tool(
            json!({"name": "set_cache", "inputSchema": {"type": "object",
            "properties": {"duration": {"type": "number"}}}}),
        );
        assert!(candidates(Role::Sleep, &[ttl]).is_empty());
    }

    /// server-everything 2026.8.31's tools as it lists them (the ones that matter here):
    /// the first candidates are the mapping `targets/server-everything.json` was written with.
    #[test]
    fn server_everything_gets_the_mapping_a_person_wrote() {
        let tools: Vec<Tool> = [
            json!({"name": "echo", "description": "Echoes back the input string",
                "annotations": {"readOnlyHint": true},
                "inputSchema": {"type": "object", "properties": {"message":
                    {"type": "string", "description": "Message to echo"}}, "required": ["message"]}}),
            json!({"name": "get-sum", "description": "Returns the sum of two numbers",
                "inputSchema": {"type": "object", "properties": {"a": {"type": "number"},
                    "b": {"type": "number"}}, "required": ["a", "b"]}}),
            json!({"name": "toggle-simulated-logging",
                "description": "Toggles simulated, random-leveled logging on or off.",
                "inputSchema": {"type": "object", "properties": {}}}),
            json!({"name": "trigger-long-running-operation",
                "description": "Demonstrates a long running operation with progress updates.",
                "annotations": {"readOnlyHint": true},
                "inputSchema": {"type": "object", "properties": {
                    "duration": {"default": 10, "description": "Duration of the operation in seconds", "type": "number"},
                    "steps": {"default": 5, "description": "Number of steps in the operation", "type": "number"}}}}),
        ]
        .iter()
        .map(|t| Tool::of(t).expect("a tool"))
        .collect();
        let first = |role: Role| {
            candidates(role, &tools)
                .into_iter()
                .next()
                .map(|c| (c.tool, c.arguments))
        };
        let long = "trigger-long-running-operation".to_string();
        assert_eq!(
            first(Role::Work),
            Some((
                long.clone(),
                Some(json!({"duration": 3600, "steps": 18000}))
            ))
        );
        assert_eq!(
            first(Role::Sleep),
            Some((
                long.clone(),
                Some(json!({"duration": "{ms/1000}", "steps": 1}))
            ))
        );
        assert_eq!(
            first(Role::Ticker),
            Some((
                long,
                Some(json!({"duration": "{interval_ms*1000}", "steps": 1000000}))
            ))
        );
        assert_eq!(
            first(Role::Echo),
            Some(("echo".into(), Some(json!({"message": "{text}"}))))
        );
        assert_eq!(
            first(Role::Ping),
            Some(("echo".into(), Some(json!({"message": PING_TEXT}))))
        );
        assert_eq!(first(Role::Cancellations), None);
    }
}
