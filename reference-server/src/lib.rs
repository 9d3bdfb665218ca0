//! Reference MCP server over stdio.
//!
//! The smallest server that follows every cancellation rule of the MCP
//! specification, serving the fixture profile described in the README.
//! [`serve`] runs a session over any reader/writer pair; [`main_entry`] is
//! the whole program, so another binary can embed the server as a
//! subcommand.

mod registry;
mod session;
mod stdio;
mod tools;
pub mod version;

use reference_wire::{
    write_lines, LineError, LineReader, RpcError, INVALID_REQUEST, MAX_LINE_BYTES, PARSE_ERROR,
};
use registry::{Out, Registry};
use session::Session;
use std::io;
use std::process::ExitCode;
use std::sync::Arc;
pub use stdio::StdioMode;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Environment switch equivalent to `--verbose` when set to `1`.
pub const VERBOSE_ENV: &str = "REFERENCE_SERVER_VERBOSE";

/// How a session runs.
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// Log each cancellation (id and reason) and each ignored message to stderr.
    pub verbose: bool,
    /// Fired to end the session as if input had reached EOF.
    pub shutdown: CancellationToken,
    /// How [`run`] drives stdin and stdout (ignored by [`serve`]).
    pub stdio: StdioMode,
}

/// Serves one MCP session: reads newline-delimited JSON-RPC from `reader`
/// and writes responses and notifications to `writer` until EOF or
/// `options.shutdown`. In-flight handlers are cancelled and all queued
/// output is flushed before it returns.
pub async fn serve<R, W>(reader: R, writer: W, options: ServeOptions) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let registry = Arc::new(Registry::new(tx, options.verbose));
    let session = Session::new(Arc::clone(&registry), options.verbose);
    let read = read_loop(reader, session, &options.shutdown);
    let write = write_loop(writer, rx, &options.shutdown);
    let (read_result, write_result) = tokio::join!(
        async {
            let result = read.await;
            let reason = if options.shutdown.is_cancelled() {
                "server shutting down"
            } else {
                "stdin closed"
            };
            registry.cancel_all(reason);
            registry.stop();
            result
        },
        write
    );
    read_result.and(write_result)
}

async fn read_loop<R: AsyncRead + Unpin>(
    reader: R,
    mut session: Session,
    shutdown: &CancellationToken,
) -> io::Result<()> {
    let mut lines = LineReader::new(reader);
    loop {
        let next = tokio::select! {
            biased;
            () = shutdown.cancelled() => return Ok(()),
            next = lines.next_line() => next,
        };
        match next {
            None => return Ok(()),
            Some(Ok(line)) => session.handle_line(&line),
            Some(Err(LineError::TooLong)) => session.unreadable(RpcError::new(
                INVALID_REQUEST,
                format!(
                    "invalid request: line longer than {MAX_LINE_BYTES} bytes was discarded; send smaller messages"
                ),
            )),
            Some(Err(LineError::NotUtf8)) => session.unreadable(RpcError::new(
                PARSE_ERROR,
                "parse error: line is not valid utf-8; messages must be utf-8 json",
            )),
            Some(Err(LineError::Io(e))) => return Err(e),
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::UnboundedReceiver<Out>,
    shutdown: &CancellationToken,
) -> io::Result<()> {
    let written = async {
        write_lines(&mut writer, &mut rx).await?;
        writer.shutdown().await
    };
    match written.await {
        Err(e) => {
            // Nobody can read our output any more: end the session.
            shutdown.cancel();
            if e.kind() == io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(e)
            }
        }
        ok => ok,
    }
}

/// The whole server program: serves stdin/stdout until EOF or SIGTERM.
///
/// Recognises `--verbose` (or `REFERENCE_SERVER_VERBOSE=1`) and `--help`;
/// any other argument is ignored, so an embedding binary may pass its own
/// subcommand name through.
pub fn main_entry() -> ExitCode {
    let mut options = ServeOptions {
        verbose: std::env::var_os(VERBOSE_ENV).is_some_and(|v| v == "1"),
        ..ServeOptions::default()
    };
    for arg in std::env::args_os().skip(1) {
        if arg == "--verbose" || arg == "-v" {
            options.verbose = true;
        } else if arg == "--fast-pipes" {
            options.stdio = StdioMode::FastPipes;
        } else if arg == "--help" || arg == "-h" {
            println!(
                "usage: reference-server [--verbose] [--fast-pipes]\n\nserves MCP over stdin/stdout until EOF or SIGTERM; \
                 --verbose (or {VERBOSE_ENV}=1) logs each cancellation to stderr; \
                 --fast-pipes (Linux) polls private reopenings of stdin/stdout pipes instead of \
                 tokio's blocking stdio"
            );
            return ExitCode::SUCCESS;
        }
    }
    run(options)
}

/// Serves stdin/stdout with `options` on a fresh single-threaded runtime.
pub fn run(options: ServeOptions) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!(
                "reference-server: cannot start the async runtime: {e}; check process limits"
            );
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        watch_signals(&options.shutdown);
        let (input, output) = stdio::open(options.stdio);
        serve(input, output, options).await
    });
    // A blocked stdin read must not keep the process alive.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reference-server: stdio failed: {e}; the client's pipes are gone");
            ExitCode::FAILURE
        }
    }
}

/// SIGTERM and SIGINT end the session like EOF does.
#[cfg(unix)]
fn watch_signals(shutdown: &CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    for kind in [SignalKind::terminate(), SignalKind::interrupt()] {
        match signal(kind) {
            Ok(mut signals) => {
                let shutdown = shutdown.clone();
                tokio::spawn(async move {
                    signals.recv().await;
                    shutdown.cancel();
                });
            }
            Err(e) => {
                eprintln!("reference-server: cannot watch signals ({e}); use stdin EOF to stop")
            }
        }
    }
}

#[cfg(not(unix))]
fn watch_signals(_shutdown: &CancellationToken) {}
