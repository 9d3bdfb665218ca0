//! Protocol versions and everything that differs between them, in one place.
//!
//! MCP has two eras. In the handshake era (2024-11-05 … 2025-11-25) a client opens with
//! `initialize`, either side may send requests, `ping` proves liveness, and a cancel is always
//! `notifications/cancelled`. In the stateless era (2026-07-28) there is no handshake and no
//! `ping`: a client may ask `server/discover`, stamps every request's `_meta` with the
//! protocol version and its capabilities, servers never send requests, and over Streamable
//! HTTP a cancel is closing the request's response stream. Every such difference is a named
//! predicate here, so the engine asks a question instead of comparing version strings.

use serde_json::{json, Value};

/// Every protocol version of the handshake era, oldest first.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Every protocol version a case may name, oldest first.
pub const KNOWN_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The version of the stateless era.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// The `_meta` key of the protocol version in the stateless era.
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of the client's capabilities in the stateless era.
pub const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of the client's name and version in the stateless era.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The `_meta` key of the server's name and version on a stateless-era result.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The error a stateless-era server answers a version it does not speak with (LIF-12).
pub const UNSUPPORTED_VERSION: i64 = -32022;
/// Error codes only a stateless-era server sends (HeaderMismatch, a missing client capability,
/// an unsupported version): a client that gets one knows its server is modern and must not
/// fall back to `initialize` (LIF-14, HTTP-20).
pub const MODERN_ERRORS: [i64; 3] = [-32020, -32021, UNSUPPORTED_VERSION];

/// The two ways MCP sessions work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` first; either side may send requests (≤2025-11-25).
    Handshake,
    /// Every request stands alone, stamped with its version (2026-07-28).
    Stateless,
}

/// A protocol version the harness knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// `2024-11-05`, the first: HTTP+SSE, no Streamable HTTP.
    V2024_11_05,
    /// `2025-03-26`: Streamable HTTP.
    V2025_03_26,
    /// `2025-06-18`.
    V2025_06_18,
    /// `2025-11-25`, the last of the handshake era.
    V2025_11_25,
    /// `2026-07-28`, the stateless era.
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every known version, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];

    /// The version a string names, if the harness knows it.
    pub fn parse(text: &str) -> Option<ProtocolVersion> {
        Self::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// The newest version of the handshake era: what a target that says nothing else is
    /// tested at, and what the harness plays where the stateless era has no handshake.
    pub const NEWEST_HANDSHAKE: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// The version string used on the wire.
    pub fn as_str(self) -> &'static str {
        KNOWN_VERSIONS[self as usize]
    }

    /// `versions` as messages list them: `2025-11-25, 2026-07-28`.
    pub fn joined(versions: &[ProtocolVersion]) -> String {
        let texts: Vec<&str> = versions.iter().map(|v| v.as_str()).collect();
        texts.join(", ")
    }

    /// Whether the version is of the stateless era (2026-07-28).
    pub fn is_stateless(self) -> bool {
        self.era() == Era::Stateless
    }

    /// The era the version belongs to.
    pub fn era(self) -> Era {
        if self >= ProtocolVersion::V2026_07_28 {
            Era::Stateless
        } else {
            Era::Handshake
        }
    }

    /// Whether a session opens with `initialize` and `notifications/initialized`.
    pub fn has_handshake(self) -> bool {
        self.era() == Era::Handshake
    }

    /// Whether tasks are part of the core protocol (2025-11-25, experimental): a
    /// `CreateTaskResult` keeps the call's progress token in use (PRG-10). In 2026-07-28 they
    /// moved into an extension without progress (PRG-11).
    pub fn has_core_tasks(self) -> bool {
        self == ProtocolVersion::V2025_11_25
    }

    /// Whether `ping` exists (it was removed in 2026-07-28).
    pub fn has_ping(self) -> bool {
        self.era() == Era::Handshake
    }

    /// Whether a server may send requests to its client (RPC-15 forbids it in 2026-07-28).
    pub fn servers_may_request(self) -> bool {
        self.era() == Era::Handshake
    }

    /// Whether requests carry the version and capabilities in `_meta` (LIF-10).
    pub fn stamps_requests(self) -> bool {
        self.era() == Era::Stateless
    }

    /// Whether the version runs over Streamable HTTP (from 2025-03-26; 2024-11-05 had the
    /// older HTTP+SSE transport, HTTP-21).
    pub fn has_streamable_http(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// Whether every HTTP request after `initialize` carries `MCP-Protocol-Version` (from
    /// 2025-06-18, HTTP-18; every request in 2026-07-28, HTTP-19).
    pub fn has_version_header(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Whether `notifications/progress` may carry `message` (added in 2025-03-26, PRG-05).
    pub fn progress_has_message(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// The cheap request a client sends to prove that a server read everything before it:
    /// `ping`, or `server/discover` where `ping` no longer exists.
    pub fn probe(self, id: &str) -> Value {
        let mut probe = if self.has_ping() {
            json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": {}})
        };
        self.stamp(&mut probe);
        probe
    }

    /// Adds the stateless era's `_meta` fields (version, capabilities, client info) to a
    /// well-formed request that lacks them; returns whether it did. Anything else, and every
    /// message of the handshake era, is left as it is, so cases can send malformed requests.
    pub fn stamp(self, message: &mut Value) -> bool {
        if !self.stamps_requests() {
            return false;
        }
        let Some(object) = message.as_object_mut() else {
            return false;
        };
        let is_request = object.get("method").is_some_and(Value::is_string)
            && object
                .get("id")
                .is_some_and(|id| id.is_string() || id.is_number());
        if !is_request {
            return false;
        }
        let params = object.entry("params").or_insert_with(|| json!({}));
        let Some(params) = params.as_object_mut() else {
            return false;
        };
        let meta = params.entry("_meta").or_insert_with(|| json!({}));
        let Some(meta) = meta.as_object_mut() else {
            return false;
        };
        if meta.contains_key(META_VERSION) {
            return false;
        }
        meta.insert(META_VERSION.into(), json!(self.as_str()));
        meta.entry(META_CAPABILITIES).or_insert_with(|| json!({}));
        meta.entry(META_CLIENT_INFO).or_insert_with(
            || json!({"name": "conformance", "version": env!("CARGO_PKG_VERSION")}),
        );
        true
    }

    /// Whether a request id may be used again once its request was answered: in 2026-07-28 an
    /// id only must not match a request still waiting for its response (RPC-03); up to
    /// 2025-11-25 it is never used twice in a session.
    pub fn ids_reusable_once_answered(self) -> bool {
        self.era() == Era::Stateless
    }

    /// Adds what a stateless-era result carries to a response that lacks it: `resultType`
    /// `"complete"` (RPC-14) and the server's name and version in `_meta` (LIF-10). Returns
    /// whether it did; errors, requests and every message of the handshake era are left as
    /// they are, so cases can send legacy-shaped results.
    pub fn stamp_result(self, message: &mut Value) -> bool {
        if !self.stamps_requests() {
            return false;
        }
        let Some(result) = message
            .as_object_mut()
            .filter(|m| !m.contains_key("method"))
            .and_then(|m| m.get_mut("result"))
            .and_then(Value::as_object_mut)
        else {
            return false;
        };
        if result.contains_key("resultType") {
            return false;
        }
        result.insert("resultType".into(), json!("complete"));
        let meta = result.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.entry(META_SERVER_INFO).or_insert_with(
                || json!({"name": "conformance", "version": env!("CARGO_PKG_VERSION")}),
            );
        }
        true
    }

    /// The HTTP status a server of this version answers a JSON-RPC error with: in 2026-07-28
    /// `400` for the era's own errors (HTTP-19, LIF-12) and `404` for an unknown method
    /// (RPC-09); `200` otherwise, and always up to 2025-11-25.
    pub fn error_status(self, code: i64) -> u16 {
        match code {
            _ if self.era() == Era::Handshake => 200,
            c if MODERN_ERRORS.contains(&c) => 400,
            -32601 => 404,
            _ => 200,
        }
    }

    /// How a cancel is carried on a transport: `true` when it is closing the request's own
    /// response channel (2026-07-28 over Streamable HTTP, CAN-12), `false` when it is a
    /// `notifications/cancelled` message.
    pub fn cancel_closes_channel(self, transport_has_channels: bool) -> bool {
        self.era() == Era::Stateless && transport_has_channels
    }
}

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_eras() {
        for (v, text) in ProtocolVersion::ALL.into_iter().zip(KNOWN_VERSIONS) {
            assert_eq!(ProtocolVersion::parse(text), Some(v));
            assert_eq!(v.as_str(), text);
        }
        assert_eq!(ProtocolVersion::parse("1900-01-01"), None);
        assert_eq!(
            ProtocolVersion::NEWEST_HANDSHAKE.as_str(),
            HANDSHAKE_VERSIONS[3]
        );
        assert!(ProtocolVersion::V2026_07_28.is_stateless());
        assert!(!ProtocolVersion::NEWEST_HANDSHAKE.is_stateless());
        assert_eq!(
            ProtocolVersion::joined(&[ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28]),
            "2025-11-25, 2026-07-28"
        );
        assert_eq!(ProtocolVersion::joined(&[]), "");
        assert!(ProtocolVersion::V2025_11_25.has_handshake());
        assert!(!ProtocolVersion::V2026_07_28.has_ping());
        assert!(!ProtocolVersion::V2024_11_05.progress_has_message());
        assert!(!ProtocolVersion::V2024_11_05.has_streamable_http());
        assert!(ProtocolVersion::V2025_03_26.has_streamable_http());
        assert!(!ProtocolVersion::V2025_03_26.has_version_header());
        assert!(ProtocolVersion::V2025_11_25.has_version_header());
        assert!(ProtocolVersion::V2026_07_28.cancel_closes_channel(true));
        assert!(!ProtocolVersion::V2026_07_28.cancel_closes_channel(false));
        assert!(!ProtocolVersion::V2025_11_25.cancel_closes_channel(true));
        assert!(ProtocolVersion::V2026_07_28.ids_reusable_once_answered());
        assert!(!ProtocolVersion::V2025_11_25.ids_reusable_once_answered());
        assert_eq!(ProtocolVersion::V2026_07_28.error_status(-32022), 400);
        assert_eq!(ProtocolVersion::V2026_07_28.error_status(-32601), 404);
        assert_eq!(ProtocolVersion::V2026_07_28.error_status(-32603), 200);
        assert_eq!(ProtocolVersion::V2025_11_25.error_status(-32022), 200);
    }

    #[test]
    fn results_are_stamped_in_the_stateless_era_only() {
        let v = ProtocolVersion::V2026_07_28;
        let mut result = json!({"jsonrpc":"2.0","id":1,"result":{"content":[]}});
        assert!(v.stamp_result(&mut result));
        assert_eq!(result["result"]["resultType"], "complete");
        assert_eq!(
            result["result"]["_meta"][META_SERVER_INFO]["name"],
            "conformance"
        );
        assert!(!v.stamp_result(&mut result), "stamped once");
        let mut own = json!({"jsonrpc":"2.0","id":2,"result":{"resultType":"bogus"}});
        assert!(!v.stamp_result(&mut own), "a case's own resultType stays");
        let mut error = json!({"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}});
        assert!(!v.stamp_result(&mut error));
        let mut legacy = json!({"jsonrpc":"2.0","id":4,"result":{}});
        assert!(!ProtocolVersion::V2025_11_25.stamp_result(&mut legacy));
    }

    #[test]
    fn probes_and_stamps() {
        let ping = ProtocolVersion::V2025_11_25.probe("b");
        assert_eq!(ping, json!({"jsonrpc": "2.0", "id": "b", "method": "ping"}));
        let discover = ProtocolVersion::V2026_07_28.probe("b");
        assert_eq!(discover["method"], "server/discover");
        assert_eq!(discover["params"]["_meta"][META_VERSION], "2026-07-28");

        let v = ProtocolVersion::V2026_07_28;
        let mut call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p"}}});
        assert!(v.stamp(&mut call));
        assert_eq!(call["params"]["_meta"]["progressToken"], "p");
        assert_eq!(call["params"]["_meta"][META_CAPABILITIES], json!({}));
        assert!(!v.stamp(&mut call), "stamped once");
        let mut notification =
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
        assert!(!v.stamp(&mut notification));
        let mut malformed = json!({"jsonrpc":"2.0","id":null,"method":"tools/list"});
        assert!(!v.stamp(&mut malformed));
        let mut own = json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{(META_VERSION):"1900-01-01"}}});
        assert!(!v.stamp(&mut own), "a case's own version stays");
        assert!(!ProtocolVersion::V2025_11_25
            .stamp(&mut json!({"jsonrpc":"2.0","id":3,"method":"ping"})));
    }
}
