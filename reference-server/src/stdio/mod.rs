//! The stdio transport: one session over newline-delimited JSON-RPC.
//!
//! Three futures share the work. The *reader* reads lines ahead of the
//! session, up to [`READ_AHEAD_BYTES`], so that it notices EOF even while
//! the session is held up. The *session* handles lines strictly in order
//! (this is what the ordering guarantee needs) and waits for room in the
//! output queue before each one: a client that stops reading stops the
//! server taking requests, instead of making it buffer replies without
//! limit. The *writer* drains the queue to stdout.
//!
//! Once input has ended (EOF, SIGTERM, or a failed write) the session is
//! over, and a stdout that accepts nothing for [`OUTPUT_STALL`] is
//! abandoned: a client that never reads cannot keep the process alive.

mod pipes;

pub(crate) use pipes::open;
pub use pipes::StdioMode;

use crate::outbox::{Out, Outbox, Route};
use crate::registry::Registry;
use crate::session::Session;
use crate::version::Transport;
use reference_wire::{
    error_response, LineError, LineReader, RpcError, INVALID_REQUEST, MAX_LINE_BYTES, PARSE_ERROR,
};
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// While this many bytes of output are queued, no further request is taken.
pub(crate) const OUTPUT_LIMIT: usize = 1024 * 1024;

/// Input read ahead of the session (on top of the line being read).
pub(crate) const READ_AHEAD_BYTES: usize = 4 * 1024 * 1024;

/// After input has ended, stdout is abandoned once it accepts nothing for this long.
pub(crate) const OUTPUT_STALL: Duration = Duration::from_secs(1);

/// At most this much queued output goes out in one write.
const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// A line read ahead, holding its share of the read-ahead budget.
struct ReadLine {
    line: Result<String, RpcError>,
    _budget: OwnedSemaphorePermit,
}

/// Serves one session until EOF, `shutdown`, or a stdout that is gone.
pub(crate) async fn serve<R, W>(
    reader: R,
    writer: W,
    verbose: bool,
    shutdown: &CancellationToken,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (outbox, output) = Outbox::new(OUTPUT_LIMIT);
    let registry = Arc::new(Registry::new(verbose));
    let session = Session::new(Arc::clone(&registry), Transport::Stdio, verbose);
    // Fired at EOF as well as at shutdown: from then on the session is over.
    let ended = shutdown.child_token();
    let (lines_tx, lines) = mpsc::unbounded_channel();
    let reading = read_ahead(reader, lines_tx, &ended);
    let handling = async {
        handle_lines(lines, session, &outbox, shutdown).await;
        let reason = if shutdown.is_cancelled() {
            "server shutting down"
        } else {
            "stdin closed"
        };
        registry.cancel_all(reason);
        outbox.end();
    };
    let writing = write_output(writer, output, &outbox, &ended, shutdown);
    let (read_result, (), write_result) = tokio::join!(reading, handling, writing);
    read_result.and(write_result)
}

/// Reads lines into `lines` until EOF or `ended`, at most
/// [`READ_AHEAD_BYTES`] ahead of the session; fires `ended` at EOF.
async fn read_ahead<R: AsyncRead + Unpin>(
    reader: R,
    lines: mpsc::UnboundedSender<ReadLine>,
    ended: &CancellationToken,
) -> io::Result<()> {
    let budget = Arc::new(Semaphore::new(READ_AHEAD_BYTES));
    let mut reader = LineReader::new(reader);
    let result = loop {
        let next = tokio::select! {
            biased;
            () = ended.cancelled() => break Ok(()),
            next = reader.next_line() => next,
        };
        let line = match next {
            None => break Ok(()),
            Some(Ok(line)) => Ok(line),
            Some(Err(LineError::TooLong)) => Err(RpcError::new(
                INVALID_REQUEST,
                format!(
                    "invalid request: line longer than {MAX_LINE_BYTES} bytes was discarded; send smaller messages"
                ),
            )),
            Some(Err(LineError::NotUtf8)) => Err(RpcError::new(
                PARSE_ERROR,
                "parse error: line is not valid utf-8; messages must be utf-8 json",
            )),
            Some(Err(LineError::Io(e))) => break Err(e),
        };
        let cost = line
            .as_ref()
            .map_or(1, |l| l.len() + 1)
            .min(READ_AHEAD_BYTES);
        let permits = u32::try_from(cost).unwrap_or(u32::MAX);
        let acquired = tokio::select! {
            biased;
            () = ended.cancelled() => break Ok(()),
            acquired = Arc::clone(&budget).acquire_many_owned(permits) => acquired,
        };
        let Ok(permit) = acquired else { break Ok(()) };
        let read = ReadLine {
            line,
            _budget: permit,
        };
        if lines.send(read).is_err() {
            break Ok(());
        }
    };
    ended.cancel();
    result
}

/// Hands lines to the session in order, each once the output queue has room.
async fn handle_lines(
    mut lines: mpsc::UnboundedReceiver<ReadLine>,
    mut session: Session,
    outbox: &Arc<Outbox>,
    shutdown: &CancellationToken,
) {
    let route = Route::shared(Arc::clone(outbox));
    loop {
        let next = tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            next = lines.recv() => next,
        };
        let Some(read) = next else { return };
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            () = outbox.room() => {}
        }
        match &read.line {
            Ok(line) => session.handle_line(line, &route),
            Err(unreadable) => route.notify(error_response(None, unreadable)),
        }
    }
}

/// Writes the queue to `writer` until its end. A failed write, or a stdout
/// stalled after `ended`, fires `shutdown`; a closed stdout is not an error.
async fn write_output<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut output: mpsc::UnboundedReceiver<Out>,
    outbox: &Outbox,
    ended: &CancellationToken,
    shutdown: &CancellationToken,
) -> io::Result<()> {
    let written = async {
        let mut batch = Vec::with_capacity(WRITE_BATCH_BYTES);
        let mut end = false;
        while !end {
            let Some(first) = output.recv().await else {
                break;
            };
            let mut next = Some(first);
            while let Some(item) = next {
                match item {
                    Out::Line(line) => {
                        batch.extend_from_slice(line.as_bytes());
                        batch.push(b'\n');
                    }
                    Out::End => end = true,
                }
                next = if end || batch.len() >= WRITE_BATCH_BYTES {
                    None
                } else {
                    output.try_recv().ok()
                };
            }
            unless_stalled(writer.write_all(&batch), ended).await?;
            outbox.written(batch.len());
            batch.clear();
        }
        unless_stalled(writer.shutdown(), ended).await
    };
    let result = written.await;
    if result.is_err() {
        // Nobody can read our output any more: end the session.
        shutdown.cancel();
    }
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => {
            eprintln!(
                "reference-server: stdout accepted nothing for {OUTPUT_STALL:?} after input ended; \
                 {} bytes of output were dropped",
                outbox.queued()
            );
            Ok(())
        }
        other => other,
    }
}

/// Runs `write`, but once `ended` has fired gives it only [`OUTPUT_STALL`].
async fn unless_stalled<F: Future<Output = io::Result<()>>>(
    write: F,
    ended: &CancellationToken,
) -> io::Result<()> {
    let stalled = async {
        ended.cancelled().await;
        tokio::time::sleep(OUTPUT_STALL).await;
    };
    tokio::select! {
        result = write => result,
        () = stalled => Err(io::ErrorKind::TimedOut.into()),
    }
}
