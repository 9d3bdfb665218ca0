//! The target process: spawned from an argv (never a shell), in its own process group, with
//! every output drained concurrently and bounded, and always killed and reaped.
//!
//! A misbehaving target must never hang or exhaust the harness: stdout lines are cut at
//! [`MAX_LINE`] without buffering the rest, stderr keeps only a bounded log, and the whole
//! process group is killed when the run ends, also when the harness unwinds from a panic.

use bytes::BytesMut;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};
use tokio::sync::mpsc;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder};

/// The longest stdout line the harness accepts; longer ones are reported and discarded.
pub const MAX_LINE: usize = 4 * 1024 * 1024;
/// How many stderr lines are kept for the transcript; older ones are counted, not kept.
pub const STDERR_KEPT: usize = 200;
const STDERR_LINE_MAX: usize = 4096;

/// How to start a target.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Program and arguments, run without a shell.
    pub argv: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory, if not the harness's own.
    pub cwd: Option<PathBuf>,
}

/// The target's command line as shown in reports.
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

/// Something the target did, stamped with when the harness saw it.
#[derive(Debug)]
pub enum Event {
    /// One line of stdout, without its newline.
    Line(Vec<u8>),
    /// A stdout line longer than [`MAX_LINE`]; its bytes were discarded.
    Overlong,
    /// Stdout reached end of file.
    StdoutClosed,
    /// The process exited.
    Exited(ExitStatus),
}

/// The target's stderr, bounded: the first lines are kept with their times; the count goes on.
#[derive(Debug, Default, Clone)]
pub struct StderrLog {
    /// Kept lines with the time since the target started.
    pub lines: VecDeque<(Duration, String)>,
    /// Every line seen, kept or not.
    pub total: usize,
}

impl StderrLog {
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

/// A running target.
pub struct Target {
    pid: i32,
    stdin: Option<ChildStdin>,
    events: mpsc::Receiver<(Instant, Event)>,
    /// Its stderr so far.
    pub stderr: Arc<Mutex<StderrLog>>,
    /// When it was started.
    pub started: Instant,
    exited: Option<ExitStatus>,
}

impl Target {
    /// Starts the target. Must be called inside a tokio runtime.
    pub fn spawn(command: &Launch) -> std::io::Result<Target> {
        let (program, args) = command.argv.split_first().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command")
        })?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(dir) = &command.cwd {
            cmd.current_dir(dir);
        }
        let mut child = cmd.spawn()?;
        let started = Instant::now();
        let pid = child.id().map(|p| p as i32).unwrap_or(0);
        let (tx, events) = mpsc::channel(256);
        let stderr = Arc::new(Mutex::new(StderrLog::default()));
        let stdout = child.stdout.take().expect("stdout is piped");
        let err = child.stderr.take().expect("stderr is piped");
        let stdin = child.stdin.take();
        let out_tx = tx.clone();
        tokio::spawn(async move {
            read_lines(stdout, MAX_LINE, |line| {
                let event = match line {
                    Ok(bytes) => Event::Line(bytes),
                    Err(()) => Event::Overlong,
                };
                let tx = out_tx.clone();
                async move { tx.send((Instant::now(), event)).await.is_ok() }
            })
            .await;
            let _ = out_tx.send((Instant::now(), Event::StdoutClosed)).await;
        });
        let log = stderr.clone();
        tokio::spawn(async move {
            read_lines(err, STDERR_LINE_MAX, |line| {
                let text = match line {
                    Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    Err(()) => format!("[a line of more than {STDERR_LINE_MAX} bytes, cut]"),
                };
                let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
                log.total += 1;
                if log.lines.len() == STDERR_KEPT {
                    log.lines.pop_front();
                }
                log.lines.push_back((started.elapsed(), text));
                async { true }
            })
            .await;
        });
        tokio::spawn(async move {
            if let Ok(status) = child.wait().await {
                let _ = tx.send((Instant::now(), Event::Exited(status))).await;
            }
        });
        Ok(Target {
            pid,
            stdin,
            events,
            stderr,
            started,
            exited: None,
        })
    }

    /// Writes one line (a newline is added). Fails when stdin is closed or the target is gone.
    pub async fn send(&mut self, line: &[u8]) -> std::io::Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdin is closed")
        })?;
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line);
        buf.push(b'\n');
        stdin.write_all(&buf).await?;
        stdin.flush().await
    }

    /// Closes the target's stdin, the stdio way of asking it to exit.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next event, or `None` once the deadline passes or nothing more can come.
    pub async fn next_event(&mut self, deadline: tokio::time::Instant) -> Option<(Instant, Event)> {
        match tokio::time::timeout_at(deadline, self.events.recv()).await {
            Ok(Some((at, event))) => {
                if let Event::Exited(status) = &event {
                    self.exited = Some(*status);
                }
                Some((at, event))
            }
            _ => None,
        }
    }

    /// The exit status, once the process has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.exited
    }

    /// Ends the target: closes stdin, gives it `grace` to exit, then kills its whole process
    /// group and waits until the process is reaped.
    pub async fn shutdown(&mut self, grace: Duration) {
        self.close_stdin();
        let deadline = tokio::time::Instant::now() + grace;
        while self.exited.is_none() {
            if self.next_event(deadline).await.is_none() {
                break;
            }
        }
        self.kill_group();
        let hard = tokio::time::Instant::now() + Duration::from_secs(5);
        while self.exited.is_none() {
            if self.next_event(hard).await.is_none() {
                break;
            }
        }
    }

    fn kill_group(&self) {
        if self.pid > 0 {
            // SAFETY: killpg only sends a signal; the group was created for this target.
            unsafe {
                libc::killpg(self.pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        // Children the target started in its group die with it, also on unwinding.
        self.kill_group();
    }
}

/// Reads `\n`-terminated lines, handing each to `sink`; lines over `max` bytes are discarded
/// as they stream by and reported as `Err(())`. Stops at end of file, on a read error, or
/// when `sink` returns false.
pub async fn read_lines<R, F, Fut>(mut reader: R, max: usize, mut sink: F)
where
    R: AsyncRead + Unpin,
    F: FnMut(Result<Vec<u8>, ()>) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut codec = AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), vec![], max);
    let mut buf = BytesMut::with_capacity(8192);
    loop {
        loop {
            let item = match codec.decode(&mut buf) {
                Ok(Some(line)) => {
                    let mut line = line.to_vec();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    Ok(line)
                }
                Ok(None) => break,
                Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => Err(()),
                Err(AnyDelimiterCodecError::Io(_)) => return,
            };
            if !sink(item).await {
                return;
            }
        }
        buf.reserve(8192);
        match reader.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    if let Ok(Some(rest)) = codec.decode_eof(&mut buf) {
        if !rest.is_empty() {
            sink(Ok(rest.to_vec())).await;
        }
    }
}
