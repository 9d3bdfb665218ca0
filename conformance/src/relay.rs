//! The server a client under test starts: a relay between its stdio and the harness.
//!
//! In client mode the harness plays the server, but the client wants a program to spawn. It
//! spawns `conformance relay <addr>`, which connects to the harness over loopback TCP and copies
//! bytes both ways, unchanged. Two things the client does to the process and not to the
//! bytes are reported in-band, each as a line of its own that no JSON message can be:
//!
//! - the end of its stdin ([`STDIN_CLOSED`]): the client closed the server's stdin;
//! - `SIGTERM` ([`TERMINATED`]), after which the relay exits as a terminated process would.
//!
//! A connection that ends with neither marker means the relay was killed (or crashed). When
//! the harness closes the connection, the relay exits: the server went away.

use std::io::Write as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// The line the relay sends when its stdin reaches end of file.
pub const STDIN_CLOSED: &str = "\u{1}relay:stdin-closed";
/// The line the relay sends when it receives `SIGTERM`.
pub const TERMINATED: &str = "\u{1}relay:sigterm";
/// The first argument that makes a test binary act as the relay (see [`run_if_relay`]).
pub const RELAY_FLAG: &str = "--conformance-relay";

/// For test binaries and other hosts that cannot add a subcommand: when this process was
/// started as `<program> --conformance-relay <addr>`, runs the relay and exits; otherwise
/// returns at once. Call it first in `main`.
pub fn run_if_relay() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(RELAY_FLAG) {
        let code = match args.get(2) {
            Some(addr) => run(addr),
            None => {
                eprintln!("conformance relay: {RELAY_FLAG} needs the harness address");
                2
            }
        };
        std::process::exit(code);
    }
}

/// Relays stdin and stdout to the harness at `addr` until either side ends. Returns the exit
/// code: 0 when the harness closed the connection, 143 after `SIGTERM`, 1 on errors.
pub fn run(addr: &str) -> i32 {
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
    match runtime.block_on(relay(addr)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("conformance relay: {e}; the harness at {addr} is gone or was never there");
            1
        }
    }
}

async fn relay(addr: &str) -> std::io::Result<i32> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut from_harness, mut to_harness) = stream.into_split();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;

    // stdin is read on its own task so that the loop below only waits on cancel-safe futures.
    let (tx, mut stdin_chunks) = mpsc::channel::<Vec<u8>>(16);
    tokio::spawn(async move {
        let mut stdin = tokio::io::stdin();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut downstream = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from_harness.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if stdout.write_all(&buf[..n]).await.is_err() || stdout.flush().await.is_err() {
                        break;
                    }
                }
            }
        }
    });

    let mut line_open = false;
    let mut stdin_open = true;
    loop {
        tokio::select! {
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
                let _ = std::io::stdout().flush();
                return Ok(143);
            }
            _ = &mut downstream => return Ok(0),
        }
    }
}
