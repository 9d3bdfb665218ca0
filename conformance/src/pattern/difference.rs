//! Comparing a message with its pattern: whether it matches (binding the captures it makes)
//! and, when it does not, the first place it departs from it, as a JSON pointer with what
//! was expected and what came. Apart from the tokens and [`super::normalize`] because this
//! is the walk that decides a step's verdict.

use super::{canonical, has_type, json_equal, numbers_equal, token, Captures, Token};
use serde_json::{Map, Value};

/// The first place where a message departs from its pattern, for the failure report.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// JSON pointer (RFC 6901) into the message.
    pub pointer: String,
    /// What the pattern asked for, rendered as pattern text.
    pub expected: String,
    /// What the message had there (`absent` if the key was missing).
    pub actual: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(
            f,
            "first difference at {at}: expected {}, got {}",
            self.expected, self.actual
        )
    }
}

/// Does `actual` match `pattern`? Captures made by a failed match are rolled back.
pub fn matches(pattern: &Value, actual: &Value, captures: &mut Captures) -> bool {
    let mut trial = captures.clone();
    let ok = first_difference_in(pattern, actual, &mut trial, &mut String::new()).is_none();
    if ok {
        *captures = trial;
    }
    ok
}

/// The first difference between a message and its pattern, or `None` when they match.
pub fn first_difference(
    pattern: &Value,
    actual: &Value,
    captures: &Captures,
) -> Option<Difference> {
    first_difference_in(pattern, actual, &mut captures.clone(), &mut String::new())
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The first difference below `at` (a JSON pointer, extended while descending and restored
/// after), binding the captures the pattern makes on the way.
fn first_difference_in(
    pattern: &Value,
    actual: &Value,
    captures: &mut Captures,
    at: &mut String,
) -> Option<Difference> {
    if let Some(tok) = token(pattern) {
        return token_difference(tok, pattern, actual, captures, at);
    }
    match (pattern, actual) {
        (Value::Object(p), Value::Object(a)) => object_difference(p, a, captures, at),
        (Value::Array(p), Value::Array(a)) => array_difference(p, a, captures, at),
        (Value::Number(p), Value::Number(a)) if numbers_equal(p, a) => None,
        _ if pattern == actual => None,
        _ => Some(differs(at, pattern, actual)),
    }
}

/// The difference `at`: the pattern and the value, as written.
fn differs(at: &str, pattern: &Value, actual: &Value) -> Difference {
    Difference {
        pointer: at.to_string(),
        expected: canonical(pattern),
        actual: canonical(actual),
    }
}

/// A wildcard token against a value: `{$name}` binds the value, or must equal what it bound.
fn token_difference(
    tok: Token<'_>,
    pattern: &Value,
    actual: &Value,
    captures: &mut Captures,
    at: &str,
) -> Option<Difference> {
    match tok {
        Token::Any => None,
        Token::Absent => Some(differs(at, pattern, actual)),
        Token::Type(ty) => (!has_type(actual, ty)).then(|| differs(at, pattern, actual)),
        Token::Capture(name) => match captures.get(name) {
            Some(bound) if !json_equal(bound, actual) => Some(Difference {
                pointer: at.to_string(),
                expected: format!("{} (captured as ${name})", canonical(bound)),
                actual: canonical(actual),
            }),
            Some(_) => None,
            None => {
                captures.insert(name.to_string(), actual.clone());
                None
            }
        },
    }
}

/// Every key the pattern names (not `...`), in its order: present and matching, or absent
/// where the pattern says `"{absent}"`. Keys it does not name are allowed.
fn object_difference(
    p: &Map<String, Value>,
    a: &Map<String, Value>,
    captures: &mut Captures,
    at: &mut String,
) -> Option<Difference> {
    for (key, want) in p {
        if key == "..." {
            continue;
        }
        let len = at.len();
        at.push('/');
        at.push_str(&escape_pointer(key));
        let found = match (a.get(key), token(want)) {
            (None, Some(Token::Absent)) => None,
            (Some(got), Some(Token::Absent)) => Some(Difference {
                pointer: at.clone(),
                expected: "absent".into(),
                actual: canonical(got),
            }),
            (None, _) => Some(Difference {
                pointer: at.clone(),
                expected: canonical(want),
                actual: "absent".into(),
            }),
            (Some(got), _) => first_difference_in(want, got, captures, at),
        };
        at.truncate(len);
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Item by item, then the lengths.
fn array_difference(
    p: &[Value],
    a: &[Value],
    captures: &mut Captures,
    at: &mut String,
) -> Option<Difference> {
    for (i, (want, got)) in p.iter().zip(a).enumerate() {
        let len = at.len();
        at.push_str(&format!("/{i}"));
        let found = first_difference_in(want, got, captures, at);
        at.truncate(len);
        if found.is_some() {
            return found;
        }
    }
    if p.len() != a.len() {
        return Some(Difference {
            pointer: at.clone(),
            expected: format!("an array of {} items", p.len()),
            actual: format!("{} items", a.len()),
        });
    }
    None
}
