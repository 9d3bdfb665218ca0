//! A client target over stdio, through a relay.
//!
//! In client cases the harness plays the server, but a client wants a program to spawn. The
//! adapter around the client library is started with `CONFORMANCE_SERVER` naming
//! `conformance relay <addr> <token>`, which connects to the harness over loopback TCP and
//! copies bytes both ways, unchanged. Any program on the machine can connect to that port, so
//! the relay first presents the case's token ([`HELLO`]); a connection that does not present
//! it within the write patience is closed, noted in the target's log, and not counted as a
//! server the client started. Two things the client does to the process and not to the bytes
//! are reported in-band, each as a line of its own that no JSON message can be:
//!
//! - the end of its stdin ([`STDIN_CLOSED`]): the client closed the server's stdin;
//! - `SIGTERM` ([`TERMINATED`]), after which the relay exits as a terminated process would.
//!
//! A connection that ends with neither marker means the relay was killed (or crashed). When
//! the harness closes the connection, the relay exits at once, whether its stdin is open or
//! not: the server went away.
//!
//! [`Relay`] is the harness's end: the adapter process (whose stdout carries outcome lines)
//! and one relay connection per server process the client started (which carry the
//! protocol), as one [`Transport`]. The relay program itself is in `relay_program`
//! ([`run`], [`run_if_relay`]).

use crate::load::source::Load;
use crate::transport::lines::{read_lines, Chunk};
use crate::transport::process::{Launch, Process, TargetLog, MAX_LINE};
use crate::transport::{Channel, Event, PeerSignal, SendError, Transport};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpListener;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant as Deadline;

/// The environment variable that names the server a client adapter starts (a JSON argv).
pub const ENV_SERVER: &str = "CONFORMANCE_SERVER";

pub use super::relay_program::{run, run_if_relay, HELLO, RELAY_FLAG, STDIN_CLOSED, TERMINATED};

/// Something a relay connection carried.
enum Wire {
    Line(Vec<u8>),
    Overlong,
    Signal(PeerSignal),
    Closed,
}

/// The harness's end of one relay connection: one server process the client started.
struct Connection {
    /// The harness's writing half: the server's stdout. `None` once the server has exited
    /// (the client closed its stdin, or the harness ended it).
    writer: Option<OwnedWriteHalf>,
    /// The connection has not ended.
    open: bool,
}

/// The harness's end of a client target: the adapter process and the relay connections of
/// the servers it started (usually one; a client may start a throwaway one first, or start
/// its server again). Each connection is a channel of its own ([`Channel::of_process`]);
/// messages that answer nothing go to the newest.
pub struct Relay {
    process: Process,
    listener: Option<TcpListener>,
    connections: Vec<Connection>,
    wire_tx: mpsc::Sender<(Instant, u32, Wire)>,
    wire: mpsc::Receiver<(Instant, u32, Wire)>,
    /// The line a connection must begin with: [`HELLO`], the case's token, a newline.
    hello: Arc<[u8]>,
    /// Connections that presented the token, or why one did not.
    admitted_tx: mpsc::Sender<Result<TcpStream, String>>,
    admitted: mpsc::Receiver<Result<TcpStream, String>>,
    patience: Duration,
    /// The machine's load, which stretches the wait for a relay's token.
    load: Load,
}

/// How many server processes one case may start; later connections are refused.
const MAX_CONNECTIONS: usize = 16;

impl Relay {
    /// Starts the adapter `launch` with `CONFORMANCE_SERVER` set to `relay` (the relay
    /// program's argv) plus the address it must connect back to and the case's token. A write
    /// the client does not read for `patience` fails, and a connection that does not present
    /// the token within it is refused.
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
        let token = new_token();
        let mut server = relay.to_vec();
        server.extend([addr.to_string(), token.clone()]);
        let mut launch = launch.clone();
        launch
            .env
            .push((ENV_SERVER.to_string(), json!(server).to_string()));
        let process = Process::spawn(&launch).map_err(|e| {
            format!(
                "cannot start client `{}`: {e}; check the command after `--` (it is run without a shell)",
                crate::transport::process::display_argv(&launch.argv)
            )
        })?;
        let (wire_tx, wire) = mpsc::channel(256);
        let (admitted_tx, admitted) = mpsc::channel(MAX_CONNECTIONS);
        Ok(Relay {
            process,
            listener: Some(listener),
            connections: vec![],
            wire_tx,
            wire,
            hello: format!("{HELLO}{token}\n").into_bytes().into(),
            admitted_tx,
            admitted,
            patience,
            load: Load::machine(),
        })
    }

    /// Checks a connection to the relay's port on a task of its own (a connection that says
    /// nothing must not hold up the case); what it finds comes back through `admitted`.
    fn admit(&self, mut stream: TcpStream) {
        let hello = self.hello.clone();
        let tx = self.admitted_tx.clone();
        // A relay presents its token as soon as it connects; a busy machine may delay it.
        let allowed = self.load.stretched(self.patience);
        tokio::spawn(async move {
            let mut got = vec![0u8; hello.len()];
            let read = tokio::time::timeout(allowed, stream.read_exact(&mut got)).await;
            let admitted = match read {
                Ok(Ok(_)) if *got == *hello => Ok(stream),
                Ok(Ok(_)) => Err(format!(
                    "it did not present this case's token (it began with {:?})",
                    String::from_utf8_lossy(&got)
                )),
                Ok(Err(e)) => Err(format!(
                    "it ended before presenting this case's token ({e})"
                )),
                Err(_) => Err(format!("it presented no token within {allowed:?}")),
            };
            let _ = tx.send(admitted).await;
        });
    }

    fn connected(&mut self, stream: TcpStream) -> u32 {
        let n = self.connections.len() as u32 + 1;
        let _ = stream.set_nodelay(true);
        let (read, write) = stream.into_split();
        self.connections.push(Connection {
            writer: Some(write),
            open: true,
        });
        if self.connections.len() >= MAX_CONNECTIONS {
            self.listener = None;
        }
        let tx = self.wire_tx.clone();
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
                        Chunk::Line(bytes) | Chunk::Unterminated(bytes) => Wire::Line(bytes),
                        Chunk::Overlong => Wire::Overlong,
                        Chunk::Partial => return true,
                    };
                    tx.send((Instant::now(), n, event)).await.is_ok()
                }
            })
            .await;
            let _ = tx.send((Instant::now(), n, Wire::Closed)).await;
        });
        n
    }

    /// The connection a channel names, as an index.
    fn index(channel: Channel) -> Option<usize> {
        match channel {
            Channel::Stdio => Some(0),
            Channel::Process(n) => Some(n as usize - 1),
            _ => None,
        }
    }

    /// Whether any server the client started is still connected.
    fn any_open(&self) -> bool {
        self.connections.iter().any(|c| c.open)
    }
}

impl Transport for Relay {
    async fn send(
        &mut self,
        bytes: &[u8],
        reply_to: Option<Channel>,
    ) -> Result<Channel, SendError> {
        let index = reply_to
            .and_then(Relay::index)
            .or_else(|| self.connections.len().checked_sub(1))
            .ok_or(SendError::Gone)?;
        let channel = Channel::of_process(index as u32 + 1);
        let patience = self.patience;
        let Some(writer) = self
            .connections
            .get_mut(index)
            .and_then(|c| c.writer.as_mut())
        else {
            return Err(SendError::Gone);
        };
        let mut buf = bytes.to_vec();
        buf.push(b'\n');
        match tokio::time::timeout(patience, writer.write_all(&buf)).await {
            Ok(Ok(())) => Ok(channel),
            Ok(Err(_)) => Err(SendError::Gone),
            Err(_) => {
                self.connections[index].writer = None;
                Err(SendError::Stalled(patience))
            }
        }
    }

    async fn next(&mut self, deadline: Deadline) -> Option<(Instant, Event)> {
        loop {
            let process_done = self.process.finished();
            if process_done && !self.any_open() {
                return None;
            }
            let accepting = !process_done && self.listener.is_some();
            let accept = async {
                match self.listener.as_ref() {
                    Some(listener) if accepting => listener.accept().await.ok(),
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                event = self.process.recv_adapter(), if !process_done => match event {
                    Some(event) => return Some(event),
                    None => continue,
                },
                Some((at, n, event)) = self.wire.recv() => {
                    let channel = Channel::of_process(n);
                    let connection = &mut self.connections[n as usize - 1];
                    let event = match event {
                        Wire::Line(bytes) => Event::Message { channel, bytes },
                        Wire::Overlong => Event::Overlong(channel),
                        Wire::Signal(signal) => {
                            if signal == PeerSignal::StdinClosed {
                                // A well-behaved server exits when its input ends.
                                connection.writer = None;
                            }
                            Event::Signal { channel, signal }
                        }
                        Wire::Closed => {
                            connection.writer = None;
                            connection.open = false;
                            Event::Signal { channel, signal: PeerSignal::Ended }
                        }
                    };
                    return Some((at, event));
                }
                Some((stream, _)) = accept => self.admit(stream),
                Some(admitted) = self.admitted.recv(), if accepting => match admitted {
                    Ok(stream) => {
                        let count = self.connected(stream);
                        return Some((Instant::now(), Event::Connected(count)));
                    }
                    Err(why) => self.note(format!("[relay] refused a connection to the relay's port: {why}")),
                },
                () = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }

    fn finished(&self) -> bool {
        self.process.finished() && !self.any_open()
    }

    fn ordered(&self) -> bool {
        true
    }

    fn abort(&mut self, _: Channel) -> bool {
        false
    }

    /// The server exits: every relay connection is closed, so every relay exits (whether the
    /// client closed its stdin or not).
    fn close_input(&mut self) {
        for connection in &mut self.connections {
            connection.writer = None;
        }
    }

    fn input_open(&self) -> bool {
        self.connections.last().is_some_and(|c| c.writer.is_some())
    }

    fn process(&self) -> Option<&Process> {
        Some(&self.process)
    }

    fn load(&self) -> Load {
        self.load.clone()
    }

    async fn shutdown(&mut self, grace: Duration) -> TargetLog {
        self.close_input();
        self.process.end(grace).await
    }
}

/// A token no other case's relay presents: 128 bits from the standard library's random
/// hashing keys (seeded by the operating system, different for every `RandomState`).
fn new_token() -> String {
    use std::hash::{BuildHasher, RandomState};
    let word = |salt: u64| RandomState::new().hash_one(salt);
    format!("{:016x}{:016x}", word(1), word(2))
}
