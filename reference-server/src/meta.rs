//! The per-request `_meta` fields of the stateless era (2026-07-28).
//!
//! Without a handshake, every request says which version it speaks and what
//! the client can do: `_meta["io.modelcontextprotocol/protocolVersion"]`
//! and `_meta["io.modelcontextprotocol/clientCapabilities"]` are required
//! (LIF-10), and results name the server in `_meta` instead of an
//! `initialize` result. A request that carries either field, or that is
//! `server/discover`, is a stateless-era request; anything else belongs to
//! the handshake era (LIF-14: a dual-era server decides from how the client
//! opens).

use crate::version::ProtocolVersion;
use reference_wire::{RpcError, INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION};
use serde_json::{json, Map, Value};

/// `_meta` key of a request's protocol version.
pub(crate) const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of a request's client capabilities.
pub(crate) const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the server's identity in a result.
pub(crate) const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The tasks extension, as a key of `clientCapabilities.extensions` and of
/// the server's `capabilities.extensions` (SEP-2663).
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The stateless era's probe method (LIF-11).
pub(crate) const DISCOVER: &str = "server/discover";

/// Whether a request belongs to the stateless era.
pub(crate) fn is_stateless_request(method: &str, params: Option<&Value>) -> bool {
    method == DISCOVER
        || fields(params).is_some_and(|meta| {
            meta.contains_key(PROTOCOL_VERSION) || meta.contains_key(CLIENT_CAPABILITIES)
        })
}

/// The required per-request fields of a stateless-era request.
pub(crate) struct Stamp {
    /// The version the request names, as sent.
    pub version: String,
    /// Whether the request's client capabilities declare the tasks extension
    /// (`extensions["io.modelcontextprotocol/tasks"]`, an object). Declared
    /// per request: an earlier request's declaration counts for nothing.
    pub tasks_extension: bool,
}

/// Reads the required fields: `-32602` (HTTP 400) when one is missing or
/// not of its type (LIF-10).
pub(crate) fn stamp(method: &str, params: Option<&Value>) -> Result<Stamp, RpcError> {
    let meta = fields(params);
    let version = meta.and_then(|m| m.get(PROTOCOL_VERSION));
    let capabilities = meta.and_then(|m| m.get(CLIENT_CAPABILITIES));
    let missing = |what: &str| {
        RpcError::new(
            INVALID_PARAMS,
            format!(
                "invalid params: {method:?} needs params._meta[{what:?}]; every 2026-07-28 request carries \
                 {PROTOCOL_VERSION:?} (a string) and {CLIENT_CAPABILITIES:?} (an object)"
            ),
        )
    };
    let Some(Value::String(version)) = version else {
        return Err(missing(PROTOCOL_VERSION));
    };
    let Some(Value::Object(capabilities)) = capabilities else {
        return Err(missing(CLIENT_CAPABILITIES));
    };
    let tasks_extension = capabilities
        .get("extensions")
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some_and(Value::is_object);
    Ok(Stamp {
        version: version.clone(),
        tasks_extension,
    })
}

/// The stateless-era version a stamp names: `-32022` with the supported
/// list for a version this server does not know (LIF-12), `-32602` for a
/// handshake-era version, which is only spoken after `initialize`.
pub(crate) fn version(stamp: &Stamp) -> Result<ProtocolVersion, RpcError> {
    let supported: Vec<&str> = ProtocolVersion::newest_first()
        .map(ProtocolVersion::as_str)
        .collect();
    match ProtocolVersion::parse(&stamp.version) {
        Some(version) if version.is_stateless() => Ok(version),
        Some(version) => Err(RpcError::new(
            INVALID_PARAMS,
            format!(
                "invalid params: {} is a handshake-era version, spoken after initialize; stamped requests \
                 name a stateless version ({})",
                version.as_str(),
                stateless_versions().join(", ")
            ),
        )),
        None => Err(RpcError::new(
            UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "Unsupported protocol version {:?}; this server supports {}",
                stamp.version,
                supported.join(", ")
            ),
        )
        .with_data(json!({"supported": supported, "requested": stamp.version}))),
    }
}

/// The stateless-era versions, newest first.
pub(crate) fn stateless_versions() -> Vec<&'static str> {
    ProtocolVersion::newest_first()
        .filter(|v| v.is_stateless())
        .map(ProtocolVersion::as_str)
        .collect()
}

/// The server's identity, as `initialize` and `_meta` give it.
pub(crate) fn server_info() -> Value {
    json!({"name": "reference-server", "version": env!("CARGO_PKG_VERSION")})
}

/// Completes a result for `version`: `resultType`, the server's identity
/// in `_meta`, as the version asks (RPC-14, LIF-10).
pub(crate) fn complete(version: ProtocolVersion, result: Value) -> Value {
    typed(version, result, "complete")
}

/// [`complete`] with another `resultType`: `"task"` for a `CreateTaskResult`
/// of the tasks extension.
pub(crate) fn typed(version: ProtocolVersion, mut result: Value, result_type: &str) -> Value {
    if let Value::Object(fields) = &mut result {
        if version.results_carry_result_type() {
            fields.insert("resultType".into(), result_type.into());
        }
        if version.results_carry_server_info() {
            let meta = fields
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert(SERVER_INFO.into(), server_info());
            }
        }
    }
    result
}

/// Adds the cache hints of a `CacheableResult` for `version`. The fixture
/// profile never changes while the server runs, but `ttlMs: 0` keeps
/// clients from relying on that; nothing in it is user-specific.
pub(crate) fn cacheable(version: ProtocolVersion, mut result: Value) -> Value {
    if version.results_carry_cache_hints() {
        if let Value::Object(fields) = &mut result {
            fields.insert("ttlMs".into(), 0.into());
            fields.insert("cacheScope".into(), "public".into());
        }
    }
    result
}

fn fields(params: Option<&Value>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(version: &str) -> Value {
        json!({"_meta": {PROTOCOL_VERSION: version, CLIENT_CAPABILITIES: {}}})
    }

    #[test]
    fn stamped_requests_and_discover_are_stateless() {
        assert!(is_stateless_request(
            "tools/list",
            Some(&stamped("2026-07-28"))
        ));
        assert!(is_stateless_request(
            "tools/list",
            Some(&json!({"_meta": {CLIENT_CAPABILITIES: {}}}))
        ));
        assert!(is_stateless_request(DISCOVER, None));
        assert!(!is_stateless_request("tools/list", None));
        assert!(!is_stateless_request(
            "tools/call",
            Some(&json!({"_meta": {"progressToken": 1}}))
        ));
    }

    #[test]
    fn missing_fields_are_invalid_params() {
        for params in [
            None,
            Some(json!({})),
            Some(json!({"_meta": {CLIENT_CAPABILITIES: {}}})),
            Some(json!({"_meta": {PROTOCOL_VERSION: "2026-07-28"}})),
            Some(json!({"_meta": {PROTOCOL_VERSION: 2026, CLIENT_CAPABILITIES: {}}})),
            Some(json!({"_meta": {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: []}})),
        ] {
            let error = stamp("tools/list", params.as_ref())
                .err()
                .unwrap_or_else(|| panic!("{params:?} accepted"));
            assert_eq!(error.code, INVALID_PARAMS, "{params:?}");
        }
    }

    #[test]
    fn the_tasks_extension_is_declared_as_an_object_per_request() {
        let declared = |capabilities: Value| {
            let params = json!({"_meta": {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: capabilities}});
            stamp("tools/call", Some(&params))
                .expect("stamp")
                .tasks_extension
        };
        assert!(declared(json!({"extensions": {TASKS_EXTENSION: {}}})));
        assert!(!declared(json!({})));
        assert!(!declared(json!({"extensions": {}})));
        assert!(!declared(json!({"extensions": {TASKS_EXTENSION: true}})));
        assert!(!declared(json!({"tasks": {}})));
    }

    #[test]
    fn versions_are_checked_with_the_supported_list() {
        let version_of = |v: &str| version(&stamp("x", Some(&stamped(v))).expect("stamp"));
        assert_eq!(
            version_of("2026-07-28").ok(),
            Some(ProtocolVersion::V2026_07_28)
        );
        let unknown = version_of("1900-01-01").expect_err("refused");
        assert_eq!(unknown.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            unknown.data,
            Some(json!({
                "supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
                "requested": "1900-01-01",
            }))
        );
        assert_eq!(
            version_of("2025-11-25").err().map(|e| e.code),
            Some(INVALID_PARAMS)
        );
    }

    #[test]
    fn results_are_completed_only_in_the_stateless_era() {
        let done = complete(ProtocolVersion::V2026_07_28, json!({"content": []}));
        assert_eq!(done["resultType"], "complete");
        assert_eq!(done["_meta"][SERVER_INFO]["name"], "reference-server");
        let legacy = complete(ProtocolVersion::V2025_11_25, json!({"content": []}));
        assert_eq!(legacy, json!({"content": []}));
    }
}
