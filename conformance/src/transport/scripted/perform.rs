//! What a scripted target's acts are on the wire: the events a real transport of its role
//! would report when the target writes, closes its output or exits, and where a message the
//! harness sends goes.

use super::{Act, Due, Role, Scripted};
use crate::time as clock;
use crate::transport::{Channel, Event, PeerSignal};
use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Instant;

impl Scripted {
    /// Whether the target's side of the conversation is gone, so nothing it is sent arrives.
    pub(super) fn gone(&self) -> bool {
        self.exited.is_some()
            || match self.role {
                Role::StdioServer => false,
                Role::StdioClient => !self.connected || self.output_closed,
                Role::HttpServer | Role::HttpClient => false,
            }
    }

    /// Carries out what is due at `at`.
    pub(super) fn perform(&mut self, at: Instant, due: Due) {
        let act = match due {
            Due::Event(event) => return self.ready.push_back((at, event)),
            Due::Head(channel) => {
                let head = self.server_posts.head(channel);
                return self.ready.extend(head.map(|e| (at, e)));
            }
            Due::Act(act) => act,
        };
        if self.exited.is_some() {
            return;
        }
        match act {
            Act::Send(message) => self.write(at, Some(&message), message.to_string().into_bytes()),
            Act::Raw(text) => self.write(
                at,
                serde_json::from_str(&text).ok().as_ref(),
                text.into_bytes(),
            ),
            Act::Outcome(line) => self
                .ready
                .push_back((at, Event::AdapterLine(line.to_string().into_bytes()))),
            Act::StopReading => self.reading = false,
            Act::Read => self.reading = true,
            Act::CloseOutput => self.close_output(at),
            Act::Exit(code) => self.exit(at, code),
            Act::Connect if self.role == Role::StdioClient && !self.connected => {
                self.connected = true;
                self.ready.push_back((at, Event::Connected(1)));
            }
            Act::Connect => {}
            Act::Decide(decide) => {
                for (after, act) in decide() {
                    self.schedule(at + after, Due::Act(act));
                }
            }
            Act::Signal(signal) => {
                self.ready.push_back((
                    at,
                    Event::Signal {
                        channel: Channel::Stdio,
                        signal,
                    },
                ));
                if signal == PeerSignal::Ended {
                    self.output_closed = true;
                }
            }
        }
    }

    /// The target writes one message.
    fn write(&mut self, at: Instant, message: Option<&Value>, bytes: Vec<u8>) {
        let events = match self.role {
            Role::StdioServer | Role::StdioClient if self.output_closed || !self.connected => {
                vec![]
            }
            Role::StdioServer | Role::StdioClient => vec![Event::Message {
                channel: Channel::Stdio,
                bytes,
            }],
            Role::HttpServer => self.server_posts.write(message, bytes),
            Role::HttpClient => self.client_posts.post(message, bytes),
        };
        self.ready.extend(events.into_iter().map(|e| (at, e)));
    }

    /// The target's output ends.
    fn close_output(&mut self, at: Instant) {
        if std::mem::replace(&mut self.output_closed, true) {
            return;
        }
        match self.role {
            Role::StdioServer => self.ready.push_back((at, Event::OutputClosed)),
            Role::StdioClient if self.connected => self.ready.push_back((
                at,
                Event::Signal {
                    channel: Channel::Stdio,
                    signal: PeerSignal::Ended,
                },
            )),
            Role::StdioClient | Role::HttpClient => {}
            Role::HttpServer => {
                let broken = self.server_posts.break_all();
                self.ready.extend(broken.into_iter().map(|e| (at, e)));
            }
        }
    }

    /// The target's process exits with `code`: its output ends first.
    fn exit(&mut self, at: Instant, code: i32) {
        self.close_output(at);
        let status = ExitStatus::from_raw((code & 0xff) << 8);
        self.exited = Some(status);
        self.ready.push_back((at, Event::Exited(status)));
    }

    /// Where a message the harness sends goes, and what the transport reports at once.
    pub(super) fn route(
        &mut self,
        message: Option<&Value>,
        reply_to: Option<Channel>,
    ) -> Option<Channel> {
        match self.role {
            Role::StdioServer | Role::StdioClient => Some(Channel::Stdio),
            Role::HttpServer => {
                let (channel, events) = self.server_posts.post(message);
                let now = clock::now();
                if let Some(after) = self.accepts_after {
                    for event in events {
                        self.schedule(now + after, Due::Event(event));
                    }
                }
                if let Some(after) = self.heads_after {
                    self.schedule(now + after, Due::Head(channel));
                }
                Some(channel)
            }
            Role::HttpClient => self.client_posts.deliver(message, reply_to),
        }
    }
}
