//! JSON patterns: how an expected (`<`) line is compared with a message the target sent.
//!
//! A pattern is ordinary JSON with a few string tokens that stand for more than themselves.
//! Comparison is semantic, never textual: key order is irrelevant, numbers compare by value
//! (`1` equals `1.0`), and objects are open (keys the pattern does not name are allowed, since
//! the MCP schema lets almost every object carry extra fields such as `_meta`).
//!
//! | token         | matches                                                       |
//! |---------------|---------------------------------------------------------------|
//! | `"{...}"`     | any value (the key must be present)                           |
//! | `"{absent}"`  | as an object member: the key must not be there                |
//! | `"{string}"`, `"{number}"`, `"{integer}"`, `"{bool}"`, `"{object}"`, `"{array}"` | any value of that type |
//! | `"{$name}"`   | captures the value on first use; later uses must be equal     |
//!
//! A member `"...": "{...}"` is accepted for readers used to closed objects; it changes nothing.

mod difference;
mod text;

pub use difference::{first_difference, matches, Difference};
pub use text::{canonical, fill_pattern, id_key, substitute};

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Values captured by `"{$name}"` tokens, shared by every step of one run of a case.
pub type Captures = BTreeMap<String, Value>;

enum Token<'a> {
    Any,
    Absent,
    Type(&'a str),
    Capture(&'a str),
}

fn token(pattern: &Value) -> Option<Token<'_>> {
    let s = pattern.as_str()?;
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    match inner {
        "..." => Some(Token::Any),
        "absent" => Some(Token::Absent),
        "string" | "number" | "integer" | "bool" | "object" | "array" => Some(Token::Type(inner)),
        _ => inner
            .strip_prefix('$')
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .map(Token::Capture),
    }
}

fn has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "bool" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => false,
    }
}

/// Numbers compare by value, exactly: an integer equals a float only when the float is that
/// very integer, so `9007199254740993` is not `9007199254740992.0` (which a comparison as
/// `f64` would say, making equality intransitive).
fn numbers_equal(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    let integer = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    // Every `i64` and `u64` fits in `i128`, and so does every integral float below 2^127.
    let float_is = |f: Option<f64>, i: i128| {
        f.is_some_and(|f| f.fract() == 0.0 && f.abs() < 2f64.powi(127) && f as i128 == i)
    };
    match (integer(a), integer(b)) {
        (Some(x), Some(y)) => x == y,
        (Some(x), None) => float_is(b.as_f64(), x),
        (None, Some(y)) => float_is(a.as_f64(), y),
        (None, None) => a.as_f64().is_some_and(|x| b.as_f64() == Some(x)),
    }
}

/// Plain JSON equality with numbers compared by value and key order ignored.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Rewrites `actual` toward `pattern` for display and blessing: parts the pattern matches with
/// a wildcard take the wildcard's text, keys the pattern does not name are dropped (they are
/// allowed), and everything that differs is kept as the target sent it.
pub fn normalize(pattern: &Value, actual: &Value, captures: &Captures) -> Value {
    if let Some(tok) = token(pattern) {
        let keep = match tok {
            Token::Any => true,
            Token::Type(ty) => has_type(actual, ty),
            Token::Capture(name) => captures.get(name).is_none_or(|v| json_equal(v, actual)),
            Token::Absent => false,
        };
        return if keep {
            pattern.clone()
        } else {
            actual.clone()
        };
    }
    match (pattern, actual) {
        (Value::Object(p), Value::Object(a)) => {
            // Extra keys are allowed, so they are dropped from view, unless the object differs:
            // then every key stays, since an `error` in place of a `result` is the story.
            let differs = first_difference(pattern, actual, captures).is_some();
            let mut out = Map::new();
            for (key, got) in a {
                match p.get(key) {
                    Some(want) => {
                        out.insert(key.clone(), normalize(want, got, captures));
                    }
                    None if differs => {
                        out.insert(key.clone(), got.clone());
                    }
                    None => {}
                }
            }
            for (key, want) in p {
                if key == "..."
                    || (!a.contains_key(key) && matches!(token(want), Some(Token::Absent)))
                {
                    out.insert(key.clone(), want.clone());
                }
            }
            Value::Object(out)
        }
        (Value::Array(p), Value::Array(a)) if p.len() == a.len() => Value::Array(
            p.iter()
                .zip(a)
                .map(|(want, got)| normalize(want, got, captures))
                .collect(),
        ),
        (Value::Number(p), Value::Number(a)) if numbers_equal(p, a) => pattern.clone(),
        _ => actual.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(pattern: Value, actual: Value) -> bool {
        matches(&pattern, &actual, &mut Captures::new())
    }

    #[test]
    fn objects_are_open_and_order_free() {
        assert!(check(json!({"a": 1}), json!({"b": 2, "a": 1})));
        assert!(!check(json!({"a": 1, "c": 3}), json!({"a": 1})));
    }

    #[test]
    fn numbers_compare_by_value_but_strings_are_not_numbers() {
        assert!(check(json!({"id": 1}), json!({"id": 1.0})));
        assert!(!check(json!({"id": 1}), json!({"id": "1"})));
        assert!(!check(
            json!({"id": 9007199254740991u64}),
            json!({"id": 9007199254740990u64})
        ));
        assert!(check(json!(-1), json!(-1)));
    }

    #[test]
    fn large_integers_equal_only_the_float_they_are() {
        // Found by conformance/tests/fuzz.rs (json_equal_on_edge_numbers): compared as `f64`,
        // 2^63 + 1 equalled the float 2^63, which equalled 2^63, yet 2^63 + 1 != 2^63.
        let two_63 = json!(9_223_372_036_854_775_808_f64);
        assert!(json_equal(&json!(9223372036854775808u64), &two_63));
        assert!(!json_equal(&json!(9223372036854775809u64), &two_63));
        assert!(check(json!(9007199254740992u64), json!(9007199254740992.0)));
        assert!(!check(
            json!(9007199254740993u64),
            json!(9007199254740992.0)
        ));
        assert!(!check(
            json!(-9007199254740993i64),
            json!(-9007199254740992.0)
        ));
        assert!(!check(json!(1), json!(1.5)));
        assert!(check(json!(0.5), json!(0.5)));
    }

    #[test]
    fn wildcards_and_types() {
        assert!(check(json!({"a": "{...}"}), json!({"a": [1]})));
        assert!(!check(json!({"a": "{...}"}), json!({})));
        assert!(check(json!({"a": "{absent}"}), json!({"b": 1})));
        assert!(!check(json!({"a": "{absent}"}), json!({"a": null})));
        assert!(check(json!("{integer}"), json!(3)));
        assert!(!check(json!("{integer}"), json!(3.5)));
        assert!(check(json!("{number}"), json!(3.5)));
        assert!(!check(json!("{string}"), json!(3)));
        assert!(check(
            json!({"...": "{...}", "a": 1}),
            json!({"a": 1, "z": 0})
        ));
    }

    #[test]
    fn arrays_are_exact_length() {
        assert!(check(json!([1, "{...}"]), json!([1, 2])));
        assert!(!check(json!([1]), json!([1, 2])));
    }

    #[test]
    fn captures_bind_once_and_roll_back_on_failure() {
        let mut caps = Captures::new();
        assert!(!matches(
            &json!({"id": "{$x}", "ok": true}),
            &json!({"id": 7, "ok": false}),
            &mut caps
        ));
        assert!(caps.is_empty());
        assert!(matches(
            &json!({"id": "{$x}"}),
            &json!({"id": 7}),
            &mut caps
        ));
        assert!(matches(
            &json!({"id": "{$x}"}),
            &json!({"id": 7}),
            &mut caps
        ));
        assert!(!matches(
            &json!({"id": "{$x}"}),
            &json!({"id": "7"}),
            &mut caps
        ));
    }

    #[test]
    fn difference_names_the_pointer() {
        let d = first_difference(
            &json!({"result": {"content": [{"text": "a"}]}}),
            &json!({"result": {"content": [{"text": "b"}]}}),
            &Captures::new(),
        )
        .unwrap();
        assert_eq!(d.pointer, "/result/content/0/text");
        assert_eq!(d.expected, "\"a\"");
        assert_eq!(d.actual, "\"b\"");
        let d = first_difference(&json!({"a/b": 1}), &json!({}), &Captures::new()).unwrap();
        assert_eq!(d.pointer, "/a~1b");
        assert_eq!(d.actual, "absent");
    }

    #[test]
    fn normalize_keeps_wildcards_and_real_differences() {
        let pattern = json!({"id": 2, "result": "{...}", "x": "{absent}"});
        let actual = json!({"id": 3, "result": {"big": true}, "extra": 1});
        assert_eq!(
            canonical(&normalize(&pattern, &actual, &Captures::new())),
            r#"{"extra":1,"id":3,"result":"{...}","x":"{absent}"}"#
        );
        let matching = json!({"id": 2, "result": {"big": true}, "extra": 1});
        assert_eq!(
            canonical(&normalize(&pattern, &matching, &Captures::new())),
            r#"{"id":2,"result":"{...}","x":"{absent}"}"#
        );
    }
}
