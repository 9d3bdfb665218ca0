//! The transcript: everything exchanged with the target, in the order the harness saw it.
//!
//! It is kept for every run, rendered in the case format (so a dump reads like a case and can
//! seed a new one), and is the "actual" side of every diff.

use crate::exchange::Channel;
use crate::exchange::TargetLog;
use crate::pattern::{self, canonical, Captures};
use std::fmt::Write as _;
use std::time::Duration;

/// Who wrote a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The harness wrote it to the target (`>` when the target is a server).
    Sent,
    /// The target wrote it (`<` when the target is a server).
    Received,
    /// The transport reported something about a channel (an HTTP status, a stream's end):
    /// no message, but part of the timeline.
    Transport,
}

/// One message of the transcript.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Time since the target started.
    pub at: Duration,
    /// Who wrote it.
    pub direction: Direction,
    /// The line as written (lossy UTF-8 for display; an overlong line is summarised).
    pub text: String,
    /// The parsed message, when it was JSON.
    pub value: Option<serde_json::Value>,
    /// True for messages the harness itself added (handshake, barrier, witness, replies to
    /// the target's own requests), which cases do not write.
    pub internal: bool,
    /// The case line a `<` step matched this message with, if any.
    pub consumed_by: Option<usize>,
    /// The message as the diff shows it: normalised toward the pattern it was compared with.
    pub shown: Option<String>,
    /// Where it travelled.
    pub channel: Channel,
    /// The session it belongs to (HTTP cases may hold several; 0 is the first).
    pub session: usize,
    /// The harness added the stateless era's `_meta` to the case's line before sending it.
    pub stamped: bool,
}

impl Entry {
    /// A message the harness wrote, `at` after the target started.
    pub fn sent(
        at: Duration,
        text: String,
        value: Option<serde_json::Value>,
        internal: bool,
    ) -> Entry {
        Entry {
            at,
            direction: Direction::Sent,
            text,
            value,
            internal,
            consumed_by: None,
            shown: None,
            channel: Channel::Stdio,
            session: 0,
            stamped: false,
        }
    }

    /// A message the target wrote, `at` after it started.
    pub fn received(
        at: Duration,
        channel: Channel,
        text: String,
        value: Option<serde_json::Value>,
    ) -> Entry {
        Entry {
            at,
            direction: Direction::Received,
            text,
            value,
            internal: false,
            consumed_by: None,
            shown: None,
            channel,
            session: 0,
            stamped: false,
        }
    }

    /// Something the transport reported about `channel`, `at` after the target started.
    pub fn event(at: Duration, channel: Channel, text: String) -> Entry {
        Entry {
            at,
            direction: Direction::Transport,
            text,
            value: None,
            internal: true,
            consumed_by: None,
            shown: None,
            channel,
            session: 0,
            stamped: false,
        }
    }

    /// The arrow of this entry in case format: `>` client to server, `<` server to client.
    pub fn arrow(&self, target_is_server: bool) -> char {
        match (self.direction, target_is_server) {
            (Direction::Sent, true) | (Direction::Received, false) => '>',
            _ => '<',
        }
    }
}

/// Renders a transcript in case format, with times and stderr as comments.
pub fn render(entries: &[Entry], stderr: &TargetLog, target_is_server: bool) -> String {
    let mut out = String::new();
    let mut err = stderr.lines.iter().peekable();
    for entry in entries {
        while let Some((at, line)) = err.next_if(|(at, _)| *at <= entry.at) {
            let _ = writeln!(out, "# stderr {}: {line}", millis(*at));
        }
        if entry.direction == Direction::Transport {
            let _ = writeln!(out, "# {} {}", millis(entry.at), entry.text);
            continue;
        }
        let channel = match entry.channel {
            Channel::Stdio => String::new(),
            other => format!(" {other}"),
        };
        let _ = writeln!(
            out,
            "# {}{}{}{channel}",
            millis(entry.at),
            if entry.internal { " (harness)" } else { "" },
            if entry.stamped { " (stamped)" } else { "" }
        );
        let _ = writeln!(out, "{} {}", entry.arrow(target_is_server), entry.text);
    }
    for (at, line) in err {
        let _ = writeln!(out, "# stderr {}: {line}", millis(*at));
    }
    let dropped = stderr.total.saturating_sub(stderr.lines.len());
    if dropped > 0 {
        let _ = writeln!(out, "# stderr: {dropped} earlier lines not kept");
    }
    out
}

/// `+12.3ms`
pub fn millis(d: Duration) -> String {
    format!("+{:.1}ms", d.as_secs_f64() * 1000.0)
}

/// A span as a person reads it in a sentence: `850 ms`, `15.0 s`.
pub fn span(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Finds the first message of session `session` the target wrote that no step has taken yet
/// and that matches `pattern`, marks it as taken by case line `line` (normalised toward the
/// pattern for the diff), and returns its index and when it arrived.
pub fn take_match(
    entries: &mut [Entry],
    pattern: &serde_json::Value,
    captures: &mut Captures,
    line: usize,
    session: usize,
) -> Option<(usize, Duration)> {
    take_match_from(entries, 0, pattern, captures, line, session)
}

/// [`take_match`] among the entries from index `from` on.
pub fn take_match_from(
    entries: &mut [Entry],
    from: usize,
    pattern: &serde_json::Value,
    captures: &mut Captures,
    line: usize,
    session: usize,
) -> Option<(usize, Duration)> {
    let (index, entry) = entries.iter_mut().enumerate().skip(from).find(|(_, e)| {
        e.direction == Direction::Received
            && e.consumed_by.is_none()
            && !e.internal
            && e.session == session
            && e.value
                .as_ref()
                .is_some_and(|v| pattern::matches(pattern, v, captures))
    })?;
    let value = entry.value.as_ref()?;
    entry.shown = Some(canonical(&pattern::normalize(pattern, value, captures)));
    entry.consumed_by = Some(line);
    Some((index, entry.at))
}

/// How a line shows the channel a message travelled on: nothing on stdio, and over HTTP the
/// channel when it is where the case expected it (or the case did not say), so that only a
/// message on the wrong stream shows a difference.
pub fn channel_prefix(expected: Option<Channel>, actual: Channel) -> String {
    match (expected, actual) {
        (_, Channel::Stdio) => String::new(),
        (None, _) => String::new(),
        (Some(_), actual) => format!("{actual} "),
    }
}
