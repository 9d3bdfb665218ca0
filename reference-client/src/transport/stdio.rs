//! The stdio transport: one JSON-RPC message per line over a pipe pair, usually the stdin
//! and stdout of a server child process.

use super::{BoxFuture, Disconnected, Outgoing, Transport};
use crate::process::ServerProcess;
use reference_wire::{write_lines, LineError, LineReader, Outgoing as Line};
use serde_json::Value;
use std::ffi::OsString;
use std::io;
use std::process::ExitStatus;
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

type Reader = Box<dyn AsyncRead + Send + Unpin>;

/// Messages as lines over a reader and a writer, with the server process when there is one.
pub struct StdioTransport {
    lines: mpsc::UnboundedSender<Line>,
    reader: tokio::sync::Mutex<LineReader<Reader>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    process: tokio::sync::Mutex<Option<ServerProcess>>,
}

impl StdioTransport {
    /// Starts `argv[0]` with the remaining arguments (no shell); stderr is inherited.
    pub fn spawn(argv: &[OsString]) -> io::Result<Self> {
        let (process, stdin, stdout) = ServerProcess::spawn(argv)?;
        let transport = Self::new(stdout, stdin);
        *transport.process.try_lock().expect("not shared yet") = Some(process);
        Ok(transport)
    }

    /// Messages over an existing pipe pair; closing the transport closes `writer`.
    pub fn new<R, W>(reader: R, writer: W) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (lines, rx) = mpsc::unbounded_channel();
        Self {
            lines,
            reader: tokio::sync::Mutex::new(LineReader::new(Box::new(reader) as Reader)),
            writer: Mutex::new(Some(tokio::spawn(write_loop(writer, rx)))),
            process: tokio::sync::Mutex::new(None),
        }
    }
}

impl Transport for StdioTransport {
    fn send(&self, message: Outgoing) -> Result<(), Disconnected> {
        // Compact JSON never contains a raw newline, so it is exactly one line.
        self.lines
            .send(Line::Line(message.message.to_string()))
            .map_err(|_| Disconnected)
    }

    fn receive(&self) -> BoxFuture<'_, Option<Value>> {
        Box::pin(async move {
            let mut reader = self.reader.lock().await;
            while let Some(next) = reader.next_line().await {
                let line = match next {
                    Ok(line) => line,
                    Err(LineError::Io(e)) => {
                        eprintln!("reference-client: cannot read from the server: {e}");
                        return None;
                    }
                    Err(e) => {
                        eprintln!(
                            "reference-client: skipped an unreadable line from the server ({e:?})"
                        );
                        continue;
                    }
                };
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str(&line) {
                    Ok(value) => return Some(value),
                    Err(e) => eprintln!(
                        "reference-client: ignored a line from the server that is not JSON ({e})"
                    ),
                }
            }
            None
        })
    }

    fn close(&self, grace: Duration) -> BoxFuture<'_, io::Result<Option<ExitStatus>>> {
        Box::pin(async move {
            let _ = self.lines.send(Line::End);
            let writer = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(writer) = writer {
                let _ = writer.await;
            }
            match self.process.lock().await.take() {
                Some(process) => Ok(Some(process.shutdown(grace).await?)),
                None => Ok(None),
            }
        })
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.get_mut().unwrap_or_else(|p| p.into_inner()) {
            writer.abort();
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(mut writer: W, mut rx: mpsc::UnboundedReceiver<Line>) {
    if let Err(e) = write_lines(&mut writer, &mut rx).await {
        eprintln!("reference-client: cannot write to the server: {e}; it has probably exited");
        return;
    }
    // Closing the writer closes the server's stdin.
    let _ = writer.shutdown().await;
}
