//! A client target over stdio, through a relay.
//!
//! In client cases the harness plays the server, but a client wants a program to spawn. The
//! adapter around the client library is started with `CONFORMANCE_SERVER` naming
//! `conformance relay <addr> <token>`, which connects to the harness over loopback TCP and
//! copies bytes both ways, unchanged. Its first line says the case's token ([`HELLO`]): any
//! program on the machine may connect to a loopback port, and on a busy one another run's
//! harness, handed the port this listener was given just before as a free one for its HTTP
//! server, did, and its requests landed in a client case as a server process the client
//! never started. A connection without the token is refused and noted. Two things the client
//! does to the process and not to the bytes are reported in-band, each as a line of its own
//! that no JSON message can be:
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

use crate::transport::lines::{read_lines, Chunk};
use crate::transport::process::{Launch, Process, ProcessEvent, TargetLog, MAX_LINE};
use crate::transport::{Channel, Event, PeerSignal, SendError, Transport};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpListener;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant as Deadline;

/// The environment variable that names the server a client adapter starts (a JSON argv).
pub const ENV_SERVER: &str = "CONFORMANCE_SERVER";

/// The line the relay sends when its stdin reaches end of file.
pub const STDIN_CLOSED: &str = "\u{1}relay:stdin-closed";
/// The line the relay sends when it receives `SIGTERM`.
pub const TERMINATED: &str = "\u{1}relay:sigterm";
/// The first argument that makes a test binary act as the relay (see [`run_if_relay`]).
pub const RELAY_FLAG: &str = "--conformance-relay";
/// The relay's first line, followed by the case's token.
pub const HELLO: &str = "\u{1}relay:hello ";
/// How long a new connection may take to say the token.
const HELLO_WAIT: Duration = Duration::from_secs(30);
/// The longest first line read from a new connection.
const HELLO_MAX: usize = 256;

pub use super::relay_program::{run, run_if_relay};

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
    patience: Duration,
    stdout_closed: bool,
    /// What a relay of this case says first (`HELLO` and the token).
    hello: String,
    /// New connections, each until it said its first line: the stream, or what it said.
    greeting: JoinSet<Result<TcpStream, String>>,
}

/// How many server processes one case may start; later connections are refused.
const MAX_CONNECTIONS: usize = 16;

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
        let token = token();
        let mut server = relay.to_vec();
        server.push(addr.to_string());
        server.push(token.clone());
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
        Ok(Relay {
            process,
            listener: Some(listener),
            connections: vec![],
            wire_tx,
            wire,
            patience,
            stdout_closed: false,
            hello: format!("{HELLO}{token}"),
            greeting: JoinSet::new(),
        })
    }

    /// Reads a new connection's first line: a relay of this case says the token, anything
    /// else is some other program.
    fn greet(&mut self, mut stream: TcpStream) {
        let hello = self.hello.clone();
        self.greeting.spawn(async move {
            match tokio::time::timeout(HELLO_WAIT, first_line(&mut stream)).await {
                Ok(line) if line == hello.as_bytes() => Ok(stream),
                Ok(line) if line.is_empty() => Err("closed it without a word".into()),
                Ok(line) => Err(format!("said `{}`", String::from_utf8_lossy(&line))),
                Err(_) => Err(format!("said nothing within {HELLO_WAIT:?}")),
            }
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
                        Chunk::Line(bytes) => Wire::Line(bytes),
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

/// A token no other case has: what the relays of this case say first.
fn token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:016x}", hasher.finish())
}

/// The first line a connection says (without its newline; empty when it closed first), read
/// a byte at a time so that nothing after it is taken from the stream; at most `HELLO_MAX`
/// bytes.
async fn first_line(stream: &mut TcpStream) -> Vec<u8> {
    let mut line = vec![];
    let mut byte = [0u8; 1];
    while line.len() < HELLO_MAX {
        match stream.read(&mut byte).await {
            Ok(1) if byte[0] == b'\n' => break,
            Ok(1) => line.push(byte[0]),
            _ => break,
        }
    }
    line
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
            let process_done = self.process.exit_status().is_some() && self.stdout_closed;
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
                Some((stream, _)) = accept => self.greet(stream),
                Some(greeted) = self.greeting.join_next(), if !self.greeting.is_empty() => {
                    match greeted {
                        Ok(Ok(stream)) => {
                            let count = self.connected(stream);
                            return Some((Instant::now(), Event::Connected(count)));
                        }
                        Ok(Err(said)) => self.process.note(format!(
                            "[relay] refused a connection that is not the client's server: it {said} (another program on this machine connected to the harness's port)"
                        )),
                        Err(_) => {}
                    }
                }
                () = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }

    fn finished(&self) -> bool {
        self.process.exit_status().is_some() && self.stdout_closed && !self.any_open()
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

    async fn shutdown(&mut self, grace: Duration) -> TargetLog {
        self.close_input();
        self.process.end(grace).await
    }
}
