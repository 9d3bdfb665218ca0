//! A target process: spawned from an argv (never a shell), in its own process group, with
//! every output drained concurrently and bounded, and always killed and reaped.
//!
//! A misbehaving process must never hang or exhaust the harness: stdout lines are cut at
//! [`MAX_LINE`] without buffering the rest, stderr keeps only a bounded log, writes to its
//! stdin give up after a deadline, and the whole process group is killed when the run ends,
//! also when the harness unwinds from a panic. Every live group is listed in one registry,
//! so the harness can kill them all when it is interrupted.

use super::lines::{read_lines, Chunk};
use super::reap;
use super::Event;
pub use crate::exchange::{TargetLog, LOG_KEPT};
use crate::load::source::Load;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::time::Instant as Deadline;

/// The longest stdout line the harness accepts; longer ones are reported and discarded.
pub const MAX_LINE: usize = 4 * 1024 * 1024;
/// How much of the target's output is read ahead of the harness (while it judges what came
/// before, or waits to write): a target that writes while it reads, and reads only once its
/// writes are through, is not deadlocked by a harness that waits to write to it. Past this
/// the rest stays in the pipe.
pub const UNREAD_BYTES: usize = 8 * 1024 * 1024;
/// What an event counts against [`UNREAD_BYTES`] at the least.
const EVENT_COST: usize = 128;

const STDERR_LINE_MAX: usize = 4096;

/// How to start a process.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Program and arguments, run without a shell.
    pub argv: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory, if not the harness's own.
    pub cwd: Option<PathBuf>,
}

impl Launch {
    /// A launch of `argv` with nothing else set.
    pub fn argv(argv: Vec<String>) -> Launch {
        Launch {
            argv,
            env: vec![],
            cwd: None,
        }
    }
}

/// A command line as shown in reports.
pub fn display_argv(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if a.is_empty() || a.contains(char::is_whitespace) {
                format!("'{a}'")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Something the process did, stamped with when the harness saw it.
#[derive(Debug)]
pub enum ProcessEvent {
    /// One line of stdout, without its newline.
    Line(Vec<u8>),
    /// A stdout line longer than [`MAX_LINE`]; its bytes were discarded.
    Overlong,
    /// The start of a stdout line without its end (yet).
    Partial,
    /// What stdout held after its last newline when it closed.
    Unterminated(Vec<u8>),
    /// Stdout reached end of file.
    StdoutClosed,
    /// The process exited.
    Exited(ExitStatus),
}

/// Why a write to the process's stdin failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// Stdin is closed or the process is gone.
    Closed,
    /// The process did not read its stdin for this long: the pipe stayed full.
    Stalled(Duration),
}

/// A running process.
pub struct Process {
    pid: i32,
    /// The tag every process it starts carries (see [`reap`]).
    tag: String,
    stdin: Option<ChildStdin>,
    /// The harness closed stdin ([`Process::close_stdin`]).
    asked_to_exit: bool,
    events: mpsc::UnboundedReceiver<(Instant, ProcessEvent, u32)>,
    /// Room left for output read ahead of the harness, in bytes.
    room: Arc<Semaphore>,
    /// Its stderr so far, and notes about it.
    pub log: Arc<Mutex<TargetLog>>,
    /// When it was started.
    pub started: Instant,
    exited: Option<ExitStatus>,
    /// Its stdout has reached end of file, and the harness has taken every line before it.
    stdout_closed: bool,
    /// The exit status as soon as the process is reaped, ahead of the output still unread.
    reaped: watch::Receiver<Option<ExitStatus>>,
}

impl Process {
    /// Starts the process with piped stdin, stdout and stderr. Must be called inside a tokio
    /// runtime.
    pub fn spawn(launch: &Launch) -> std::io::Result<Process> {
        let tag = reap::new_tag();
        let mut cmd = command(launch, &tag)?;
        let (mut child, pid) = reap::start(|| {
            let child = cmd.spawn()?;
            let pid = child.id().map(|p| p as i32).unwrap_or(0);
            Ok(((child, pid), pid))
        })?;
        let started = Instant::now();
        let (tx, events) = mpsc::unbounded_channel();
        let (reaped_tx, reaped) = watch::channel(None);
        let room = Arc::new(Semaphore::new(UNREAD_BYTES));
        let log = Arc::new(Mutex::new(TargetLog::default()));
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let stdin = child.stdin.take();
        tokio::spawn(read_stdout(stdout, tx.clone(), room.clone()));
        tokio::spawn(read_stderr(stderr, log.clone(), started));
        tokio::spawn(async move {
            if let Ok(status) = child.wait().await {
                let _ = reaped_tx.send(Some(status));
                let _ = tx.send((Instant::now(), ProcessEvent::Exited(status), 0));
            }
        });
        Ok(Process {
            pid,
            tag,
            stdin,
            asked_to_exit: false,
            events,
            room,
            log,
            started,
            exited: None,
            stdout_closed: false,
            reaped,
        })
    }

    /// Writes one line (a newline is added). Gives up when stdin stays full for `patience`,
    /// stretched for the machine's CPU pressure as `load` says (see
    /// [`super::patience::within`]): a target that reads slowly on a busy machine has not
    /// stopped reading. Meanwhile its output goes on being read, up to [`UNREAD_BYTES`].
    pub async fn write_line(
        &mut self,
        line: &[u8],
        patience: Duration,
        load: &Load,
    ) -> Result<(), WriteError> {
        let stdin = self.stdin.as_mut().ok_or(WriteError::Closed)?;
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line);
        buf.push(b'\n');
        let write = async {
            stdin.write_all(&buf).await?;
            stdin.flush().await
        };
        match super::patience::within(write, patience, load).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(WriteError::Closed),
            Err(allowed) => {
                // A half-written line cannot be finished; nothing more goes to this stdin.
                self.stdin = None;
                Err(WriteError::Stalled(allowed))
            }
        }
    }

    /// Closes the process's stdin, the stdio way of asking it to exit.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
        self.asked_to_exit = true;
    }

    /// Whether the harness has closed stdin (or ended the process): what the process writes
    /// from then on, it writes while it is being asked to exit.
    pub fn asked_to_exit(&self) -> bool {
        self.asked_to_exit
    }

    /// Whether stdin is still open.
    pub fn stdin_open(&self) -> bool {
        self.stdin.is_some()
    }

    /// The next event, or `None` once the deadline passes or nothing more can come.
    pub async fn next_event(&mut self, deadline: Deadline) -> Option<(Instant, ProcessEvent)> {
        tokio::time::timeout_at(deadline, self.recv())
            .await
            .ok()
            .flatten()
    }

    /// The next event, or `None` once nothing more can come (stdout closed and exited).
    /// Cancel-safe.
    pub async fn recv(&mut self) -> Option<(Instant, ProcessEvent)> {
        let Some((at, event, cost)) = self.events.recv().await else {
            self.stdout_closed = true;
            return None;
        };
        self.room.add_permits(cost as usize);
        match &event {
            ProcessEvent::Exited(status) => self.exited = Some(*status),
            ProcessEvent::StdoutClosed => self.stdout_closed = true,
            _ => {}
        }
        Some((at, event))
    }

    /// The next event of a client adapter, as the engine takes it: its stdout lines are
    /// outcome reports (the protocol travels elsewhere), its exit is the target's, and the
    /// rest (a partial line, the end of stdout) is only bookkeeping. `None` once nothing more
    /// can come. Cancel-safe.
    pub async fn recv_adapter(&mut self) -> Option<(Instant, Event)> {
        loop {
            let (at, event) = self.recv().await?;
            let event = match event {
                ProcessEvent::Line(bytes) | ProcessEvent::Unterminated(bytes) => {
                    Event::AdapterLine(bytes)
                }
                ProcessEvent::Overlong => Event::AdapterOverlong,
                ProcessEvent::StdoutClosed if self.finished() => return None,
                ProcessEvent::Partial | ProcessEvent::StdoutClosed => continue,
                ProcessEvent::Exited(status) => Event::Exited(status),
            };
            return Some((at, event));
        }
    }

    /// Whether nothing more can come from the process: its stdout has ended and it exited.
    pub fn finished(&self) -> bool {
        self.stdout_closed && self.exited.is_some()
    }

    /// Its process group (it leads one of its own).
    pub fn group(&self) -> i32 {
        self.pid
    }

    /// The exit status, once the process has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.exited
    }

    /// Adds a note to the log, in the timeline of its stderr.
    pub fn note(&self, text: String) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.started.elapsed(), text);
    }

    /// Takes the log out (at the end of a run).
    pub fn take_log(&self) -> TargetLog {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Ends the process: closes stdin, gives it `grace` to exit, then kills its whole process
    /// group and waits until the process is reaped. Output not read by then is dropped (it
    /// may be megabytes of a flood: waiting for the exit does not wait for it).
    pub async fn shutdown(&mut self, grace: Duration) {
        self.close_stdin();
        let _ = tokio::time::timeout(grace, self.reaped.wait_for(Option::is_some)).await;
        self.kill_group();
        let hard = Duration::from_secs(5);
        let _ = tokio::time::timeout(hard, self.reaped.wait_for(Option::is_some)).await;
        if let Some(status) = *self.reaped.borrow() {
            self.exited.get_or_insert(status);
        }
    }

    /// [`Process::shutdown`], then its log: how every transport's own shutdown ends.
    pub async fn end(&mut self, grace: Duration) -> TargetLog {
        self.shutdown(grace).await;
        self.take_log()
    }

    /// Kills the whole process group at once, and every process the target started that left
    /// it (see [`reap`]).
    pub fn kill_group(&self) {
        reap::kill_group(self.pid);
        reap::kill_tagged(&self.tag, self.pid);
    }
}

impl Drop for Process {
    /// The group may outlive its leader (children it started), so it stays listed, and is
    /// killed once more, until the process is dropped.
    fn drop(&mut self) {
        // Children the process started in its group die with it, also on unwinding.
        self.kill_group();
        reap::discharge(self.pid);
    }
}

/// The command that starts `launch`, without a shell, in a process group of its own, carrying
/// `tag` (see [`reap`]).
fn command(launch: &Launch, tag: &str) -> std::io::Result<Command> {
    let (program, args) = launch
        .argv
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .env(reap::TAG_ENV, tag)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = &launch.cwd {
        cmd.current_dir(dir);
    }
    Ok(cmd)
}

/// Where the reading tasks report: the event, and what it counts against the room.
type Events = mpsc::UnboundedSender<(Instant, ProcessEvent, u32)>;

/// Turns stdout into events, each stamped when it was read and waiting for `room` (which the
/// receiver gives back as it takes the event), and ends with [`ProcessEvent::StdoutClosed`].
async fn read_stdout(stdout: ChildStdout, tx: Events, room: Arc<Semaphore>) {
    read_lines(stdout, MAX_LINE, |chunk| {
        let at = Instant::now();
        let event = match chunk {
            Chunk::Line(bytes) => ProcessEvent::Line(bytes),
            Chunk::Overlong => ProcessEvent::Overlong,
            Chunk::Partial => ProcessEvent::Partial,
            Chunk::Unterminated(bytes) => ProcessEvent::Unterminated(bytes),
        };
        let tx = tx.clone();
        let room = room.clone();
        async move {
            let cost = match &event {
                ProcessEvent::Line(bytes) | ProcessEvent::Unterminated(bytes) => bytes.len(),
                _ => 0,
            }
            .clamp(EVENT_COST, UNREAD_BYTES) as u32;
            match room.acquire_many(cost).await {
                Ok(permit) => permit.forget(),
                Err(_) => return false,
            }
            tx.send((at, event, cost)).is_ok()
        }
    })
    .await;
    let _ = tx.send((Instant::now(), ProcessEvent::StdoutClosed, 0));
}

/// Keeps stderr in `log`, line by line, stamped with the time since `started`.
async fn read_stderr(stderr: ChildStderr, log: Arc<Mutex<TargetLog>>, started: Instant) {
    read_lines(stderr, STDERR_LINE_MAX, |chunk| {
        let text = match chunk {
            Chunk::Line(bytes) | Chunk::Unterminated(bytes) => {
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Chunk::Overlong => format!("[a line of more than {STDERR_LINE_MAX} bytes, cut]"),
            Chunk::Partial => return std::future::ready(true),
        };
        log.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(started.elapsed(), text);
        std::future::ready(true)
    })
    .await;
}
