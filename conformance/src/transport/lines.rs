//! Reading newline-framed input without trusting it: a line longer than the limit is reported
//! once and its bytes are discarded as they stream by, so a peer that never sends a newline
//! cannot make the harness buffer without bound.

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder};

/// What a line reader hands on.
#[derive(Debug, PartialEq, Eq)]
pub enum Chunk {
    /// One line, without its newline (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line longer than the limit; its bytes were discarded.
    Overlong,
    /// The start of a line arrived and its end has not (yet): the peer is writing. Reported
    /// once per line.
    Partial,
    /// What came after the last newline when the input ended: a last line without its
    /// newline (a writer that exited mid-write leaves one).
    Unterminated(Vec<u8>),
}

/// Reads `\n`-terminated lines, handing each to `sink`; lines over `max` bytes are discarded
/// as they stream by. Stops at end of file, on a read error, or when `sink` returns false. A
/// last line without a newline is delivered at end of file.
pub async fn read_lines<R, F, Fut>(mut reader: R, max: usize, mut sink: F)
where
    R: AsyncRead + Unpin,
    F: FnMut(Chunk) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut codec = AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), vec![], max);
    let mut buf = BytesMut::with_capacity(8192);
    let mut partial_told = false;
    loop {
        loop {
            let item = match codec.decode(&mut buf) {
                Ok(Some(line)) => {
                    let mut line = line.to_vec();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    Chunk::Line(line)
                }
                Ok(None) => break,
                Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => Chunk::Overlong,
                Err(AnyDelimiterCodecError::Io(_)) => return,
            };
            partial_told = false;
            if !sink(item).await {
                return;
            }
        }
        if !buf.is_empty() && !partial_told {
            partial_told = true;
            if !sink(Chunk::Partial).await {
                return;
            }
        }
        buf.reserve(8192);
        match reader.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    if let Ok(Some(rest)) = codec.decode_eof(&mut buf) {
        if !rest.is_empty() {
            sink(Chunk::Unterminated(rest.to_vec())).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn chunks(input: &[u8], max: usize) -> Vec<Chunk> {
        let mut out = vec![];
        read_lines(input, max, |c| {
            out.push(c);
            async { true }
        })
        .await;
        out
    }

    #[tokio::test]
    async fn lines_overlong_and_a_last_line_without_newline() {
        let got = chunks(b"a\r\nbbbbbbbbbb\nc\nd", 4).await;
        assert_eq!(
            got,
            [
                Chunk::Line(b"a".to_vec()),
                Chunk::Overlong,
                Chunk::Line(b"c".to_vec()),
                Chunk::Partial,
                Chunk::Unterminated(b"d".to_vec()),
            ]
        );
    }
}
