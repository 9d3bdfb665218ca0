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
