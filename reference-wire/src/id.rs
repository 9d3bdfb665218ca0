//! Request ids compared as exact JSON values.
//!
//! MCP ids are strings or integers and a response must echo the identical
//! value: `7` and `"7"` are different requests. Fractional numbers, `null`,
//! booleans, arrays and objects are not ids at all, and neither are numbers
//! this side could not echo back exactly: `-0`, integers outside the 64-bit
//! range, and integers written as `1.0` or `1e3`. [`RequestId::why_not`]
//! names the reason for each.

use serde_json::Value;
use std::fmt;

/// A JSON-RPC request id: an integer or a string, compared exactly.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// Any integer that fits in `i64`.
    Int(i64),
    /// A non-negative integer above `i64::MAX`.
    UInt(u64),
    /// A string id, compared byte for byte.
    Str(String),
}

impl RequestId {
    /// Reads an id from a JSON value; `None` when the value is not a valid id.
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => Some(Self::Str(s.clone())),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Some(Self::Int(i))
                } else {
                    n.as_u64().map(Self::UInt)
                }
            }
            _ => None,
        }
    }

    /// Why `value` is not a valid id, as a phrase for an error message
    /// ("got …"); `None` when it is one.
    pub fn why_not(value: &Value) -> Option<String> {
        if Self::from_value(value).is_some() {
            return None;
        }
        Some(match value {
            Value::Null => "null".to_owned(),
            Value::Bool(_) => "a boolean".to_owned(),
            Value::Array(_) => "an array".to_owned(),
            Value::Object(_) => "an object".to_owned(),
            Value::Number(n) => {
                // serde_json keeps every integer that fits i64 or u64 exactly;
                // anything else arrives here as a float.
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f == 0.0 && f.is_sign_negative() {
                    format!("{n}: negative zero, which has no integer form to echo back")
                } else if f.fract() != 0.0 {
                    format!("{n}: a fractional number")
                } else if f.abs() >= 9_223_372_036_854_775_808.0 {
                    format!(
                        "{n}: an integer outside -2^63..2^64-1, which this server cannot echo back exactly"
                    )
                } else {
                    format!("{n}: a number written with a decimal point or an exponent; write it as a plain integer")
                }
            }
            Value::String(_) => unreachable!("strings are always valid ids"),
        })
    }

    /// The id as the JSON value it was read from.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Int(i) => Value::from(*i),
            Self::UInt(u) => Value::from(*u),
            Self::Str(s) => Value::from(s.as_str()),
        }
    }
}

impl From<i64> for RequestId {
    fn from(i: i64) -> Self {
        Self::Int(i)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self::Str(s.to_owned())
    }
}

/// Displays the id as compact JSON, so strings keep their quotes.
impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integer_and_string_ids_differ() {
        let a = RequestId::from_value(&json!(7)).unwrap();
        let b = RequestId::from_value(&json!("7")).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.to_value(), json!(7));
        assert_eq!(b.to_value(), json!("7"));
    }

    #[test]
    fn extreme_integers_round_trip() {
        for v in [
            json!(0),
            json!(-1),
            json!(9007199254740991_i64),
            json!(u64::MAX),
        ] {
            assert_eq!(RequestId::from_value(&v).unwrap().to_value(), v);
        }
    }

    #[test]
    fn why_not_names_the_real_reason() {
        let reason = |text: &str| {
            RequestId::why_not(&serde_json::from_str(text).expect("json")).expect("not an id")
        };
        assert!(reason("-0").contains("negative zero"), "{}", reason("-0"));
        assert!(reason("-0.0").contains("negative zero"));
        assert!(reason("1.5").contains("fractional"));
        for huge in ["18446744073709551616", "-9223372036854775809", "1e300"] {
            assert!(
                reason(huge).contains("outside -2^63..2^64-1"),
                "{huge}: {}",
                reason(huge)
            );
        }
        assert!(reason("1.0").contains("decimal point or an exponent"));
        assert!(reason("1e3").contains("decimal point or an exponent"));
        assert_eq!(reason("null"), "null");
        assert_eq!(reason("{}"), "an object");
        assert_eq!(RequestId::why_not(&json!(-0_i64)), None);
        assert_eq!(RequestId::why_not(&json!("x")), None);
    }

    #[test]
    fn non_ids_are_rejected() {
        for v in [
            json!(null),
            json!(1.5),
            json!(1.0),
            json!(true),
            json!({}),
            json!([]),
        ] {
            assert_eq!(RequestId::from_value(&v), None, "{v}");
        }
    }
}
