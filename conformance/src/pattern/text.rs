//! The text side of patterns: rendering JSON canonically (sorted keys, for diffs and ledger
//! keys) and filling `{$name}` references into case lines before they are sent or parsed.

use super::Captures;
use serde_json::Value;

/// The key of a request id or progress token: the exact JSON value, type included (`7` and
/// `"7"` differ), with numbers compared by value (`7` and `7.0` are the same number).
pub fn id_key(id: &Value) -> String {
    match id.as_f64() {
        Some(f) if !id.is_i64() && !id.is_u64() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
            format!("{}", f as i64)
        }
        _ => canonical(id),
    }
}

/// Compact JSON with object keys sorted at every depth, so that rendering never depends on
/// the order a target chose or on serde_json's map features.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Fills `{$name}` references in a line the harness is about to send. A reference that is a
/// whole JSON string (`"{$id}"`) becomes the captured JSON value itself, so a captured integer
/// id stays an integer; a reference inside a longer string is replaced by the value's text,
/// escaped for the string; a reference outside any string (`"id":{$i}`) becomes the value.
/// Returns the name of the first reference that has no value.
pub fn substitute(line: &str, captures: &Captures) -> Result<String, String> {
    fill_references(line, captures, false)
}

/// Parses an expected line after filling in the captures it uses inside longer strings
/// (`"sleep-{$i}"`) or outside strings; a whole-string `"{$name}"` stays a capture token for
/// the matcher, and a reference to nothing captured yet stays as written.
pub fn fill_pattern(text: &str, captures: &Captures) -> Result<Value, serde_json::Error> {
    let filled = fill_references(text, captures, true).unwrap_or_else(|_| text.to_string());
    serde_json::from_str(&filled)
}

/// The scanner behind [`substitute`] and [`fill_pattern`]. It follows JSON strings (quotes and
/// backslash escapes) to know what a reference stands in: a whole string, part of one, or a
/// value. With `for_pattern`, whole-string references and unbound ones are left as written.
fn fill_references(line: &str, captures: &Captures, for_pattern: bool) -> Result<String, String> {
    let bytes = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let (mut in_string, mut escaped, mut opened_at) = (false, false, 0);
    let (mut i, mut copied) = (0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        if escaped {
            escaped = false;
        } else if b == b'\\' && in_string {
            escaped = true;
        } else if b == b'"' {
            in_string = !in_string;
            opened_at = i;
        } else if b == b'{' && bytes.get(i + 1) == Some(&b'$') {
            let reference = line[i..]
                .find('}')
                .map(|len| (&line[i + 2..i + len], i + len + 1));
            if let Some((name, end)) = reference.filter(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
            }) {
                let whole = in_string && opened_at + 1 == i && bytes.get(end) == Some(&b'"');
                let value = match captures.get(name) {
                    _ if whole && for_pattern => None,
                    Some(value) => Some(value),
                    None if for_pattern => None,
                    None => return Err(name.to_string()),
                };
                if let Some(value) = value {
                    if whole {
                        out.push_str(&line[copied..opened_at]);
                        out.push_str(&value.to_string());
                        in_string = false;
                        copied = end + 1;
                    } else {
                        out.push_str(&line[copied..i]);
                        if in_string {
                            let text = match value {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            let quoted = Value::String(text).to_string();
                            out.push_str(&quoted[1..quoted.len() - 1]);
                        } else {
                            out.push_str(&value.to_string());
                        }
                        copied = end;
                    }
                    i = copied;
                    continue;
                }
            }
        }
        i += 1;
    }
    out.push_str(&line[copied..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_sorts_keys() {
        assert_eq!(
            canonical(&json!({"b": 1, "a": {"d": 2, "c": 3}})),
            r#"{"a":{"c":3,"d":2},"b":1}"#
        );
    }

    #[test]
    fn substitute_keeps_types() {
        let mut caps = Captures::new();
        caps.insert("id".into(), json!(7));
        caps.insert("i".into(), json!(3));
        caps.insert("s".into(), json!("a\"b"));
        assert_eq!(
            substitute(r#"{"id":"{$id}"}"#, &caps).unwrap(),
            r#"{"id":7}"#
        );
        assert_eq!(
            substitute(r#"{"id":"s-{$i}"}"#, &caps).unwrap(),
            r#"{"id":"s-3"}"#
        );
        assert_eq!(
            substitute(r#"{"t":"{$s}"}"#, &caps).unwrap(),
            r#"{"t":"a\"b"}"#
        );
        assert_eq!(
            substitute(r#"{"t":"x{$s}"}"#, &caps).unwrap(),
            r#"{"t":"xa\"b"}"#
        );
        assert_eq!(substitute(r#"{"t":"{$nope}"}"#, &caps), Err("nope".into()));
        assert_eq!(
            substitute(r#"{"t":"{$ not}"}"#, &caps).unwrap(),
            r#"{"t":"{$ not}"}"#
        );
    }

    #[test]
    fn references_follow_json_strings() {
        // Found by conformance/tests/fuzz.rs (substitute_fills_every_reference): an escaped
        // quote before a reference was taken for the string's opening quote, and a value's
        // text was put into a string unescaped; both made invalid JSON.
        let mut caps = Captures::new();
        caps.insert("i".into(), json!(3));
        caps.insert("o".into(), json!({"a": [1]}));
        caps.insert("s".into(), json!("x"));
        assert_eq!(
            substitute(r#"{"t":"\"{$i}"}"#, &caps).unwrap(),
            r#"{"t":"\"3"}"#
        );
        assert_eq!(
            substitute(r#"{"t":"see {$o}"}"#, &caps).unwrap(),
            r#"{"t":"see {\"a\":[1]}"}"#
        );
        assert_eq!(
            substitute(r#"{"id":{$i},"s":{$s}}"#, &caps).unwrap(),
            r#"{"id":3,"s":"x"}"#
        );
        // A name used whole and inside a string: the whole one stays a token for the matcher.
        assert_eq!(
            fill_pattern(r#"{"id":"{$i}","name":"sleep-{$i}"}"#, &caps).unwrap(),
            json!({"id": "{$i}", "name": "sleep-3"})
        );
        // A reference to nothing captured stays as written; the others are still filled.
        assert_eq!(
            fill_pattern(r#"["{$s}-{$nope}"]"#, &caps).unwrap(),
            json!(["x-{$nope}"])
        );
    }
}
