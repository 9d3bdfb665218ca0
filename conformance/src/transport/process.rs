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
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::time::Instant as Deadline;

/// The longest stdout line the harness accepts; longer ones are reported and discarded.
pub const MAX_LINE: usize = 4 * 1024 * 1024;
/// How many stderr lines are kept for the transcript; older ones are counted, not kept.
pub const LOG_KEPT: usize = 200;
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

/// What the target printed on stderr, bounded (the last [`LOG_KEPT`] lines with their times;
/// the count goes on), and what the harness noted about it on the way (relay events, adapter
/// output), in the same timeline.
#[derive(Debug, Default, Clone)]
pub struct TargetLog {
    /// Kept lines with the time since the target started.
    pub lines: VecDeque<(Duration, String)>,
    /// Every line seen, kept or not.
    pub total: usize,
}

impl TargetLog {
    /// Adds a line seen `at` after the start.
    pub fn push(&mut self, at: Duration, line: String) {
        self.total += 1;
        if self.lines.len() == LOG_KEPT {
            self.lines.pop_front();
        }
        self.lines.push_back((at, line));
    }

    /// The last `n` kept lines.
    pub fn tail(&self, n: usize) -> Vec<String> {
        let skip = self.lines.len().saturating_sub(n);
        self.lines
            .iter()
            .skip(skip)
            .map(|(_, l)| l.clone())
            .collect()
    }
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
    events: mpsc::Receiver<(Instant, ProcessEvent)>,
    /// Its stderr so far, and notes about it.
    pub log: Arc<Mutex<TargetLog>>,
    /// When it was started.
    pub started: Instant,
    exited: Option<ExitStatus>,
}

impl Process {
    /// Starts the process with piped stdin, stdout and stderr. Must be called inside a tokio
    /// runtime.
    pub fn spawn(launch: &Launch) -> std::io::Result<Process> {
        let (program, args) = launch.argv.split_first().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command")
        })?;
        let tag = reap::new_tag();
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .env(reap::TAG_ENV, &tag)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(dir) = &launch.cwd {
            cmd.current_dir(dir);
        }
        let (mut child, pid) = reap::start(|| {
            let child = cmd.spawn()?;
            let pid = child.id().map(|p| p as i32).unwrap_or(0);
            Ok(((child, pid), pid))
        })?;
        let started = Instant::now();
        let (tx, events) = mpsc::channel(256);
        let log = Arc::new(Mutex::new(TargetLog::default()));
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let stdin = child.stdin.take();
        let out_tx = tx.clone();
        tokio::spawn(async move {
            read_lines(stdout, MAX_LINE, |chunk| {
                let event = match chunk {
                    Chunk::Line(bytes) => ProcessEvent::Line(bytes),
                    Chunk::Overlong => ProcessEvent::Overlong,
                    Chunk::Partial => ProcessEvent::Partial,
                };
                let tx = out_tx.clone();
                async move { tx.send((Instant::now(), event)).await.is_ok() }
            })
            .await;
            let _ = out_tx
                .send((Instant::now(), ProcessEvent::StdoutClosed))
                .await;
        });
        let err_log = log.clone();
        tokio::spawn(async move {
            read_lines(stderr, STDERR_LINE_MAX, |chunk| {
                let text = match chunk {
                    Chunk::Line(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    Chunk::Overlong => {
                        format!("[a line of more than {STDERR_LINE_MAX} bytes, cut]")
                    }
                    Chunk::Partial => return std::future::ready(true),
                };
                err_log
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(started.elapsed(), text);
                std::future::ready(true)
            })
            .await;
        });
        tokio::spawn(async move {
            if let Ok(status) = child.wait().await {
                let _ = tx
                    .send((Instant::now(), ProcessEvent::Exited(status)))
                    .await;
            }
        });
        Ok(Process {
            pid,
            tag,
            stdin,
            events,
            log,
            started,
            exited: None,
        })
    }

    /// Writes one line (a newline is added). Gives up when stdin stays full for `patience`.
    pub async fn write_line(&mut self, line: &[u8], patience: Duration) -> Result<(), WriteError> {
        let stdin = self.stdin.as_mut().ok_or(WriteError::Closed)?;
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line);
        buf.push(b'\n');
        let write = async {
            stdin.write_all(&buf).await?;
            stdin.flush().await
        };
        match tokio::time::timeout(patience, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(WriteError::Closed),
            Err(_) => {
                // A half-written line cannot be finished; nothing more goes to this stdin.
                self.stdin = None;
                Err(WriteError::Stalled(patience))
            }
        }
    }

    /// Closes the process's stdin, the stdio way of asking it to exit.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
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
        let (at, event) = self.events.recv().await?;
        if let ProcessEvent::Exited(status) = &event {
            self.exited = Some(*status);
        }
        Some((at, event))
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
    /// group and waits until the process is reaped. Events that arrive meanwhile are dropped.
    pub async fn shutdown(&mut self, grace: Duration) {
        self.close_stdin();
        let deadline = Deadline::now() + grace;
        while self.exited.is_none() {
            if self.next_event(deadline).await.is_none() {
                break;
            }
        }
        self.kill_group();
        let hard = Deadline::now() + Duration::from_secs(5);
        while self.exited.is_none() {
            if self.next_event(hard).await.is_none() {
                break;
            }
        }
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
