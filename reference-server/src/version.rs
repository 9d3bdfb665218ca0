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

    /// The client's version if supported, otherwise the newest one (LIF-06).
    pub fn negotiate(requested: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|v| v.as_str() == requested)
            .unwrap_or(Self::LATEST)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_and_falls_back_to_latest() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::negotiate(v.as_str()), v);
        }
        assert_eq!(
            ProtocolVersion::negotiate("1900-01-01"),
            ProtocolVersion::LATEST
        );
    }
}
