//! The `fixtures` object of a target file: per role of the fixture profile, which of the
//! server's tools plays it and with which arguments, or that the role is absent (and why).
//! Apart from the rest of the file's fields because it is the part a person edits most.

use super::FileError;
use crate::fixtures::{Fixtures, Mapping, Role};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The `fixtures` object: per role, the server's tool that plays it, or `null` (absent).
pub(super) fn parse_fixtures(map: &Map<String, Value>) -> Result<Fixtures, FileError> {
    let mut roles = BTreeMap::new();
    for (name, spec) in map {
        let role =
            Role::parse(name).ok_or_else(|| FileError::UnknownRole { role: name.clone() })?;
        let wrong = |member, want| FileError::WrongMapping { role, member, want };
        let mapping = match spec {
            Value::Null => None,
            Value::Object(o) => {
                if o.get("note").is_some_and(|n| !n.is_string()) {
                    return Err(wrong(".note", "a string"));
                }
                if o.get("tool").is_none() && o.contains_key("note") {
                    // A role left out, with the reason (`conformance init` writes these).
                    roles.insert(role, None);
                    continue;
                }
                let tool = o.get("tool").and_then(Value::as_str).ok_or_else(|| {
                    wrong(".tool", "the server's tool name (or leave the role out, or give only a `note` saying why)")
                })?;
                let arguments = o.get("arguments").cloned();
                if arguments.as_ref().is_some_and(|a| !a.is_object()) {
                    return Err(wrong(".arguments", "an object"));
                }
                let progress = match o.get("progress") {
                    None => true,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => return Err(wrong(".progress", "true or false")),
                };
                Some(Mapping {
                    tool: tool.to_string(),
                    arguments,
                    progress,
                })
            }
            _ => return Err(wrong("", "{\"tool\": …, \"arguments\": …} or null")),
        };
        roles.insert(role, mapping);
    }
    Ok(Fixtures {
        roles,
        source: crate::fixtures::Source::TargetFile,
        listed: Default::default(),
        undeclared: vec![],
    })
}
