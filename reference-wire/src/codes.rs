//! JSON-RPC 2.0 error codes used by the pair.
//!
//! Kept as named constants so a code on the wire can be traced back to the
//! rule that produced it.

/// The line is not valid JSON (or not valid UTF-8, or too long to read).
pub const PARSE_ERROR: i64 = -32700;
/// The JSON value is not a valid JSON-RPC request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist on this peer.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The params are malformed, or name something that does not exist.
pub const INVALID_PARAMS: i64 = -32602;
/// The peer failed while handling a well-formed request.
pub const INTERNAL_ERROR: i64 = -32603;
