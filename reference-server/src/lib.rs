//! Reference MCP server over stdio and Streamable HTTP.
//!
//! The smallest server that follows every cancellation rule of the MCP
//! specification, serving the fixture profile described in the README.
//! [`serve`] runs a session over any reader/writer pair; [`run`] serves
//! stdio or HTTP as [`ServeOptions`] say; [`main_entry`] is the whole
//! program, so another binary can embed the server as a subcommand.

mod call;
mod cli;
mod http;
mod ids;
mod listen;
mod meta;
mod outbox;
mod registry;
mod request;
mod session;
mod stdio;
mod tasks;
mod tools;
pub mod version;
mod witness;

pub use http::HttpOptions;
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
    /// Serve Streamable HTTP instead of stdio ([`run`] only).
    pub http: Option<HttpOptions>,
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

/// The whole server program: serves stdin/stdout until EOF or SIGTERM, or
/// Streamable HTTP with `--http ADDR` until SIGTERM.
///
/// Reads `std::env::args_os().skip(1)`; `--help` lists the options, and any
/// argument it does not know is ignored, so an embedding binary may pass its
/// own subcommand name through. Bad option values exit with status 2.
pub fn main_entry() -> ExitCode {
    match cli::parse(std::env::args_os().skip(1)) {
        Ok(cli::Command::Serve(options)) => run(options),
        Ok(cli::Command::Help) => {
            println!("{}", cli::USAGE);
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("reference-server: {message}");
            ExitCode::from(2)
        }
    }
}

/// Serves stdin/stdout (or HTTP, when `options.http` is set) on a fresh
/// single-threaded runtime.
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
        match options.http {
            Some(http) => http::serve(http, options.verbose, &options.shutdown).await,
            None => {
                let (input, output) = stdio::open(options.stdio);
                serve(input, output, options).await
            }
        }
    });
    // A blocked stdin read must not keep the process alive.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reference-server: {e}");
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
