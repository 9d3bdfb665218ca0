//! The server child process: spawning it in its own process group and shutting the whole
//! group down in order, within bounded time.
//!
//! MCP's stdio shutdown is a ladder (STD-06): close the server's stdin and wait, then
//! SIGTERM and wait, then SIGKILL; the child is always reaped. The server runs in its own
//! process group so that whatever it started (a grandchild that still holds its stdout)
//! is signalled with it and does not outlive the client.

// The reaping module: the libc calls on the server's process group, each with its SAFETY
// note (the workspace denies `unsafe` elsewhere).
#![allow(unsafe_code)]

use crate::log::warn;
use std::ffi::OsString;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio::time::Instant;

/// How often the group is checked for stragglers after its leader exited.
const GROUP_POLL: Duration = Duration::from_millis(20);
/// How long a SIGKILLed process may take to be reaped before we stop waiting.
const KILL_PATIENCE: Duration = Duration::from_secs(10);

pub(crate) struct ServerProcess {
    /// The child's pid, which is also its process group id.
    pid: libc::pid_t,
    /// The exit status once the child has been reaped.
    exited: watch::Receiver<Option<ExitStatus>>,
}

impl ServerProcess {
    /// Starts `argv[0]` with the remaining arguments in a new process group; stderr is
    /// inherited.
    pub(crate) fn spawn(argv: &[OsString]) -> io::Result<(Self, ChildStdin, ChildStdout)> {
        let Some((program, args)) = argv.split_first() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no server command given; pass the server's argv after --",
            ));
        };
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot start server {program:?}: {e}; check the path and permissions"),
                )
            })?;
        let pid = child
            .id()
            .and_then(|pid| libc::pid_t::try_from(pid).ok())
            .ok_or_else(|| io::Error::other("the server has no pid; this is a bug"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other(
                "server pipes were not created; this is a bug",
            ));
        };
        let (tx, exited) = watch::channel(None);
        tokio::spawn(async move {
            // Reaps the child as soon as it exits; if waiting fails, the child is killed
            // when this task drops it (kill_on_drop).
            if let Ok(status) = child.wait().await {
                let _ = tx.send(Some(status));
            }
        });
        Ok((Self { pid, exited }, stdin, stdout))
    }

    /// A receiver that sees the exit status once the child has exited.
    pub(crate) fn exit_watch(&self) -> watch::Receiver<Option<ExitStatus>> {
        self.exited.clone()
    }

    /// Waits for exit until `first_deadline` (the caller has closed stdin), then sends the
    /// group SIGTERM and waits `grace`, then SIGKILL. Once the child is gone, anything left
    /// in its group gets SIGTERM, `grace`, then SIGKILL. Always bounded.
    pub(crate) async fn shutdown(
        mut self,
        first_deadline: Instant,
        grace: Duration,
    ) -> io::Result<ExitStatus> {
        let status = match self.wait_until(first_deadline).await {
            Some(status) => status,
            None => {
                self.signal_group(libc::SIGTERM);
                // A stopped server cannot act on SIGTERM until it continues.
                self.signal_group(libc::SIGCONT);
                match self.wait_until(Instant::now() + grace).await {
                    Some(status) => status,
                    None => {
                        warn("the server ignored stdin close and SIGTERM; killing it");
                        self.signal_group(libc::SIGKILL);
                        self.wait_until(Instant::now() + KILL_PATIENCE)
                            .await
                            .ok_or_else(|| {
                                io::Error::other(format!(
                                    "the server (pid {}) did not die {KILL_PATIENCE:?} after SIGKILL; it may be stuck in the kernel",
                                    self.pid
                                ))
                            })?
                    }
                }
            }
        };
        self.end_group(grace).await;
        Ok(status)
    }

    async fn wait_until(&mut self, deadline: Instant) -> Option<ExitStatus> {
        let exited = self.exited.wait_for(Option::is_some);
        match tokio::time::timeout_at(deadline, exited).await {
            Ok(Ok(status)) => *status,
            // The waiting task is gone without a status: the child was killed with it.
            Ok(Err(_)) | Err(_) => None,
        }
    }

    /// Ends what the server left running in its group (SIGTERM, `grace`, SIGKILL).
    async fn end_group(&self, grace: Duration) {
        if !self.group_alive() {
            return;
        }
        warn("the server left processes running in its process group; stopping them");
        self.signal_group(libc::SIGTERM);
        self.signal_group(libc::SIGCONT);
        let deadline = Instant::now() + grace;
        while self.group_alive() && Instant::now() < deadline {
            tokio::time::sleep(GROUP_POLL).await;
        }
        if self.group_alive() {
            self.signal_group(libc::SIGKILL);
        }
    }

    fn group_alive(&self) -> bool {
        // SAFETY: killpg(2) with signal 0 only checks whether the group exists.
        unsafe { libc::killpg(self.pid, 0) == 0 }
    }

    fn signal_group(&self, signal: libc::c_int) {
        // SAFETY: killpg(2) has no memory-safety preconditions. The group was created for
        // the server; while any member lives, its id cannot be reused.
        unsafe {
            libc::killpg(self.pid, signal);
        }
    }
}

impl Drop for ServerProcess {
    /// A client dropped without `close` still leaves nothing behind.
    fn drop(&mut self) {
        self.signal_group(libc::SIGKILL);
    }
}
