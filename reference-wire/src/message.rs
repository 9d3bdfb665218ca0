//! JSON-RPC 2.0 messages as MCP uses them, and their compact encoding.
//!
//! [`Message::parse`] classifies one received line; anything that is not a
//! valid message comes back as a [`Rejected`] carrying the error to send and
//! the id to send it under (`None` means `null`, because the id was
//! unreadable). The encoders produce compact JSON, which never contains a
//! raw newline, so each encoded message is exactly one stdio line.

use crate::codes::{INVALID_REQUEST, PARSE_ERROR};
use crate::id::RequestId;
use serde_json::{Map, Value};
use std::fmt;

/// One received JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request: has a valid id and a method.
    Request {
        /// The id its response must carry.
        id: RequestId,
        /// What is asked.
        method: String,
        /// The request's parameters, when it had any.
        params: Option<Value>,
    },
    /// A notification: has a method and no id; never answered.
    Notification {
        /// What is notified.
        method: String,
        /// The notification's parameters, when it had any.
        params: Option<Value>,
    },
    /// A response; `id` is `None` when it was `null` or missing.
    Response {
        /// The id of the request answered.
        id: Option<RequestId>,
        /// Its `result`, or its `error`.
        outcome: Result<Value, RpcError>,
    },
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// The error code (`-32601` method not found, …).
    pub code: i64,
    /// What went wrong, for people.
    pub message: String,
    /// More about it, when there is more.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message, without `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with a `data` member.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("code".into(), self.code.into());
        obj.insert("message".into(), self.message.clone().into());
        if let Some(data) = &self.data {
            obj.insert("data".into(), data.clone());
        }
        Value::Object(obj)
    }

    fn from_value(value: &Value) -> Self {
        let code = value.get("code").and_then(Value::as_i64);
        let message = value.get("message").and_then(Value::as_str);
        match (code, message) {
            (Some(code), Some(message)) => Self {
                code,
                message: message.to_owned(),
                data: value.get("data").cloned(),
            },
            _ => Self {
                code: INVALID_REQUEST,
                message: format!("malformed error object from peer: {value}"),
                data: None,
            },
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// A line that is not a valid message: answer `error` under `id` (`None` = `null`).
#[derive(Clone, Debug, PartialEq)]
pub struct Rejected {
    /// The id to answer under (`None` = `null`).
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: RpcError,
}

impl Rejected {
    fn new(id: Option<RequestId>, code: i64, message: impl Into<String>) -> Self {
        Self {
            id,
            error: RpcError::new(code, message),
        }
    }

    /// Encodes the error response for this rejection.
    pub fn to_line(&self) -> String {
        error_response(self.id.as_ref(), &self.error)
    }
}

impl Message {
    /// Classifies one line (without its newline).
    pub fn parse(line: &str) -> Result<Self, Rejected> {
        let value: Value = serde_json::from_str(line).map_err(|e| {
            let depth = nesting_depth(line);
            let message = if depth > MAX_NESTING {
                format!(
                    "parse error: the message nests {depth} arrays/objects deep and this peer reads at most \
                     {MAX_NESTING} (the json parser's recursion limit); flatten the deepest values"
                )
            } else {
                format!("parse error: line is not valid json ({e}); send one json-rpc object per line")
            };
            Rejected::new(None, PARSE_ERROR, message)
        })?;
        Self::from_value(value)
    }

    /// Classifies one already-parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self, Rejected> {
        let mut obj = match value {
            Value::Object(obj) => obj,
            Value::Array(_) => {
                return Err(Rejected::new(
                    None,
                    INVALID_REQUEST,
                    "invalid request: json-rpc batches are not supported; send each message on its own line",
                ))
            }
            other => {
                return Err(Rejected::new(
                    None,
                    INVALID_REQUEST,
                    format!("invalid request: expected a json object, got {}", kind(&other)),
                ))
            }
        };
        let raw_id = obj.remove("id");
        let id = raw_id.as_ref().and_then(RequestId::from_value);
        if obj.get("jsonrpc") != Some(&Value::from("2.0")) {
            return Err(Rejected::new(
                id,
                INVALID_REQUEST,
                "invalid request: member \"jsonrpc\" must be exactly \"2.0\"",
            ));
        }
        if let Some(method) = obj.remove("method") {
            let Value::String(method) = method else {
                return Err(Rejected::new(
                    id,
                    INVALID_REQUEST,
                    "invalid request: member \"method\" must be a string",
                ));
            };
            let params = obj.remove("params");
            return match (raw_id, id) {
                (None, _) => Ok(Self::Notification { method, params }),
                (Some(_), Some(id)) => Ok(Self::Request { id, method, params }),
                (Some(raw), None) => Err(Rejected::new(
                    None,
                    INVALID_REQUEST,
                    format!(
                        "invalid request: id must be a string or an integer, got {}",
                        RequestId::why_not(&raw).unwrap_or_default()
                    ),
                )),
            };
        }
        if let Some(result) = obj.remove("result") {
            return Ok(Self::Response {
                id,
                outcome: Ok(result),
            });
        }
        if let Some(error) = obj.remove("error") {
            return Ok(Self::Response {
                id,
                outcome: Err(RpcError::from_value(&error)),
            });
        }
        Err(Rejected::new(
            id,
            INVALID_REQUEST,
            "invalid request: object has neither \"method\" nor \"result\"/\"error\"",
        ))
    }
}

/// The deepest nesting of arrays and objects [`Message::parse`] accepts:
/// serde_json refuses a 128th level to keep its recursive parser off the
/// end of the stack. A well-formed line nested deeper is answered with a
/// parse error that says so.
pub const MAX_NESTING: usize = 127;

/// How deeply `text` nests arrays and objects, counting brackets outside
/// strings. Only used to explain a failed parse, so malformed input is fine.
fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for byte in text.bytes() {
        match (in_string, byte) {
            (true, _) if escaped => escaped = false,
            (true, b'\\') => escaped = true,
            (true, b'"') => in_string = false,
            (true, _) => {}
            (false, b'"') => in_string = true,
            (false, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, b']' | b'}') => depth = depth.saturating_sub(1),
            (false, _) => {}
        }
    }
    deepest
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Encodes a request.
pub fn request(id: &RequestId, method: &str, params: Option<Value>) -> String {
    let method = Value::from(method);
    match params {
        Some(p) => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method},"params":{p}}}"#),
        None => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method}}}"#),
    }
}

/// Encodes a notification.
pub fn notification(method: &str, params: Option<Value>) -> String {
    let method = Value::from(method);
    match params {
        Some(p) => format!(r#"{{"jsonrpc":"2.0","method":{method},"params":{p}}}"#),
        None => format!(r#"{{"jsonrpc":"2.0","method":{method}}}"#),
    }
}

/// Encodes a successful response.
pub fn response(id: &RequestId, result: Value) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

/// Encodes an error response; `id: None` is written as `null`.
pub fn error_response(id: Option<&RequestId>, error: &RpcError) -> String {
    let id = id.map_or(Value::Null, RequestId::to_value);
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{}}}"#,
        error.to_value()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rejected(line: &str) -> Rejected {
        Message::parse(line).expect_err(line)
    }

    #[test]
    fn classifies_requests_notifications_and_responses() {
        assert!(matches!(
            Message::parse(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#),
            Ok(Message::Request {
                id: RequestId::Str(_),
                ..
            })
        ));
        assert!(matches!(
            Message::parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            Message::parse(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Ok(Message::Response {
                id: Some(RequestId::Int(1)),
                outcome: Ok(_)
            })
        ));
        assert!(matches!(
            Message::parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#),
            Ok(Message::Response {
                id: None,
                outcome: Err(RpcError {
                    code: PARSE_ERROR,
                    ..
                })
            })
        ));
    }

    #[test]
    fn malformed_lines_get_the_right_code_and_id() {
        assert_eq!(rejected("{").error.code, PARSE_ERROR);
        assert_eq!(rejected("{").id, None);
        assert_eq!(rejected("[]").error.code, INVALID_REQUEST);
        assert_eq!(rejected("5").error.code, INVALID_REQUEST);
        let r = rejected(r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#);
        assert_eq!(
            (r.error.code, r.id),
            (INVALID_REQUEST, Some(RequestId::Int(3)))
        );
        for bad in ["null", "1.5", "true", "{}", "[1]"] {
            let r = rejected(&format!(
                r#"{{"jsonrpc":"2.0","id":{bad},"method":"ping"}}"#
            ));
            assert_eq!((r.error.code, r.id), (INVALID_REQUEST, None), "{bad}");
        }
    }

    #[test]
    fn nesting_beyond_the_limit_is_named_as_the_reason() {
        let nested = |levels: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{}{}}}"#,
                "[".repeat(levels - 1),
                "]".repeat(levels - 1)
            )
        };
        // The request object is the first level, `params` the second.
        assert!(Message::parse(&nested(MAX_NESTING)).is_ok());
        let r = rejected(&nested(MAX_NESTING + 1));
        assert_eq!(r.error.code, PARSE_ERROR);
        assert!(
            r.error.message.contains("nests 128 arrays/objects deep"),
            "{}",
            r.error.message
        );
        // Brackets inside strings do not count, and a plain syntax error says so.
        assert_eq!(nesting_depth(r#"{"a":"[[[{{\"]]"}"#), 1);
        assert!(rejected("{").error.message.contains("not valid json"));
    }

    #[test]
    fn invalid_ids_name_their_reason() {
        let r = rejected(r#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#);
        assert!(
            r.error.message.contains("negative zero"),
            "{}",
            r.error.message
        );
        let r = rejected(r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#);
        assert!(r.error.message.contains("outside"), "{}", r.error.message);
        assert_eq!(r.id, None);
    }

    #[test]
    fn encoded_messages_are_single_lines() {
        let line = response(&RequestId::from("x"), json!({"text": "a\nb"}));
        assert!(!line.contains('\n'));
        let back = Message::parse(&request(&RequestId::from(-1), "a\"b", Some(json!({}))));
        assert!(matches!(
            back,
            Ok(Message::Request {
                id: RequestId::Int(-1),
                ..
            })
        ));
        assert_eq!(
            error_response(None, &RpcError::new(PARSE_ERROR, "p")),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p"}}"#
        );
    }
}
