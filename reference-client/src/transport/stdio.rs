//! The stdio transport: one JSON-RPC message per line over a pipe pair, usually the stdin
//! and stdout of a server child process.
//!
//! Nothing a server does can hang it: writes are queued, never awaited by callers, and the
//! queue is bounded ([`QUEUED_MESSAGES`]: a server that leaves that many unread has stopped
//! reading, and the connection is given up); closing waits for queued lines at most the
//! shutdown grace; a server that exits while something
//! it started still holds its stdout ends the connection anyway; and unreadable lines are
//! logged through a [`Throttle`].

use super::{BoxFuture, Disconnected, Incoming, Outgoing, Transport};
use crate::log::{warn, Throttle};
use crate::process::ServerProcess;
use reference_wire::{write_lines, LineError, LineReader, Outgoing as Line, MAX_LINE_BYTES};
use std::ffi::OsString;
use std::io;
use std::process::ExitStatus;
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long stdout may stay silent after the server exited before the connection counts
/// as closed although something (a process the server started) still holds stdout open.
const QUIET_AFTER_EXIT: Duration = Duration::from_millis(500);

/// How many messages may wait for the server to read them; one more, and the server is
/// taken for one that stopped reading its input.
pub const QUEUED_MESSAGES: usize = 65_536;

type Reader = Box<dyn AsyncRead + Send + Unpin>;

/// Messages as lines over a reader and a writer, with the server process when there is one.
pub struct StdioTransport {
    lines: mpsc::Sender<Line>,
    reader: tokio::sync::Mutex<LineReader<Reader>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    process: tokio::sync::Mutex<Option<ServerProcess>>,
    exited: Option<watch::Receiver<Option<ExitStatus>>>,
    unreadable: Throttle,
    /// The queue was found full once (and that was said).
    full: std::sync::atomic::AtomicBool,
}

impl StdioTransport {
    /// Starts `argv[0]` with the remaining arguments (no shell); stderr is inherited.
    pub fn spawn(argv: &[OsString]) -> io::Result<Self> {
        let (process, stdin, stdout) = ServerProcess::spawn(argv)?;
        let mut transport = Self::new(stdout, stdin);
        transport.exited = Some(process.exit_watch());
        transport.process = tokio::sync::Mutex::new(Some(process));
        Ok(transport)
    }

    /// Messages over an existing pipe pair; closing the transport closes `writer`.
    pub fn new<R, W>(reader: R, writer: W) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (lines, rx) = mpsc::channel(QUEUED_MESSAGES);
        Self {
            lines,
            reader: tokio::sync::Mutex::new(LineReader::new(Box::new(reader) as Reader)),
            writer: Mutex::new(Some(tokio::spawn(write_loop(writer, rx)))),
            process: tokio::sync::Mutex::new(None),
            exited: None,
            unreadable: Throttle::new("unreadable lines from the server"),
            full: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Transport for StdioTransport {
    fn send(&self, message: Outgoing) -> Result<(), Disconnected> {
        // Compact JSON never contains a raw newline, so it is exactly one line.
        match self.lines.try_send(Line::Line(message.message.to_string())) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Disconnected),
            Err(mpsc::error::TrySendError::Full(_)) => {
                if !self.full.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    warn(&format!("the server has not read the last {QUEUED_MESSAGES} messages sent to it: it has stopped reading its input, so nothing more is sent"));
                }
                Err(Disconnected)
            }
        }
    }

    fn receive(&self) -> BoxFuture<'_, Option<Incoming>> {
        Box::pin(async move {
            let mut reader = self.reader.lock().await;
            loop {
                let next = match self.server_exited() {
                    false => {
                        tokio::select! {
                            next = reader.next_line() => next,
                            () = self.exit() => continue,
                        }
                    }
                    true => {
                        match tokio::time::timeout(QUIET_AFTER_EXIT, reader.next_line()).await {
                            Ok(next) => next,
                            Err(_) => {
                                warn("the server exited, but something it started still holds its stdout open; the connection is closed");
                                return None;
                            }
                        }
                    }
                };
                let line = match next? {
                    Ok(line) => line,
                    Err(LineError::Io(e)) => {
                        warn(&format!("cannot read from the server: {e}"));
                        return None;
                    }
                    Err(LineError::TooLong) => {
                        self.unreadable.report(|| {
                            format!(
                                "skipped a line from the server longer than {MAX_LINE_BYTES} bytes"
                            )
                        });
                        continue;
                    }
                    Err(LineError::NotUtf8) => {
                        self.unreadable.report(|| {
                            "skipped a line from the server that is not UTF-8".to_owned()
                        });
                        continue;
                    }
                };
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str(&line) {
                    Ok(value) => return Some(Incoming::Message(value)),
                    Err(e) => self.unreadable.report(|| {
                        format!(
                            "ignored a line from the server that is not JSON ({e}): {}",
                            excerpt(&line)
                        )
                    }),
                }
            }
        })
    }

    fn close(&self, grace: Duration) -> BoxFuture<'_, io::Result<Option<ExitStatus>>> {
        Box::pin(async move {
            // Step one of the ladder: flush what is queued and close stdin. A server that
            // does not read gets the grace, then its stdin is closed under the queue.
            let deadline = Instant::now() + grace;
            // A full queue gets no end marker: the grace below closes stdin under it.
            let _ = self.lines.try_send(Line::End);
            let writer = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(mut writer) = writer {
                if tokio::time::timeout_at(deadline, &mut writer)
                    .await
                    .is_err()
                {
                    warn(&format!(
                        "the server did not read its stdin for {grace:?}; closing it with messages still queued"
                    ));
                    writer.abort();
                    let _ = writer.await;
                }
            }
            match self.process.lock().await.take() {
                Some(process) => Ok(Some(process.shutdown(deadline, grace).await?)),
                None => Ok(None),
            }
        })
    }
}

impl StdioTransport {
    fn server_exited(&self) -> bool {
        self.exited
            .as_ref()
            .is_some_and(|exited| exited.borrow().is_some())
    }

    /// Resolves when the server process has exited; never without a process.
    async fn exit(&self) {
        match &self.exited {
            Some(exited) => {
                let mut exited = exited.clone();
                if exited.wait_for(Option::is_some).await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending().await,
        }
    }
}

/// The start of a line, for a log message.
fn excerpt(line: &str) -> String {
    const SHOWN: usize = 80;
    match line.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}…", &line[..cut]),
        None => format!("{line:?}"),
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.get_mut().unwrap_or_else(|p| p.into_inner()) {
            writer.abort();
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(mut writer: W, mut rx: mpsc::Receiver<Line>) {
    if let Err(e) = write_lines(&mut writer, &mut rx).await {
        warn(&format!(
            "cannot write to the server: {e}; it has probably exited"
        ));
        return;
    }
    // Closing the writer closes the server's stdin.
    let _ = writer.shutdown().await;
}
