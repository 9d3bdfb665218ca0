//! Reading newline-framed input without trusting it: a line longer than the limit is reported
//! once and its bytes are discarded as they stream by, so a peer that never sends a newline
//! cannot make the harness buffer without bound.

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder};

/// Reads `\n`-terminated lines, handing each to `sink` without its newline (and without a
/// trailing `\r`); lines over `max` bytes are discarded as they stream by and reported as
/// `Err(())`. Stops at end of file, on a read error, or when `sink` returns false. A last
/// line without a newline is delivered at end of file.
pub async fn read_lines<R, F, Fut>(mut reader: R, max: usize, mut sink: F)
where
    R: AsyncRead + Unpin,
    F: FnMut(Result<Vec<u8>, ()>) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut codec = AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), vec![], max);
    let mut buf = BytesMut::with_capacity(8192);
    loop {
        loop {
            let item = match codec.decode(&mut buf) {
                Ok(Some(line)) => {
                    let mut line = line.to_vec();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    Ok(line)
                }
                Ok(None) => break,
                Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => Err(()),
                Err(AnyDelimiterCodecError::Io(_)) => return,
            };
            if !sink(item).await {
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
            sink(Ok(rest.to_vec())).await;
        }
    }
}
