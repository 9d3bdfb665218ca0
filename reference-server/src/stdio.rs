//! stdin and stdout driven by the runtime's own event loop.
//!
//! Tokio's portable `stdin()`/`stdout()` hand every read and write to a
//! blocking thread, which costs two thread switches per message. When stdin
//! and stdout are pipes or sockets (as they are under an MCP client), we
//! instead put them in non-blocking mode and poll them directly; the
//! original file status flags are restored on drop. Anything else (a
//! terminal, a file) falls back to tokio's portable handles.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// stdin as an async reader.
pub(crate) fn stdin() -> Pin<Box<dyn AsyncRead + Send>> {
    #[cfg(unix)]
    if let Ok(pipe) = unix::Pipe::new(libc::STDIN_FILENO, tokio::io::Interest::READABLE) {
        return Box::pin(pipe);
    }
    Box::pin(tokio::io::stdin())
}

/// stdout as an async writer.
pub(crate) fn stdout() -> Pin<Box<dyn AsyncWrite + Send>> {
    #[cfg(unix)]
    if let Ok(pipe) = unix::Pipe::new(libc::STDOUT_FILENO, tokio::io::Interest::WRITABLE) {
        return Box::pin(pipe);
    }
    Box::pin(tokio::io::stdout())
}

#[cfg(unix)]
mod unix {
    use super::*;
    use std::os::fd::{AsRawFd, RawFd};
    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    /// A borrowed standard descriptor in non-blocking mode.
    struct Fd {
        fd: RawFd,
        original_flags: libc::c_int,
    }

    impl AsRawFd for Fd {
        fn as_raw_fd(&self) -> RawFd {
            self.fd
        }
    }

    impl Drop for Fd {
        fn drop(&mut self) {
            // SAFETY: fcntl on a descriptor we do not own only changes its
            // status flags back to what they were; it is never closed here.
            unsafe {
                libc::fcntl(self.fd, libc::F_SETFL, self.original_flags);
            }
        }
    }

    pub(crate) struct Pipe {
        inner: AsyncFd<Fd>,
    }

    fn check(result: libc::c_int) -> io::Result<libc::c_int> {
        if result < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(result)
        }
    }

    impl Pipe {
        /// Wraps standard descriptor `fd` if it is a pipe or a socket.
        /// Must be called on a runtime with I/O enabled.
        pub(crate) fn new(fd: RawFd, interest: Interest) -> io::Result<Self> {
            // SAFETY: fstat writes into the zeroed struct we pass; fcntl only
            // reads and sets status flags. `fd` is a standard descriptor that
            // nothing in this process closes, so it stays open and refers to
            // the same file description for the life of the registration.
            unsafe {
                let mut stat: libc::stat = std::mem::zeroed();
                check(libc::fstat(fd, &mut stat))?;
                let kind = stat.st_mode & libc::S_IFMT;
                if kind != libc::S_IFIFO && kind != libc::S_IFSOCK {
                    return Err(io::ErrorKind::Unsupported.into());
                }
                let original_flags = check(libc::fcntl(fd, libc::F_GETFL))?;
                check(libc::fcntl(
                    fd,
                    libc::F_SETFL,
                    original_flags | libc::O_NONBLOCK,
                ))?;
                // On failure the Fd is dropped, which restores the flags.
                let inner = AsyncFd::register_with_interest(Fd { fd, original_flags }, interest)?;
                Ok(Self { inner })
            }
        }
    }

    impl AsyncRead for Pipe {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            loop {
                let mut guard = ready!(self.inner.poll_read_ready(cx))?;
                let unfilled = buf.initialize_unfilled();
                let result = guard.try_io(|inner| {
                    // SAFETY: reads at most `unfilled.len()` bytes into it.
                    let n = unsafe {
                        libc::read(
                            inner.as_raw_fd(),
                            unfilled.as_mut_ptr().cast(),
                            unfilled.len(),
                        )
                    };
                    usize::try_from(n).map_err(|_| io::Error::last_os_error())
                });
                match result {
                    Ok(Ok(n)) => {
                        buf.advance(n);
                        return Poll::Ready(Ok(()));
                    }
                    Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                    Ok(Err(e)) => return Poll::Ready(Err(e)),
                    Err(_would_block) => {}
                }
            }
        }
    }

    impl AsyncWrite for Pipe {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            loop {
                let mut guard = ready!(self.inner.poll_write_ready(cx))?;
                let result = guard.try_io(|inner| {
                    // SAFETY: writes at most `data.len()` bytes from it.
                    let n =
                        unsafe { libc::write(inner.as_raw_fd(), data.as_ptr().cast(), data.len()) };
                    usize::try_from(n).map_err(|_| io::Error::last_os_error())
                });
                match result {
                    Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                    Ok(result) => return Poll::Ready(result),
                    Err(_would_block) => {}
                }
            }
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }
}
