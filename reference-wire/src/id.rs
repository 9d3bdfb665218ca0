//! Request ids compared as exact JSON values.
//!
//! MCP ids are strings or integers and a response must echo the identical
//! value: `7` and `"7"` are different requests. Fractional numbers, `null`,
//! booleans, arrays and objects are not ids at all.

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
