//! Newline framing with a hard upper bound on line length.
//!
//! stdio MCP is one JSON message per line. A peer that never sends a newline
//! must not make us buffer without limit, so every reader uses this codec:
//! a line longer than [`MAX_LINE_BYTES`] yields one error and the rest of it
//! is discarded up to the next newline. [`LineReader`] drives the codec by
//! hand because a framed stream stops after its first decoding error, while
//! a server must keep reading.

use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::bytes::BytesMut;
use tokio_util::codec::{Decoder, LinesCodec, LinesCodecError};

/// Longest accepted line in bytes, excluding the newline (4 MiB).
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

const READ_CHUNK: usize = 8 * 1024;

/// A line codec bounded by [`MAX_LINE_BYTES`]; strips a trailing `\r`.
pub fn line_codec() -> LinesCodec {
    LinesCodec::new_with_max_length(MAX_LINE_BYTES)
}

/// What the single writer task of a peer is given: a line to write, or the end of output.
pub enum Outgoing {
    /// One message, without its newline.
    Line(String),
    /// Flush what came before and stop.
    End,
}

/// Writes the lines queued on `rx` until [`Outgoing::End`] or until every sender is gone.
/// Whatever is queued at once goes out in one write and one flush, so a burst of messages
/// costs one system call, not one each. A failed write ends it with that error.
pub async fn write_lines<W: AsyncWrite + Unpin>(
    writer: &mut W,
    rx: &mut mpsc::Receiver<Outgoing>,
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(READ_CHUNK);
    let mut end = false;
    while !end {
        let Some(first) = rx.recv().await else {
            break;
        };
        let mut next = Some(first);
        while let Some(item) = next {
            match item {
                Outgoing::Line(line) => {
                    buf.extend_from_slice(line.as_bytes());
                    buf.push(b'\n');
                }
                Outgoing::End => end = true,
            }
            next = if end { None } else { rx.try_recv().ok() };
        }
        writer.write_all(&buf).await?;
        writer.flush().await?;
        buf.clear();
    }
    Ok(())
}

/// A line that could not be delivered; reading may continue after it.
#[derive(Debug)]
pub enum LineError {
    /// Longer than [`MAX_LINE_BYTES`]; it has been (or is being) discarded.
    TooLong,
    /// Not valid UTF-8; the line has been discarded.
    NotUtf8,
    /// Reading failed; nothing more will come.
    Io(io::Error),
}

/// Reads bounded lines from a byte stream.
pub struct LineReader<R> {
    reader: R,
    codec: LinesCodec,
    buf: BytesMut,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader of the lines of `reader`.
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            codec: line_codec(),
            buf: BytesMut::with_capacity(READ_CHUNK),
            eof: false,
        }
    }

    /// The next line without its newline; `None` at end of input.
    ///
    /// Cancel-safe: dropping the future loses no input.
    pub async fn next_line(&mut self) -> Option<Result<String, LineError>> {
        loop {
            let decoded = if self.eof {
                self.codec.decode_eof(&mut self.buf)
            } else {
                self.codec.decode(&mut self.buf)
            };
            match decoded {
                Ok(Some(line)) => return Some(Ok(line)),
                Ok(None) if self.eof => return None,
                Ok(None) => {}
                Err(LinesCodecError::MaxLineLengthExceeded) => {
                    return Some(Err(LineError::TooLong))
                }
                Err(LinesCodecError::Io(_)) => return Some(Err(LineError::NotUtf8)),
            }
            self.buf.reserve(READ_CHUNK);
            match self.reader.read_buf(&mut self.buf).await {
                Ok(0) => self.eof = true,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Nothing more can be read: a fresh codec forgets the scan position it
                    // kept into the discarded buffer.
                    self.eof = true;
                    self.buf.clear();
                    self.codec = line_codec();
                    return Some(Err(LineError::Io(e)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn overlong_line_is_reported_once_and_reading_continues() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.extend_from_slice(b"\nnext\r\n\xff\nlast");
        let mut lines = LineReader::new(&input[..]);
        assert!(matches!(
            lines.next_line().await,
            Some(Err(LineError::TooLong))
        ));
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "next");
        assert!(matches!(
            lines.next_line().await,
            Some(Err(LineError::NotUtf8))
        ));
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "last");
        assert!(lines.next_line().await.is_none());
    }
}
