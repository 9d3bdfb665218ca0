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

/// 2026-07-28: HTTP headers do not match the body, or a required one is missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability it did not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the request's protocol version is not one the peer supports.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
