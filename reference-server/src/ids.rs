//! Unguessable identifiers: HTTP session ids and task ids.
//!
//! Both are bearer handles: whoever knows one reaches the session or the
//! task, so they come from the operating system's CSPRNG (HTTP-16;
//! tasks.mdx §Security Considerations; SEP-2663 §Security).

use std::fmt::Write as _;

/// 128 bits from the operating system's CSPRNG as 32 lowercase hex digits:
/// unguessable, and visible ASCII as HTTP-16 requires.
pub(crate) fn mint() -> String {
    let mut bytes = [0u8; 16];
    // Without an OS random source no id can be secured; that is fatal.
    getrandom::fill(&mut bytes).expect("the OS random number generator is unavailable");
    bytes.iter().fold(String::with_capacity(32), |mut id, b| {
        let _ = write!(id, "{b:02x}");
        id
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_32_hex_digits_and_differ() {
        let (a, b) = (mint(), mint());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
    }
}
