//! A server target over stdio: started as a process, one JSON-RPC message per line each way.
//!
//! Stdin is a FIFO the target reads in order and stdout is one ordered stream, so the answer
//! to a later request proves every earlier line was read: the barrier's proof.

use crate::load::source::Load;
use crate::transport::process::{Launch, Process, ProcessEvent, TargetLog, WriteError};
use crate::transport::{Channel, Event, SendError, Transport};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// A stdio server target.
pub struct Stdio {
    process: Process,
    patience: Duration,
    /// The machine's load, which stretches the write patience.
    load: Load,
}

impl Stdio {
    /// Starts the target. A write that the target does not read for `patience` fails.
    pub fn spawn(launch: &Launch, patience: Duration) -> std::io::Result<Stdio> {
        Ok(Stdio {
            process: Process::spawn(launch)?,
            patience,
            load: Load::machine(),
        })
    }
}

impl Transport for Stdio {
    async fn send(&mut self, bytes: &[u8], _: Option<Channel>) -> Result<Channel, SendError> {
        match self
            .process
            .write_line(bytes, self.patience, &self.load)
            .await
        {
            Ok(()) => Ok(Channel::Stdio),
            Err(WriteError::Closed) => Err(SendError::Gone),
            Err(WriteError::Stalled(d)) => Err(SendError::Stalled(d)),
        }
    }

    async fn next(&mut self, deadline: Deadline) -> Option<(Instant, Event)> {
        if self.finished() {
            return None;
        }
        let (at, event) = self.process.next_event(deadline).await?;
        let event = match event {
            ProcessEvent::Line(bytes) => Event::Message {
                channel: Channel::Stdio,
                bytes,
            },
            ProcessEvent::Overlong => Event::Overlong(Channel::Stdio),
            ProcessEvent::Partial => Event::Partial(Channel::Stdio),
            // A last line cut short by an exit the harness asked for (it closed stdin while
            // the server was writing) is the exit's, not a message: kept in the log, not
            // judged. Cut short by an exit of its own, it is judged as any line.
            ProcessEvent::Unterminated(bytes) if self.process.asked_to_exit() => {
                self.process.note(format!(
                    "[stdout, its last line without a newline, cut by the exit asked for: not judged] {}",
                    String::from_utf8_lossy(&bytes)
                ));
                Event::Partial(Channel::Stdio)
            }
            ProcessEvent::Unterminated(bytes) => Event::Message {
                channel: Channel::Stdio,
                bytes,
            },
            ProcessEvent::StdoutClosed => Event::OutputClosed,
            ProcessEvent::Exited(status) => Event::Exited(status),
        };
        Some((at, event))
    }

    fn finished(&self) -> bool {
        self.process.finished()
    }

    fn ordered(&self) -> bool {
        true
    }

    fn load(&self) -> Load {
        self.load.clone()
    }

    fn abort(&mut self, _: Channel) -> bool {
        false
    }

    fn close_input(&mut self) {
        self.process.close_stdin();
    }

    fn input_open(&self) -> bool {
        self.process.stdin_open()
    }

    fn process(&self) -> Option<&Process> {
        Some(&self.process)
    }

    async fn shutdown(&mut self, grace: Duration) -> TargetLog {
        self.process.end(grace).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of a server that writes half a message and exits: when the harness closed
    /// its stdin (`close_stdin`), else at once.
    async fn events_of_a_cut_line(close_stdin: bool) -> (Vec<Event>, TargetLog) {
        let script = if close_stdin {
            r#"cat >/dev/null; printf '{"jsonrpc":"2.0","me'"#
        } else {
            r#"printf '{"jsonrpc":"2.0","me'"#
        };
        let launch = Launch::argv(vec!["sh".into(), "-c".into(), script.into()]);
        let mut io = Stdio::spawn(&launch, Duration::from_secs(5)).unwrap();
        if close_stdin {
            io.close_input();
        }
        let deadline = Deadline::now() + Duration::from_secs(20);
        let mut events = vec![];
        while let Some((_, event)) = io.next(deadline).await {
            events.push(event);
        }
        (events, io.shutdown(Duration::ZERO).await)
    }

    #[tokio::test]
    async fn a_last_line_cut_by_the_exit_the_harness_asked_for_is_not_a_message() {
        let (events, log) = events_of_a_cut_line(true).await;
        let messages = events.iter().filter(|e| matches!(e, Event::Message { .. }));
        assert_eq!(messages.count(), 0, "{events:?}");
        let log = format!("{log:?}");
        assert!(log.contains("cut by the exit asked for"), "{log}");
    }

    #[tokio::test]
    async fn a_last_line_cut_by_an_exit_of_its_own_is_judged_as_a_line() {
        let (events, _) = events_of_a_cut_line(false).await;
        let cut = events.iter().any(
            |e| matches!(e, Event::Message { bytes, .. } if bytes == br#"{"jsonrpc":"2.0","me"#),
        );
        assert!(cut, "{events:?}");
    }
}
