//! The steps of a case: what the harness sends, what it expects, and the `!` controls
//! (waits, cancels, checks, blocks that repeat), each with the line it came from. Apart from
//! the case's headers because the engine walks these and nothing else.

use super::Poll;
use serde_json::Value;
use std::time::Duration;

/// A duration that is either written in the case or taken from a loop variable (milliseconds).
#[derive(Debug, Clone, PartialEq)]
pub enum Span {
    /// A fixed duration such as `100ms`.
    Fixed(Duration),
    /// `{$name}`: the loop variable's value, in milliseconds.
    Var(String),
}

impl Span {
    /// The duration, with a loop variable's value read from `captures`.
    pub fn resolve(&self, captures: &crate::pattern::Captures) -> Duration {
        match self {
            Span::Fixed(d) => *d,
            Span::Var(name) => {
                Duration::from_millis(captures.get(name).and_then(Value::as_u64).unwrap_or(0))
            }
        }
    }
}

/// The loop variables one round of a `! repeat` or `! sweep` binds: name and value.
pub type Bindings = Vec<(String, Value)>;

impl StepKind {
    /// For `! repeat` and `! sweep`: the inner steps and, per round, the loop variables to bind.
    pub fn rounds(&self) -> Option<(&[Step], Vec<Bindings>)> {
        match self {
            StepKind::Repeat { count, steps } => Some((
                steps,
                (0..*count)
                    .map(|i| vec![("i".to_string(), Value::from(i))])
                    .collect(),
            )),
            StepKind::Sweep { var, values, steps } => Some((
                steps,
                values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        vec![
                            ("i".to_string(), Value::from(i)),
                            (var.clone(), Value::from(*v)),
                        ]
                    })
                    .collect(),
            )),
            _ => None,
        }
    }

    /// The steps inside a block (`! repeat`, `! sweep`, `! poll`), if this is one.
    pub fn inner(&self) -> Option<&[Step]> {
        match self {
            StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. } => Some(steps),
            StepKind::Poll(poll) => Some(&poll.steps),
            _ => None,
        }
    }

    /// The steps inside a block, to add to while it is parsed.
    pub(crate) fn inner_mut(&mut self) -> Option<&mut Vec<Step>> {
        match self {
            StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. } => Some(steps),
            StepKind::Poll(poll) => Some(&mut poll.steps),
            _ => None,
        }
    }
}

/// One line of a case that does something.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// 1-based line number in the case file.
    pub line: usize,
    /// What the line asks for.
    pub kind: StepKind,
}

/// The things a step can ask the harness to do.
#[derive(Debug, Clone, PartialEq)]
pub enum StepKind {
    /// A message the harness writes, verbatim but for `{$name}` references, as one line
    /// (`>` when the target is a server, `<` when it is a client).
    Send(String),
    /// A message the harness waits for, as a pattern (raw text; loop variables are filled in
    /// before it is parsed): `<` when the target is a server, `>` when it is a client.
    Expect(String),
    /// `! barrier`: a ping whose answer proves the target has read everything sent before it.
    Barrier,
    /// `! alive ID`: the server still serves, shown with what every server has: a request
    /// with id ID that the era always offers (`ping` up to 2025-11-25, `server/discover` in
    /// 2026-07-28) gets a result. A case line like any other, so the diff shows it.
    Alive(String),
    /// `! cancel ID [reason]`: cancel the harness's request ID the way the protocol version
    /// and the transport call for (`notifications/cancelled`, or closing the request's
    /// stream on 2026-07-28 HTTP).
    Cancel {
        /// The id of the request to cancel.
        id: String,
        /// The cancel's `reason`, when the case gives one.
        reason: Option<String>,
    },
    /// `! cancelled ID` (client cases): the client cancels its request ID the way the protocol
    /// version and the transport call for: `notifications/cancelled` with the exact id, or
    /// closing the request's response stream on 2026-07-28 HTTP (CAN-12).
    Cancelled(String),
    /// `! after D`: wait until D has passed since the last `>` line was sent.
    After(Span),
    /// `! wait D`: watch the target for a time window.
    Wait(Span),
    /// `! silent ID D`: watch for D, then judge every message about request ID since the last
    /// barrier (the request must have been cancelled or answered).
    Silent {
        /// The id of the request watched.
        id: String,
        /// How long to watch.
        window: Span,
    },
    /// `! witness ID…`: ask the `cancellations` fixture which requests saw their cancellation;
    /// every listed id must be there.
    Witness(Vec<String>),
    /// `! arrives FROM..TO`: the next expected message must arrive between FROM and TO after
    /// the message the previous expectation matched (a deadline, give or take).
    Arrives(Arrival),
    /// `! close-stdin`: close the target's standard input.
    CloseStdin,
    /// `! exit D`: the target must exit within D.
    Exit(Span),
    /// `! witness not ID…`: the `cancellations` fixture must list none of these (their work
    /// goes on).
    Unwitnessed(Vec<String>),
    /// `! header NAME: VALUE`: the next `>` message's POST carries this header; an empty
    /// value removes a header the harness would send (HTTP).
    Header {
        /// The header's name.
        name: String,
        /// Its value; empty removes the header.
        value: String,
    },
    /// `! status CODE|…`: the HTTP status of the request just made must be one of these
    /// (`202`, `4xx`). It follows the `>` line, `! listen` or `! delete-session` it judges.
    Status(Vec<String>),
    /// `! disconnect ID`: closes the response stream of request ID without cancelling it
    /// (HTTP).
    Disconnect(String),
    /// `! session NAME`: switches to session NAME, opening it with its own handshake when it
    /// is new; the first session is `main` (HTTP).
    Session(String),
    /// `! delete-session`: ends the current session with a DELETE (HTTP).
    DeleteSession,
    /// `! listen`: opens a GET stream in the current session (HTTP).
    Listen,
    /// `! server-exit`: the harness's server exits on its own (client cases).
    ServerExit,
    /// `! expire-session`: the harness's server forgets the client's session, so requests
    /// that carry it get 404 (client cases, HTTP).
    ExpireSession,
    /// `! repeat N` … `! end`: the inner steps N times, with `{$i}` = 0, 1, …
    Repeat {
        /// How many times.
        count: usize,
        /// The steps repeated.
        steps: Vec<Step>,
    },
    /// `! sweep NAME FROM..TO step BY` … `! end`: the inner steps once per value (milliseconds),
    /// with `{$NAME}` the value and `{$i}` the iteration.
    Sweep {
        /// The variable's name.
        var: String,
        /// Its values, in milliseconds.
        values: Vec<u64>,
        /// The steps carried out once per value.
        steps: Vec<Step>,
    },
    /// `! poll N every D` … `! end`: one request sent again and again (`{$i}` = 0, 1, …) until
    /// its response matches one of the expected lines after it (see [`Poll`]).
    Poll(Poll),
}

/// When a message may arrive, relative to the one matched before it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    /// The earliest.
    pub from: Duration,
    /// The latest.
    pub to: Duration,
    /// The case line that set it.
    pub line: usize,
}

impl Arrival {
    /// A complaint when a message came `gap` after the one before it, outside the window.
    pub fn judge(&self, gap: Duration) -> Option<String> {
        (gap < self.from || gap > self.to).then(|| {
            format!(
                "the message arrived {:.0} ms after the one before it; line {} allows {:.0} to {:.0} ms",
                gap.as_secs_f64() * 1000.0,
                self.line,
                self.from.as_secs_f64() * 1000.0,
                self.to.as_secs_f64() * 1000.0
            )
        })
    }
}
