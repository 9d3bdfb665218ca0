//! What a trace must never hold: the values `--redact` names (JSON pointers into each message,
//! and header names) and the headers that are always secrets. Redaction changes the trace only,
//! never what the recorder passes on; a redacted value becomes [`REDACTED`].

use crate::trace::{always_redacted, Headers, REDACTED};
use serde_json::Value;

/// The secrets of one recording, as `--redact` named them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redaction {
    /// JSON pointers (`/params/arguments/token`), applied to every message.
    pointers: Vec<String>,
    /// Header names, lower case, redacted besides the always-redacted ones.
    headers: Vec<String>,
}

impl Redaction {
    /// Reads the `--redact` values: a JSON pointer (`/params/arguments/token`) or
    /// `header:NAME`.
    ///
    /// # Errors
    /// A value that is neither, with what to write instead.
    pub fn parse(values: &[String]) -> Result<Redaction, String> {
        let mut redaction = Redaction::default();
        for value in values {
            if let Some(name) = value.strip_prefix("header:") {
                if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == ':') {
                    return Err(format!(
                        "--redact {value}: `header:` needs a header name, like `header:x-api-key`"
                    ));
                }
                redaction.headers.push(name.to_ascii_lowercase());
            } else if value.starts_with('/') {
                redaction.pointers.push(value.clone());
            } else {
                return Err(format!(
                    "--redact {value}: give a JSON pointer into each message (`/params/arguments/token`) or a header (`header:x-api-key`)"
                ));
            }
        }
        Ok(redaction)
    }

    /// What the trace's header lists under `redacted`: the pointers, then `header:name`s.
    #[must_use]
    pub fn listed(&self) -> Vec<String> {
        let headers = self.headers.iter().map(|h| format!("header:{h}"));
        self.pointers.iter().cloned().chain(headers).collect()
    }

    /// Whether any `--redact` names a header.
    #[must_use]
    pub fn names_headers(&self) -> bool {
        !self.headers.is_empty()
    }

    /// A message's text for the trace: unchanged unless a pointer names a value in it (in
    /// the message, or in each element of a batch); then the JSON with those values replaced,
    /// written anew (compact, keys in sorted order).
    #[must_use]
    pub fn message(&self, text: &str) -> String {
        if self.pointers.is_empty() {
            return text.to_string();
        }
        let Ok(mut value) = serde_json::from_str::<Value>(text) else {
            return text.to_string();
        };
        let mut changed = self.apply(&mut value);
        if let Value::Array(batch) = &mut value {
            for element in batch {
                changed |= self.apply(element);
            }
        }
        if changed {
            value.to_string()
        } else {
            text.to_string()
        }
    }

    fn apply(&self, value: &mut Value) -> bool {
        let mut changed = false;
        for pointer in &self.pointers {
            if let Some(found) = value.pointer_mut(pointer) {
                *found = Value::String(REDACTED.into());
                changed = true;
            }
        }
        changed
    }

    /// Headers for the trace: lower-case names, a repeated header joined by `", "`, secrets
    /// replaced.
    #[must_use]
    pub fn headers(&self, map: &hyper::HeaderMap) -> Headers {
        let mut out = Headers::new();
        for (name, value) in map {
            let name = name.as_str().to_ascii_lowercase();
            let value = if always_redacted(&name) || self.headers.contains(&name) {
                REDACTED.to_string()
            } else {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            };
            out.entry(name)
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(&value);
                })
                .or_insert(value);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redaction(values: &[&str]) -> Redaction {
        let values: Vec<String> = values.iter().map(ToString::to_string).collect();
        Redaction::parse(&values).expect("valid")
    }

    #[test]
    fn a_pointer_replaces_the_value_and_leaves_other_messages_as_written() {
        let r = redaction(&["/params/arguments/token"]);
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"token":"s3cret"}}}"#;
        let out = r.message(call);
        assert!(!out.contains("s3cret"), "{out}");
        assert!(out.contains(r#""token":"[redacted]""#), "{out}");
        let ping = r#"{"jsonrpc":"2.0",  "id":2,"method":"ping"}"#;
        assert_eq!(r.message(ping), ping);
        assert_eq!(r.message("not json"), "not json");
    }

    #[test]
    fn each_element_of_a_batch_is_redacted() {
        let r = redaction(&["/params/key"]);
        let out = r.message(r#"[{"params":{"key":"a"}},{"params":{"key":"b"}}]"#);
        assert_eq!(
            out,
            r#"[{"params":{"key":"[redacted]"}},{"params":{"key":"[redacted]"}}]"#
        );
    }

    #[test]
    fn headers_are_lower_case_joined_and_secrets_never_written() {
        let r = redaction(&["header:X-Api-Key"]);
        let mut map = hyper::HeaderMap::new();
        map.insert("Authorization", "Bearer abc".parse().expect("a value"));
        map.insert("x-api-key", "k".parse().expect("a value"));
        map.append("accept", "text/event-stream".parse().expect("a value"));
        map.append("accept", "application/json".parse().expect("a value"));
        let out = r.headers(&map);
        assert_eq!(out["authorization"], REDACTED);
        assert_eq!(out["x-api-key"], REDACTED);
        assert_eq!(out["accept"], "text/event-stream, application/json");
        assert_eq!(r.listed(), ["header:x-api-key"]);
    }

    #[test]
    fn a_value_that_is_neither_a_pointer_nor_a_header_is_refused_with_the_forms() {
        let e = Redaction::parse(&["token".into()]).expect_err("refused");
        assert!(
            e.contains("/params/arguments/token") && e.contains("header:"),
            "{e}"
        );
        assert!(Redaction::parse(&["header:".into()]).is_err());
    }
}
