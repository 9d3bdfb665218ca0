//! When a response's bytes reached the harness, by the kernel's clock rather than the
//! harness's.
//!
//! Over Streamable HTTP every request has a connection of its own, and the proofs compare
//! arrival times across connections: a cancel counts as read a grace after its `202`, which
//! came on one connection, and progress on another is judged against that. The harness reads
//! each connection when its task gets a CPU, and on a busy machine the bytes of one connection
//! can wait in their socket for a second while another connection is read at once (a capture
//! of loopback traffic showed progress stamped 0.3 to 1.4 s after the server wrote it, and the
//! cancel's `202` 0.3 s after). Stamped when the harness got round to them, messages the
//! server wrote before it read the cancel came "after the proof", and a correct server was
//! warned on a loaded machine only. So each read from a
//! connection asks the kernel when the newest data on it arrived (`TCP_INFO`,
//! `tcpi_last_data_recv`) and keeps the answer ([`Arrivals`]), and a message is stamped with
//! it: never later than the harness read it, never earlier than its own bytes came. The
//! harness's own delays drop out; what the target (and anything between it and the harness)
//! did with the bytes stays in. Nothing holds the socket open: a stream the harness closes
//! (a cancel in 2026-07-28) is closed for the server at once.

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::net::TcpStream;
use tower_service::Service;

/// When the newest data on one connection had arrived, as the kernel said at the harness's
/// latest read from it.
#[derive(Debug, Clone, Default)]
pub struct Arrivals(Arc<Mutex<Option<Instant>>>);

impl Arrivals {
    /// Asks the kernel after a read from `stream`.
    fn record(&self, stream: &TcpStream) {
        if let Some(at) = last_data(stream) {
            *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(at);
        }
    }

    /// When the newest data read so far had arrived; `None` before a read, or where the
    /// kernel does not say.
    pub fn latest(&self) -> Option<Instant> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// When the newest data on `stream` arrived; `None` where the kernel does not say.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // getsockopt(2): the kernel's stamp has no safe std API.
fn last_data(stream: &TcpStream) -> Option<Instant> {
    use std::os::fd::AsRawFd;
    // SAFETY: `tcp_info` is a plain C struct, for which all zeroes is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: getsockopt(2) on the descriptor of a socket `stream` owns (and keeps open for
    // the call) writes at most `len` bytes into `info` and sets `len` to how many it wrote.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 || (len as usize) < std::mem::size_of::<libc::tcp_info>() {
        return None;
    }
    let ago = std::time::Duration::from_millis(u64::from(info.tcpi_last_data_recv));
    Instant::now().checked_sub(ago)
}

/// When the newest data on `stream` arrived; `None` where the kernel does not say.
#[cfg(not(target_os = "linux"))]
fn last_data(_stream: &TcpStream) -> Option<Instant> {
    None
}

/// The stamps of what one response carried: when the newest data on its connection had
/// arrived, in order (never before the previous stamp, nor before the request was sent), or
/// when the harness read it where the kernel does not say.
#[derive(Debug)]
pub(super) struct Clock {
    arrivals: Option<Arrivals>,
    floor: Instant,
}

impl Clock {
    /// The clock of a response to a request sent at `sent`.
    pub(super) fn new(arrivals: Option<Arrivals>, sent: Instant) -> Clock {
        Clock {
            arrivals,
            floor: sent,
        }
    }

    /// The stamp of what the harness is reading now.
    pub(super) fn stamp(&mut self) -> Instant {
        let now = Instant::now();
        let floor = self.floor.min(now);
        let at = self
            .arrivals
            .as_ref()
            .and_then(Arrivals::latest)
            .map_or(now, |t| t.clamp(floor, now));
        self.floor = at;
        at
    }

    /// The stamp of something the kernel has no time for (the end of a stream): now.
    pub(super) fn now(&mut self) -> Instant {
        let now = Instant::now().max(self.floor);
        self.floor = now;
        now
    }
}

/// The harness's connector: hyper-util's, with each connection's [`Arrivals`] put into the
/// extensions of its response.
#[derive(Clone)]
pub(super) struct StampingConnector(pub(super) HttpConnector);

type Failure = Box<dyn std::error::Error + Send + Sync>;

impl Service<Uri> for StampingConnector {
    type Response = Stamped;
    type Error = Failure;
    type Future = Pin<Box<dyn Future<Output = Result<Stamped, Failure>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        self.0.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.0.call(uri);
        Box::pin(async move {
            let io = connecting.await?;
            Ok(Stamped {
                io,
                arrivals: Arrivals::default(),
            })
        })
    }
}

/// A connection of the harness's, which asks the kernel after each read when the data came.
pub(super) struct Stamped {
    io: TokioIo<TcpStream>,
    arrivals: Arrivals,
}

impl Connection for Stamped {
    fn connected(&self) -> Connected {
        self.io.connected().extra(self.arrivals.clone())
    }
}

impl Read for Stamped {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            this.arrivals.record(this.io.inner());
        }
        read
    }
}

impl Write for Stamped {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Bytes that waited in the socket are stamped with when they came, not when read.
    #[tokio::test]
    async fn a_stamp_is_when_the_data_came_not_when_it_was_read() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sent = Instant::now();
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let arrivals = Arrivals::default();
        server.write_all(b"progress").await.unwrap();
        // The harness is busy elsewhere for a while: the bytes wait in the socket.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let mut buf = [0u8; 8];
        client.read_exact(&mut buf).await.unwrap();
        let read = Instant::now();
        arrivals.record(&client);
        let at = Clock::new(Some(arrivals), sent).stamp();
        assert!(at >= sent, "never before the request was sent");
        // The kernel's clock ticks in milliseconds (jiffies): generously within the wait.
        assert!(
            read.saturating_duration_since(at) >= Duration::from_millis(200),
            "stamped {:?} before it was read, after waiting 400 ms in the socket",
            read.saturating_duration_since(at)
        );
    }

    /// Without the kernel's word a message is stamped when read, and stamps never go back.
    #[test]
    fn without_arrivals_stamps_are_reads_in_order() {
        let sent = Instant::now();
        let mut clock = Clock::new(None, sent);
        let first = clock.stamp();
        let second = clock.now();
        let third = clock.stamp();
        assert!(sent <= first && first <= second && second <= third);
    }

    /// A kernel time older than the request (the connection's earlier data) is clamped to the
    /// request's sending, and a stamp never goes back past the previous one.
    #[test]
    fn stamps_are_clamped_between_the_floor_and_now() {
        let sent = Instant::now();
        let arrivals = Arrivals::default();
        *arrivals.0.lock().unwrap() = sent.checked_sub(Duration::from_secs(1));
        let mut clock = Clock::new(Some(arrivals.clone()), sent);
        assert_eq!(clock.stamp(), sent, "not before the request left");
        let later = clock.now();
        assert_eq!(clock.stamp(), later, "not before the previous stamp");
    }
}
