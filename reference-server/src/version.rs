//! Protocol versions and everything that differs between them.
//!
//! All version-dependent behaviour is decided here, so adding an era (for
//! example the stateless 2026-07-28 protocol, which replaces the handshake
//! with per-request metadata) means extending this enum rather than hunting
//! for string comparisons across the server.

/// A protocol version this server implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProtocolVersion {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
}

impl ProtocolVersion {
    /// Every supported version, oldest first.
    pub const ALL: [Self; 4] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
    ];

    /// The newest supported version, offered when the client's is unknown.
    pub const LATEST: Self = Self::V2025_11_25;

    /// The version string used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
        }
    }

    /// The version a wire string names, if this server implements it.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// The client's version if `transport` carries it, otherwise the newest
    /// one (LIF-06).
    pub fn negotiate(requested: &str, transport: Transport) -> Self {
        Self::parse(requested)
            .filter(|v| v.carried_by(transport))
            .unwrap_or(Self::LATEST)
    }

    /// Whether this version can be spoken over `transport`.
    pub fn carried_by(self, transport: Transport) -> bool {
        match transport {
            Transport::Stdio => true,
            Transport::StreamableHttp => self.has_streamable_http(),
        }
    }

    /// Whether the version defines Streamable HTTP (2025-03-26 on; 2024-11-05
    /// had the older HTTP+SSE transport, which this server does not offer).
    pub fn has_streamable_http(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// Whether an HTTP client sends `MCP-Protocol-Version` on every request
    /// after the handshake (2025-06-18 on; HTTP-18).
    pub fn has_version_header(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// Whether `notifications/progress` may carry `message` (added in 2025-03-26).
    pub fn progress_has_message(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// Whether invalid tool arguments are reported as an `isError` tool
    /// result (2025-11-25) rather than a `-32602` protocol error.
    pub fn input_errors_are_tool_results(self) -> bool {
        self >= Self::V2025_11_25
    }
}

/// The transports a version may be spoken over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    StreamableHttp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_and_falls_back_to_latest() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::negotiate(v.as_str(), Transport::Stdio), v);
        }
        assert_eq!(
            ProtocolVersion::negotiate("1900-01-01", Transport::Stdio),
            ProtocolVersion::LATEST
        );
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
}
