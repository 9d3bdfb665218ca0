//! Reference MCP server over stdio.
//!
//! The smallest server that follows every cancellation rule of the MCP
//! specification, serving the fixture profile described in the README.
//! [`serve`] runs a session over any reader/writer pair; [`main_entry`] is
//! the whole program, so another binary can embed the server as a
//! subcommand.

mod outbox;
mod registry;
mod session;
mod stdio;
mod tools;
pub mod version;

use std::io;
use std::process::ExitCode;
pub use stdio::StdioMode;
use tokio::io::{AsyncRead, AsyncWrite};
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
/// `options.shutdown`. In-flight handlers are cancelled and queued output is
/// flushed before it returns, unless `writer` accepts nothing for a second
/// after input has ended (then the output is dropped).
pub async fn serve<R, W>(reader: R, writer: W, options: ServeOptions) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    stdio::serve(reader, writer, options.verbose, &options.shutdown).await
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
