//! Protocol versions this client speaks, and what differs between them.

/// The protocol version this client asks for by default.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Every protocol version this client speaks, oldest first.
pub const KNOWN_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Whether this client speaks `version`.
pub fn is_known(version: &str) -> bool {
    KNOWN_VERSIONS.contains(&version)
}

/// Whether `version` belongs to the stateless era (2026-07-28 and later): no handshake, no
/// sessions, every request stamped with its version.
pub fn is_stateless(version: &str) -> bool {
    version >= "2026-07-28"
}
