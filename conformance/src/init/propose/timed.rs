//! The timed roles (`sleep`, `work`, `ticker`): a tool whose name or description says it
//! sleeps or runs long, with a numeric duration argument in a unit the schema or a
//! description gives (else proposed both ways) and, for `ticker`, a steps argument. Apart
//! from the other roles because they are all about reading a duration off a schema.

use super::{any_word, description, is_number, properties, type_of, words, Unit};
use crate::discovery::Tool;
use crate::fixtures::Role;
use crate::init::Candidate;
use serde_json::{json, Map, Value};

/// A numeric argument that is a duration, with its unit where the schema or a description
/// says it.
#[derive(Debug, Clone)]
struct DurationArgument {
    property: String,
    unit: Option<Unit>,
    integer: bool,
}

fn duration_of(tool: &Tool) -> Option<DurationArgument> {
    const DURATION: [&str; 11] = [
        "ms",
        "millis",
        "milliseconds",
        "msec",
        "duration",
        "seconds",
        "secs",
        "sec",
        "delay",
        "sleep",
        "wait",
    ];
    let (name, property) = properties(tool)
        .into_iter()
        .find(|(name, p)| is_number(p) && any_word(name, &DURATION).is_some())?;
    let unit_in = |text: &str| -> Option<Unit> {
        let millis = any_word(text, &["ms", "millis", "milliseconds", "msec", "msecs"]);
        let seconds = any_word(text, &["s", "seconds", "second", "secs", "sec"]);
        match (millis, seconds) {
            (Some(_), None) => Some(Unit::Millis),
            (None, Some(_)) => Some(Unit::Seconds),
            _ => None,
        }
    };
    let unit = unit_in(name)
        .or_else(|| unit_in(property.get("description").and_then(Value::as_str)?))
        .or_else(|| unit_in(description(tool)));
    Some(DurationArgument {
        property: name.to_string(),
        unit,
        integer: type_of(property) == "integer",
    })
}

/// A numeric argument that says how many progress steps a run takes.
fn steps_of(tool: &Tool) -> Option<String> {
    properties(tool)
        .into_iter()
        .find(|(name, p)| {
            is_number(p) && any_word(name, &["steps", "ticks", "iterations", "updates"]).is_some()
        })
        .map(|(name, _)| name.to_string())
}

/// Whether `tool` requires nothing beyond `allowed`.
fn requires_only(tool: &Tool, allowed: &[&str]) -> bool {
    tool.required().iter().all(|r| allowed.contains(r))
}

fn long_running_hint(tool: &Tool) -> Option<String> {
    let text = format!("{} {}", tool.name, description(tool));
    let words = words(&text);
    let has = |w: &str| words.iter().any(|x| x == w);
    if has("long") && has("running") || has("longrunning") {
        Some("described as long-running".into())
    } else {
        ["progress", "steps"]
            .into_iter()
            .find(|w| has(w))
            .map(|w| format!("described with `{w}`"))
    }
}

pub(super) fn sleep_like(tool: &Tool) -> Vec<Candidate> {
    const NAMES: [&str; 6] = ["sleep", "sleeps", "wait", "waits", "delay", "pause"];
    let Some(duration) = duration_of(tool) else {
        return vec![];
    };
    let steps = steps_of(tool);
    let mut allowed = vec![duration.property.as_str()];
    allowed.extend(steps.as_deref());
    if !requires_only(tool, &allowed) {
        return vec![];
    }
    let Some(hint) = any_word(&format!("{} {}", tool.name, description(tool)), &NAMES)
        .map(|w| format!("named or described as `{w}`"))
        .or_else(|| long_running_hint(tool))
    else {
        return vec![];
    };
    let units = match duration.unit {
        Some(Unit::Seconds) if duration.integer => return vec![],
        Some(unit) => vec![unit],
        None if duration.integer => vec![Unit::Millis],
        None => vec![Unit::Seconds, Unit::Millis],
    };
    units
        .into_iter()
        .map(|unit| {
            let mut arguments = Map::new();
            let (template, said) = match unit {
                Unit::Millis => ("{ms}", "milliseconds"),
                Unit::Seconds => ("{ms/1000}", "seconds"),
            };
            arguments.insert(duration.property.clone(), json!(template));
            if let Some(steps) = &steps {
                arguments.insert(steps.clone(), json!(1));
            }
            let guessed = if duration.unit.is_none() {
                " (the unit is a guess)"
            } else {
                ""
            };
            let mut candidate = Candidate::of(
                Role::Sleep,
                tool,
                Some(Value::Object(arguments)),
                format!("{hint}, takes `{}` in {said}{guessed}", duration.property),
            );
            candidate.unit = Some(unit);
            candidate
        })
        .collect()
}

pub(super) fn long_running(role: Role, tool: &Tool) -> Vec<Candidate> {
    let Some(hint) = long_running_hint(tool) else {
        return vec![];
    };
    let Some(duration) = duration_of(tool) else {
        return vec![];
    };
    let steps = steps_of(tool);
    let mut allowed = vec![duration.property.as_str()];
    allowed.extend(steps.as_deref());
    if !requires_only(tool, &allowed) || (role == Role::Ticker && steps.is_none()) {
        return vec![];
    }
    let units: Vec<Unit> = match duration.unit {
        Some(unit) => vec![unit],
        None => vec![Unit::Millis, Unit::Seconds],
    };
    units
        .into_iter()
        .map(|unit| {
            let per_second = match unit {
                Unit::Millis => 1000,
                Unit::Seconds => 1,
            };
            let mut arguments = Map::new();
            let said = if role == Role::Work {
                // An hour, with progress every 200 ms where the steps can say so.
                arguments.insert(duration.property.clone(), json!(3600 * per_second));
                if let Some(steps) = &steps {
                    arguments.insert(steps.clone(), json!(3600 * 5));
                }
                "asked to run an hour"
            } else {
                // A million steps of `interval_ms` each.
                let factor = 1000 * per_second;
                arguments.insert(
                    duration.property.clone(),
                    json!(format!("{{interval_ms*{factor}}}")),
                );
                if let Some(steps) = &steps {
                    arguments.insert(steps.clone(), json!(1_000_000));
                }
                "a million steps of `interval_ms` each"
            };
            let unit_said = match (unit, duration.unit) {
                (Unit::Millis, Some(_)) => "milliseconds",
                (Unit::Seconds, Some(_)) => "seconds",
                (Unit::Millis, None) => "milliseconds (a guess)",
                (Unit::Seconds, None) => "seconds (a guess)",
            };
            let mut candidate = Candidate::of(
                role,
                tool,
                Some(Value::Object(arguments)),
                format!(
                    "{hint}, takes `{}` in {unit_said}; {said}",
                    duration.property
                ),
            );
            candidate.unit = Some(unit);
            candidate
        })
        .collect()
}
