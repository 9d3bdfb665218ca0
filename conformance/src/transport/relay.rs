//! A client target over stdio, through a relay.
//!
//! In client cases the harness plays the server, but a client wants a program to spawn. The
//! adapter around the client library is started with `CONFORMANCE_SERVER` naming
//! `conformance relay <addr>`, which connects to the harness over loopback TCP and copies bytes
//! both ways, unchanged. Two things the client does to the process and not to the bytes are
//! reported in-band, each as a line of its own that no JSON message can be:
//!
//! - the end of its stdin ([`STDIN_CLOSED`]): the client closed the server's stdin;
//! - `SIGTERM` ([`TERMINATED`]), after which the relay exits as a terminated process would.
//!
//! A connection that ends with neither marker means the relay was killed (or crashed). When
//! the harness closes the connection, the relay exits: the server went away.
//!
//! [`Relay`] is the harness's end: the adapter process (whose stdout carries outcome lines)
//! and the relay connection (which carries the protocol), as one [`Transport`]. [`run`] is
//! the relay program itself.

use super::lines::{read_lines, Chunk};
use super::process::{Launch, Process, ProcessEvent, TargetLog, MAX_LINE};
use super::{Channel, Event, PeerSignal, SendError, Transport};
use serde_json::json;
use std::io::Write as _;
use std::process::ExitStatus;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpListener;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant as Deadline;

/// The environment variable that names the server a client adapter starts (a JSON argv).
pub const ENV_SERVER: &str = "CONFORMANCE_SERVER";

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

/// Something the relay connection carried.
enum Wire {
    Line(Vec<u8>),
    Overlong,
    Signal(PeerSignal),
    Closed,
}

/// The harness's end of a client target: the adapter process and its server's relay.
pub struct Relay {
    process: Process,
    listener: TcpListener,
    writer: Option<OwnedWriteHalf>,
    wire: Option<mpsc::Receiver<(Instant, Wire)>>,
    connections: u32,
    patience: Duration,
    stdout_closed: bool,
}

impl Relay {
    /// Starts the adapter `launch` with `CONFORMANCE_SERVER` set to `relay` (the relay
    /// program's argv) plus the address it must connect back to. A write the client does not
    /// read for `patience` fails.
    pub async fn start(
        launch: &Launch,
        relay: &[String],
        patience: Duration,
    ) -> Result<Relay, String> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("cannot listen on a loopback port for the relay: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot read the relay port: {e}"))?;
        let mut server = relay.to_vec();
        server.push(addr.to_string());
        let mut launch = launch.clone();
        launch
            .env
            .push((ENV_SERVER.to_string(), json!(server).to_string()));
        let process = Process::spawn(&launch).map_err(|e| {
            format!(
                "cannot start client `{}`: {e}; check the command after `--` (it is run without a shell)",
                super::process::display_argv(&launch.argv)
            )
        })?;
        Ok(Relay {
            process,
            listener,
            writer: None,
            wire: None,
            connections: 0,
            patience,
            stdout_closed: false,
        })
    }

    fn connected(&mut self, stream: TcpStream) -> u32 {
        self.connections += 1;
        if self.connections > 1 {
            // A second server start: the transcript follows the first session only.
            return self.connections;
        }
        let _ = stream.set_nodelay(true);
        let (read, write) = stream.into_split();
        self.writer = Some(write);
        let (tx, rx) = mpsc::channel(256);
        self.wire = Some(rx);
        tokio::spawn(async move {
            let lines = tx.clone();
            read_lines(read, MAX_LINE, move |chunk| {
                let tx = lines.clone();
                async move {
                    let event = match chunk {
                        Chunk::Line(bytes) if bytes == STDIN_CLOSED.as_bytes() => {
                            Wire::Signal(PeerSignal::StdinClosed)
                        }
                        Chunk::Line(bytes) if bytes == TERMINATED.as_bytes() => {
                            Wire::Signal(PeerSignal::Terminated)
                        }
                        Chunk::Line(bytes) => Wire::Line(bytes),
                        Chunk::Overlong => Wire::Overlong,
                        Chunk::Partial => return true,
                    };
                    tx.send((Instant::now(), event)).await.is_ok()
                }
            })
            .await;
            let _ = tx.send((Instant::now(), Wire::Closed)).await;
        });
        self.connections
    }
}

impl Transport for Relay {
    async fn send(&mut self, bytes: &[u8], _: Option<Channel>) -> Result<Channel, SendError> {
        let Some(writer) = self.writer.as_mut() else {
            return Err(SendError::Gone);
        };
        let mut buf = bytes.to_vec();
        buf.push(b'\n');
        match tokio::time::timeout(self.patience, writer.write_all(&buf)).await {
            Ok(Ok(())) => Ok(Channel::Stdio),
            Ok(Err(_)) => Err(SendError::Gone),
            Err(_) => {
                self.writer = None;
                Err(SendError::Stalled(self.patience))
            }
        }
    }

    async fn next(&mut self, deadline: Deadline) -> Option<(Instant, Event)> {
        loop {
            let process_done = self.process.exit_status().is_some() && self.stdout_closed;
            if process_done && self.wire.is_none() {
                return None;
            }
            let wire = async {
                match self.wire.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = self.process.recv(), if !process_done => {
                    let Some((at, event)) = event else {
                        self.stdout_closed = true;
                        continue;
                    };
                    let event = match event {
                        ProcessEvent::Line(bytes) => Event::AdapterLine(bytes),
                        ProcessEvent::Overlong => Event::AdapterOverlong,
                        ProcessEvent::Partial => continue,
                        ProcessEvent::StdoutClosed => {
                            self.stdout_closed = true;
                            continue;
                        }
                        ProcessEvent::Exited(status) => Event::Exited(status),
                    };
                    return Some((at, event));
                }
                event = wire => {
                    let Some((at, event)) = event else {
                        self.wire = None;
                        continue;
                    };
                    let event = match event {
                        Wire::Line(bytes) => Event::Message { channel: Channel::Stdio, bytes },
                        Wire::Overlong => Event::Overlong(Channel::Stdio),
                        Wire::Signal(signal) => {
                            if signal == PeerSignal::StdinClosed {
                                // A well-behaved server exits when its input ends.
                                self.writer = None;
                            }
                            Event::Signal(signal)
                        }
                        Wire::Closed => {
                            self.writer = None;
                            self.wire = None;
                            Event::OutputClosed
                        }
                    };
                    return Some((at, event));
                }
                accepted = self.listener.accept(), if !process_done => {
                    if let Ok((stream, _)) = accepted {
                        let count = self.connected(stream);
                        return Some((Instant::now(), Event::Connected(count)));
                    }
                }
                () = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }

    fn finished(&self) -> bool {
        self.process.exit_status().is_some() && self.stdout_closed && self.wire.is_none()
    }

    fn ordered(&self) -> bool {
        true
    }

    fn abort(&mut self, _: Channel) -> bool {
        false
    }

    fn close_input(&mut self) {
        self.writer = None;
    }

    fn input_open(&self) -> bool {
        self.writer.is_some()
    }

    fn started(&self) -> Instant {
        self.process.started
    }

    fn exit_status(&self) -> Option<ExitStatus> {
        self.process.exit_status()
    }

    fn note(&self, text: String) {
        self.process.note(text);
    }

    async fn shutdown(&mut self, grace: Duration) -> TargetLog {
        self.writer = None;
        self.process.shutdown(grace).await;
        self.process.take_log()
    }
}
