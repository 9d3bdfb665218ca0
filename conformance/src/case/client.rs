//! The vocabulary of client cases: what an adapter is told to do (`@actions`) and the words it
//! reports how each action ended with (`@outcomes`).

use serde_json::Value;

/// The words an adapter reports an action's end with.
pub const OUTCOME_WORDS: [&str; 4] = ["result", "error", "cancelled", "timeout"];

/// The verbs an action may use; each action object has exactly one of them.
pub const ACTION_VERBS: [&str; 5] = ["connect", "call", "ping", "sleep_ms", "exit"];

/// Checks `@actions`: a JSON array of objects, each with exactly one known verb.
pub(super) fn parse_actions(value: &str) -> Result<Vec<Value>, String> {
    let parsed: Value =
        serde_json::from_str(value).map_err(|e| format!("`@actions` is not JSON: {e}"))?;
    let Value::Array(actions) = parsed else {
        return Err("`@actions` is a JSON array of action objects".into());
    };
    for (i, action) in actions.iter().enumerate() {
        let Some(object) = action.as_object() else {
            return Err(format!("action {i} is not a JSON object"));
        };
        let verbs: Vec<&str> = ACTION_VERBS
            .iter()
            .copied()
            .filter(|v| object.contains_key(*v))
            .collect();
        if verbs.len() != 1 {
            return Err(format!(
                "action {i} needs exactly one of {}",
                ACTION_VERBS.join(", ")
            ));
        }
    }
    if actions.is_empty() {
        return Err("`@actions` names no action".into());
    }
    Ok(actions)
}

/// Checks `@outcomes`: one word per action, alternatives joined by `|`, `*` for any.
pub(super) fn parse_outcomes(value: &str) -> Result<Vec<Vec<String>>, String> {
    value
        .split_whitespace()
        .map(|word| {
            let set: Vec<String> = word.split('|').map(str::to_string).collect();
            match set
                .iter()
                .find(|w| *w != "*" && !OUTCOME_WORDS.contains(&w.as_str()))
            {
                Some(bad) => Err(format!(
                    "unknown outcome `{bad}`; known: {}, or `*` for any",
                    OUTCOME_WORDS.join(", ")
                )),
                None => Ok(set),
            }
        })
        .collect()
}
