//! Protocol versions this client speaks, and what differs between the two eras.
//!
//! In the handshake era (2024-11-05 … 2025-11-25) a session opens with `initialize`. In the
//! stateless era (2026-07-28) there is no handshake: every request carries its version,
//! the client's capabilities and its identity in `_meta` (LIF-10), results carry
//! `resultType` (RPC-14), and `ping` no longer exists.

use serde_json::{json, Value};

/// The protocol version this client asks for by default in the handshake era.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The stateless era's version, which this client tries first when it may choose.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// Every protocol version this client speaks, oldest first.
pub const KNOWN_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The `_meta` key of a request's protocol version (stateless era).
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of the client's capabilities (stateless era).
pub const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of the client's name and version (stateless era).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// The two ways MCP sessions work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// `initialize` first (2024-11-05 … 2025-11-25).
    Handshake,
    /// Every request stands alone, stamped with its version (2026-07-28).
    Stateless,
}

impl Era {
    /// The era `version` belongs to.
    pub fn of(version: &str) -> Era {
        if is_stateless(version) {
            Era::Stateless
        } else {
            Era::Handshake
        }
    }
}

/// Whether this client speaks `version`.
pub fn is_known(version: &str) -> bool {
    KNOWN_VERSIONS.contains(&version)
}

/// Whether `version` belongs to the stateless era (2026-07-28 and later): no handshake, no
/// sessions, every request stamped with its version.
pub fn is_stateless(version: &str) -> bool {
    version >= STATELESS_VERSION
}

/// Of the versions a server says it supports, the one this client prefers: the newest it
/// knows.
pub fn choose(supported: &[Value]) -> Option<&'static str> {
    KNOWN_VERSIONS
        .iter()
        .rev()
        .find(|known| supported.iter().any(|v| v.as_str() == Some(known)))
        .copied()
}

/// Error codes that only a stateless-era server sends: a server that answers with one is
/// modern, and the client must not fall back to `initialize` (LIF-14, HTTP-20).
pub const MODERN_ERRORS: [i64; 3] = [
    -32020, // HeaderMismatch
    -32021, // MissingRequiredClientCapability
    -32022, // UnsupportedProtocolVersion
];

/// The identifier of the tasks extension of 2026-07-28 (`modelcontextprotocol/ext-tasks`).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether `version` has the core tasks of 2025-11-25 (`params.task`, `tasks/get`,
/// `tasks/result`, `tasks/list`, `tasks/cancel`): only that handshake-era version does.
pub fn has_core_tasks(version: &str) -> bool {
    version == "2025-11-25"
}

/// Whether `version` serves tasks through the `io.modelcontextprotocol/tasks`
/// extension, declared per request, instead (2026-07-28 and later).
pub fn has_tasks_extension(version: &str) -> bool {
    is_stateless(version)
}

/// Adds the stateless era's per-request fields to `_meta` (LIF-10), declaring no
/// capabilities.
pub fn stamp(params: &mut Value, version: &str, client_info: Value) {
    stamp_with(params, version, client_info, json!({}));
}

/// Adds the stateless era's per-request fields to `_meta`, declaring `capabilities` for
/// this request only (the tasks extension is declared this way).
pub fn stamp_with(params: &mut Value, version: &str, client_info: Value, capabilities: Value) {
    if !params.is_object() {
        *params = json!({});
    }
    let meta = &mut params["_meta"];
    if !meta.is_object() {
        *meta = json!({});
    }
    meta[META_VERSION] = json!(version);
    meta[META_CAPABILITIES] = capabilities;
    meta[META_CLIENT_INFO] = client_info;
}

/// Checks a stateless-era result's `resultType` (RPC-14): absent means complete (a
/// legacy-shaped server), an unknown value makes the result invalid.
pub fn check_result_type(result: &Value) -> Result<(), String> {
    match result.get("resultType") {
        None => Ok(()),
        Some(kind) if kind == "complete" => Ok(()),
        Some(kind) if kind == "input_required" => Err(
            "the server asks for more input (resultType \"input_required\"), which this client does not provide; it declares no capabilities".into(),
        ),
        Some(kind) => Err(format!(
            "resultType {kind} is not one this client knows (\"complete\")"
        )),
    }
}
