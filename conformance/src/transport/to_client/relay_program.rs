//! The relay program: what `conformance relay ADDR` (or a test binary started with
//! [`RELAY_FLAG`]) runs as the server a client under test starts. It copies its stdin to the
//! harness and the harness's bytes to its stdout, reports in-band when its stdin ends or it
//! receives SIGTERM, and exits at once when the harness closes the connection or after
//! SIGTERM, whatever its stdin does (see `relay` for the harness's end).

use std::io::Write as _;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// The line the relay sends when its stdin reaches end of file.
pub const STDIN_CLOSED: &str = "\u{1}relay:stdin-closed";

/// The line the relay sends when it receives `SIGTERM`.
pub const TERMINATED: &str = "\u{1}relay:sigterm";

/// The line the relay sends first, followed by the case's token and a newline.
pub const HELLO: &str = "\u{1}relay:hello ";

/// The first argument that makes a test binary act as the relay (see [`run_if_relay`]).
pub const RELAY_FLAG: &str = "--conformance-relay";

/// For test binaries and other hosts that cannot add a subcommand: when this process was
/// started as `<program> --conformance-relay <addr> [<token>]`, runs the relay and exits;
/// otherwise returns at once. Call it first in `main`.
pub fn run_if_relay() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(RELAY_FLAG) {
        let code = match args.get(2) {
            Some(addr) => run(addr, args.get(3).map(String::as_str)),
            None => {
                eprintln!("conformance relay: {RELAY_FLAG} needs the harness address");
                2
            }
        };
        std::process::exit(code);
    }
}

/// Relays stdin and stdout to the harness at `addr` until either side ends, having first
/// presented `token` (the harness refuses a connection without the case's token). Returns the
/// exit code: 0 when the harness closed the connection (the server exits on its own, even while
/// its stdin is open), 1 on errors. After `SIGTERM` it tells the harness, flushes, and dies of
/// the signal as a terminated process would, whether its stdin is open or not.
pub fn run(addr: &str, token: Option<&str>) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("conformance relay: cannot start a tokio runtime: {e}");
            return 1;
        }
    };
    let ended = runtime.block_on(relay(addr, token));
    // Reading stdin blocks a thread that no runtime can stop: do not wait for it.
    runtime.shutdown_background();
    match ended {
        Ok(Ended::Harness) => 0,
        Ok(Ended::Terminated) => {
            let _ = std::io::stdout().flush();
            let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGTERM);
            143
        }
        Err(e) => {
            eprintln!("conformance relay: {e}; the harness at {addr} is gone or was never there");
            1
        }
    }
}

/// Why the relay stopped.
enum Ended {
    /// The harness closed the connection: the server exits.
    Harness,
    /// The relay received `SIGTERM`.
    Terminated,
}

async fn relay(addr: &str, token: Option<&str>) -> std::io::Result<Ended> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (from_harness, mut to_harness) = stream.into_split();
    if let Some(token) = token {
        to_harness
            .write_all(format!("{HELLO}{token}\n").as_bytes())
            .await?;
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;

    // stdin is read on its own task so that the loop below only waits on cancel-safe futures.
    let (tx, mut stdin_chunks) = mpsc::channel::<Vec<u8>>(16);
    tokio::spawn(copy(tokio::io::stdin(), async move |bytes: &[u8]| {
        tx.send(bytes.to_vec()).await.is_ok()
    }));
    let mut stdout = tokio::io::stdout();
    let mut downstream = tokio::spawn(copy(from_harness, async move |bytes: &[u8]| {
        stdout.write_all(bytes).await.is_ok() && stdout.flush().await.is_ok()
    }));

    let mut line_open = false;
    let mut stdin_open = true;
    loop {
        tokio::select! {
            // What the client wrote goes first: a message written before a signal or the end
            // of the connection still reaches the harness.
            biased;
            chunk = stdin_chunks.recv(), if stdin_open => match chunk {
                Some(bytes) => {
                    line_open = bytes.last() != Some(&b'\n');
                    to_harness.write_all(&bytes).await?;
                }
                None => {
                    stdin_open = false;
                    let marker = format!("{}{STDIN_CLOSED}\n", if line_open { "\n" } else { "" });
                    to_harness.write_all(marker.as_bytes()).await?;
                }
            },
            _ = term.recv() => {
                let marker = format!("{}{TERMINATED}\n", if line_open { "\n" } else { "" });
                let _ = to_harness.write_all(marker.as_bytes()).await;
                let _ = to_harness.flush().await;
                return Ok(Ended::Terminated);
            }
            _ = &mut downstream => return Ok(Ended::Harness),
        }
    }
}

/// Reads `from` chunk by chunk and hands each chunk to `to`, until `from` ends or fails or `to`
/// returns false.
async fn copy(mut from: impl AsyncRead + Unpin, mut to: impl AsyncFnMut(&[u8]) -> bool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if !to(&buf[..n]).await {
                    break;
                }
            }
        }
    }
}
