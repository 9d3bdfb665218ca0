//! How the server reaches its stdin and stdout.
//!
//! By default it uses tokio's own `stdin()` and `stdout()`. They are portable,
//! and they leave the inherited descriptors exactly as the client created
//! them: the file status flags of a pipe's open file description are shared
//! with the client and with every sibling that inherited it, so a server must
//! not switch them to non-blocking mode (a SIGKILL would never switch them
//! back). The price is that each read and each write runs as a blocking call
//! on tokio's blocking pool, a few thread hand-offs per message. One hand-off
//! per message is saved by [`LineStdout`], which skips tokio's per-flush hop.
//!
//! [`StdioMode::FastPipes`] (`--fast-pipes`, Linux only) avoids the hand-offs
//! without touching the shared flags: it opens `/proc/self/fd/0` and
//! `/proc/self/fd/1` again. For a pipe that yields a *new* open file
//! description of the same pipe, private to this process, which may then be
//! non-blocking and polled by the event loop directly. Anything else (a
//! socketpair, a terminal, a file, no `/proc`) falls back to the default. It
//! is opt-in because it rests on Linux's `/proc` semantics; the README's
//! "Speed" section says what it saves.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};

/// How stdin and stdout are driven.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StdioMode {
    /// tokio's portable `stdin()`/`stdout()` (blocking calls on its pool).
    #[default]
    Portable,
    /// Private non-blocking reopenings of stdin and stdout when both are
    /// pipes (Linux); otherwise the same as `Portable`.
    FastPipes,
}

/// stdin as an async reader.
pub type Input = Pin<Box<dyn AsyncRead + Send>>;
/// stdout as an async writer.
pub type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// Opens stdin and stdout in `mode`. Must run inside the runtime.
pub(crate) fn open(mode: StdioMode) -> (Input, Output) {
    if mode == StdioMode::FastPipes {
        match fast::open() {
            Ok(pipes) => return pipes,
            Err(e) => {
                eprintln!("reference-server: --fast-pipes unavailable ({e}); using portable stdio")
            }
        }
    }
    (
        Box::pin(tokio::io::stdin()),
        Box::pin(LineStdout(tokio::io::stdout())),
    )
}

/// tokio's `stdout()`, flushed for real only when it is shut down.
///
/// tokio hands each write to its blocking pool, and each flush as well, so a
/// flush after every message costs a second thread hand-off. It buys nothing
/// here: std's stdout, which tokio's wraps, is line-buffered, and the server
/// only ever writes whole lines, so the write itself already puts them in the
/// pipe. The next write still waits for the previous one to finish, and
/// `poll_shutdown` waits for the last one and flushes.
struct LineStdout(tokio::io::Stdout);

impl AsyncWrite for LineStdout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
}

#[cfg(target_os = "linux")]
mod fast {
    use super::{Input, Output};
    use std::fs::OpenOptions;
    use std::io;
    use std::os::unix::fs::OpenOptionsExt;
    use tokio::net::unix::pipe;

    pub(super) fn open() -> io::Result<(Input, Output)> {
        // O_NONBLOCK at open: opening a FIFO for reading must not wait for a
        // writer, and opening it for writing fails at once without a reader.
        let input = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/proc/self/fd/0")?;
        let output = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/proc/self/fd/1")?;
        // Both check that the file is a FIFO; the descriptions are ours alone.
        let input = pipe::Receiver::from_file(input)?;
        let output = pipe::Sender::from_file(output)?;
        Ok((Box::pin(input), Box::pin(output)))
    }
}

#[cfg(not(target_os = "linux"))]
mod fast {
    use super::{Input, Output};
    use std::io;

    pub(super) fn open() -> io::Result<(Input, Output)> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "reopening pipes through /proc needs Linux",
        ))
    }
}
