//! Protocol versions and everything that differs between them.
//!
//! All version-dependent behaviour is decided here, as named predicates, so
//! the rest of the server asks "does this version have X" instead of
//! comparing version strings. There are two eras: the handshake era
//! (2024-11-05 … 2025-11-25), where `initialize` negotiates one version for
//! a session, and the stateless era (2026-07-28), where every request names
//! its version in `_meta` and there is no session at all.

/// A protocol version this server implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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
    /// Every supported version, oldest first.
    pub const ALL: [Self; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    /// The newest handshake-era version: what `initialize` offers when the
    /// client's version is unknown (LIF-06).
    pub const LATEST: Self = Self::V2025_11_25;

    /// The version string used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// The version a wire string names, if this server implements it.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// Every version, newest first: `server/discover`'s `supportedVersions`
    /// and the `supported` list of `-32022` (LIF-11, LIF-12).
    pub fn newest_first() -> impl Iterator<Item = Self> {
        Self::ALL.into_iter().rev()
    }

    /// What `initialize` answers: the client's version if it is a
    /// handshake-era version `transport` carries, otherwise [`Self::LATEST`]
    /// (LIF-06).
    pub fn negotiate(requested: &str, transport: Transport) -> Self {
        Self::parse(requested)
            .filter(|v| v.has_handshake() && v.carried_by(transport))
            .unwrap_or(Self::LATEST)
    }

    /// Whether this version can be spoken over `transport`.
    pub fn carried_by(self, transport: Transport) -> bool {
        match transport {
            Transport::Stdio => true,
            Transport::StreamableHttp => self.has_streamable_http(),
        }
    }

    // The two eras.

    /// Whether requests carry their version and client capabilities in
    /// `_meta` instead of a session negotiating them (2026-07-28; LIF-10).
    pub fn is_stateless(self) -> bool {
        self >= Self::V2026_07_28
    }

    /// Whether a session starts with `initialize` (LIF-01 … LIF-09).
    pub fn has_handshake(self) -> bool {
        !self.is_stateless()
    }

    // Messages.

    /// Whether `ping` exists (removed in 2026-07-28, where it is an unknown
    /// method; PING-03).
    pub fn has_ping(self) -> bool {
        self.has_handshake()
    }

    /// Whether `notifications/progress` may carry `message` (added in 2025-03-26).
    pub fn progress_has_message(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// Whether invalid tool arguments are reported as an `isError` tool
    /// result (2025-11-25 on) rather than a `-32602` protocol error.
    pub fn input_errors_are_tool_results(self) -> bool {
        self >= Self::V2025_11_25
    }

    /// Whether every result carries `resultType` (2026-07-28; RPC-14).
    pub fn results_carry_result_type(self) -> bool {
        self.is_stateless()
    }

    /// Whether every result names the server in
    /// `_meta["io.modelcontextprotocol/serverInfo"]` (2026-07-28, SHOULD;
    /// LIF-10), there being no `initialize` result to carry it.
    pub fn results_carry_server_info(self) -> bool {
        self.is_stateless()
    }

    /// Whether list and discovery results carry the cache hints `ttlMs` and
    /// `cacheScope` (2026-07-28's `CacheableResult`).
    pub fn results_carry_cache_hints(self) -> bool {
        self.is_stateless()
    }

    // Tasks.

    /// Whether tasks are part of the core protocol: the experimental tasks of
    /// 2025-11-25, with the `tasks` capability, `params.task` on `tools/call`,
    /// tools' `execution.taskSupport`, and `tasks/get`, `tasks/result`,
    /// `tasks/list` and `tasks/cancel` (TSK-01 … TSK-06).
    pub fn has_core_tasks(self) -> bool {
        self >= Self::V2025_11_25 && self.has_handshake()
    }

    /// Whether tasks come as the `io.modelcontextprotocol/tasks` extension,
    /// which a client declares on each request (2026-07-28; SEP-2663, TSK-05):
    /// `tasks/get`, `tasks/update` and `tasks/cancel`, no `tasks/result` and
    /// no `tasks/list`, and `params.task` is ignored.
    pub fn has_tasks_extension(self) -> bool {
        self.is_stateless()
    }

    /// Whether the version has tasks in either form.
    pub fn has_tasks(self) -> bool {
        self.has_core_tasks() || self.has_tasks_extension()
    }

    /// Whether tools carry `annotations` such as `readOnlyHint` (2025-03-26 on).
    pub fn has_tool_annotations(self) -> bool {
        self >= Self::V2025_03_26
    }

    // Streamable HTTP.

    /// Whether the version defines Streamable HTTP (2025-03-26 on; 2024-11-05
    /// had the older HTTP+SSE transport, which this server does not offer).
    pub fn has_streamable_http(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// Whether an HTTP client sends `MCP-Protocol-Version` on every request
    /// (2025-06-18 on; HTTP-18, HTTP-19).
    pub fn has_version_header(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// Whether HTTP clients get an `Mcp-Session-Id` and must send it back
    /// (2025-03-26 … 2025-11-25; HTTP-16). 2026-07-28 has no sessions.
    pub fn http_has_sessions(self) -> bool {
        self.has_streamable_http() && self.has_handshake()
    }

    /// Whether HTTP requests mirror their method and name into `Mcp-Method`
    /// and `Mcp-Name`, which the server must check (2026-07-28; HTTP-19).
    pub fn http_mirrors_method_and_name(self) -> bool {
        self.is_stateless()
    }

    /// Whether closing a request's HTTP response stream cancels the request
    /// (2026-07-28; HTTP-11). Before, it must not (HTTP-10), and the client
    /// POSTs `notifications/cancelled` instead (HTTP-17).
    pub fn http_stream_close_cancels(self) -> bool {
        self.is_stateless()
    }

    /// Whether HTTP errors carry their own statuses: 400 for malformed
    /// `_meta`, header mismatches and unsupported versions, 404 for unknown
    /// methods (2026-07-28; LIF-10, LIF-12, HTTP-19, RPC-09). Before, JSON-RPC
    /// errors travel in an ordinary 200 response.
    pub fn http_errors_have_statuses(self) -> bool {
        self.is_stateless()
    }
}

/// The transports a version may be spoken over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Newline-delimited JSON over the process's stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    StreamableHttp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_handshake_versions_and_falls_back_to_latest() {
        for v in ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.has_handshake())
        {
            assert_eq!(ProtocolVersion::negotiate(v.as_str(), Transport::Stdio), v);
        }
        for unknown in ["1900-01-01", "2026-07-28"] {
            assert_eq!(
                ProtocolVersion::negotiate(unknown, Transport::Stdio),
                ProtocolVersion::LATEST,
                "{unknown}: initialize only negotiates handshake-era versions"
            );
        }
    }

    #[test]
    fn http_does_not_offer_the_version_without_streamable_http() {
        assert_eq!(
            ProtocolVersion::negotiate("2024-11-05", Transport::StreamableHttp),
            ProtocolVersion::LATEST
        );
        assert_eq!(
            ProtocolVersion::negotiate("2025-03-26", Transport::StreamableHttp),
            ProtocolVersion::V2025_03_26
        );
    }

    #[test]
    fn the_eras_split_where_the_specification_does() {
        let stateless: Vec<_> = ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.is_stateless())
            .collect();
        assert_eq!(stateless, [ProtocolVersion::V2026_07_28]);
        let sessions: Vec<_> = ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.http_has_sessions())
            .map(ProtocolVersion::as_str)
            .collect();
        assert_eq!(sessions, ["2025-03-26", "2025-06-18", "2025-11-25"]);
        assert_eq!(
            ProtocolVersion::newest_first().next(),
            Some(ProtocolVersion::V2026_07_28)
        );
    }

    #[test]
    fn tasks_are_core_in_2025_11_25_and_an_extension_after() {
        let core: Vec<_> = ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.has_core_tasks())
            .collect();
        assert_eq!(core, [ProtocolVersion::V2025_11_25]);
        let extension: Vec<_> = ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.has_tasks_extension())
            .collect();
        assert_eq!(extension, [ProtocolVersion::V2026_07_28]);
        assert!(!ProtocolVersion::V2025_06_18.has_tasks());
    }
}
