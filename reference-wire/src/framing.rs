//! Newline framing with a hard upper bound on line length.
//!
//! stdio MCP is one JSON message per line. A peer that never sends a newline
//! must not make us buffer without limit, so every reader uses this codec:
//! a line longer than [`MAX_LINE_BYTES`] yields one error and the rest of it
//! is discarded up to the next newline.

use tokio_util::codec::LinesCodec;

/// Longest accepted line in bytes, excluding the newline (4 MiB).
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// A line codec bounded by [`MAX_LINE_BYTES`]; strips a trailing `\r`.
pub fn line_codec() -> LinesCodec {
    LinesCodec::new_with_max_length(MAX_LINE_BYTES)
}
