//! The server child process: spawning it and shutting it down in order.
//!
//! MCP's stdio shutdown is a ladder (STD-06): close the server's stdin and
//! wait, then SIGTERM and wait, then SIGKILL; the child is always reaped.

use std::ffi::OsString;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub(crate) struct ServerProcess {
    child: Child,
}

impl ServerProcess {
    /// Starts `argv[0]` with the remaining arguments; stderr is inherited.
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
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot start server {program:?}: {e}; check the path and permissions"),
                )
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other(
                "server pipes were not created; this is a bug",
            ));
        };
        Ok((Self { child }, stdin, stdout))
    }

    /// Waits for exit after stdin was closed; escalates to SIGTERM, then
    /// SIGKILL, each after `grace`.
    pub(crate) async fn shutdown(mut self, grace: Duration) -> io::Result<ExitStatus> {
        if let Ok(status) = tokio::time::timeout(grace, self.child.wait()).await {
            return status;
        }
        self.terminate();
        if let Ok(status) = tokio::time::timeout(grace, self.child.wait()).await {
            return status;
        }
        eprintln!("reference-client: server ignored stdin close and SIGTERM; killing it");
        self.child.kill().await?;
        self.child.wait().await
    }

    #[cfg(unix)]
    fn terminate(&mut self) {
        if let Some(pid) = self
            .child
            .id()
            .and_then(|pid| libc::pid_t::try_from(pid).ok())
        {
            // SAFETY: kill(2) has no memory-safety preconditions; the pid is
            // our own unreaped child, so it cannot have been recycled.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }

    #[cfg(not(unix))]
    fn terminate(&mut self) {
        let _ = self.child.start_kill();
    }
}
