//! The walk through a recorded stdio session that turns it into steps: the client's messages
//! become what the harness sends, the server's answers what it expects, and each cancel the
//! steps the case format has for it (placed after the first progress or after the recorded
//! delay, then the barrier and a silence that outlasts whatever the server sent late). What
//! the harness does itself (the opening, answering the server's requests) or what varies
//! between runs (notifications beyond the first progress) is left out, with a comment where a
//! reader of the case would miss it.

use super::{vary, DraftError, Line};
use crate::era::META_VERSION;
use crate::requirement::Req;
use crate::trace::{Event, Party, Stamped, Trace};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

/// The shortest `! silent` after a cancel: long enough for a server that ignores the cancel
/// of a short call to be seen answering.
const SILENCE: Duration = Duration::from_millis(500);
/// A cancel this soon after the request's first (and only) progress followed that progress;
/// a later one followed the clock.
const ON_PROGRESS: Duration = Duration::from_millis(100);
/// The longest `! silent`, well inside a case's default time limit.
const LONGEST_SILENCE: Duration = Duration::from_secs(5);

/// A request the client sent, as the walk has seen it so far.
struct Sent {
    what: String,
    at: Duration,
    token: Option<Value>,
    progress: usize,
    /// When its first progress came.
    first_progress: Option<Duration>,
    answered: bool,
    cancelled: bool,
}

/// What the walk found: the steps and what the header says of them.
#[derive(Default)]
pub(super) struct Walked {
    pub lines: Vec<Line>,
    pub touched: BTreeSet<Req>,
    /// The protocol version the session said it speaks, as the trace gives it.
    pub version: Option<String>,
    pub requests: Vec<String>,
    pub cancels: Vec<String>,
    pub stdio_only: bool,
}

#[derive(Default)]
struct Walk {
    out: Walked,
    sent: HashMap<String, Sent>,
    opening: Option<String>,
    last_send: Duration,
    closed: Option<Duration>,
    unexpected: BTreeMap<String, usize>,
}

/// Walks `trace`'s events in order.
pub(super) fn walk(trace: &Trace) -> Result<Walked, DraftError> {
    let mut w = Walk::default();
    for (i, stamped) in trace.events.iter().enumerate() {
        let later = &trace.events[i + 1..];
        match &stamped.event {
            Event::Message { from, text, .. } => {
                let value = serde_json::from_str::<Value>(text).ok();
                match from {
                    Party::Client => w.client(stamped, text, value.as_ref(), later),
                    Party::Server => w.server(stamped.at, value.as_ref()),
                }
            }
            Event::Closed {
                from: Party::Client,
            } => w.closed = Some(stamped.at),
            Event::Exit { code, signal } => {
                w.exit(stamped.at, *code, *signal);
                break;
            }
            _ => {}
        }
    }
    w.finish(trace)
}

fn key(id: &Value) -> String {
    id.to_string()
}

fn millis(d: Duration) -> u128 {
    d.as_millis() + u128::from(d.subsec_nanos() % 1_000_000 != 0)
}

impl Walk {
    fn client(&mut self, at: &Stamped, text: &str, value: Option<&Value>, later: &[Stamped]) {
        let Some(message) = value else {
            self.send(at.at, text);
            return;
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id");
        match (method, id) {
            (Some("initialize"), Some(id)) => {
                self.opening = Some(key(id));
                self.out.touched.insert(Req::Lif02);
                self.out.version = message
                    .pointer("/params/protocolVersion")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            (Some("notifications/initialized"), None) => {}
            (Some("notifications/cancelled"), None) => self.cancel(at, text, message, later),
            (Some(method), Some(id)) => self.request(at.at, text, method, id, message),
            (Some(_), None) => self.send(at.at, text),
            (None, _) => {} // an answer to the server's request: the harness gives its own
        }
    }

    fn send(&mut self, at: Duration, text: &str) {
        self.out.lines.push(Line::Send(text.to_string()));
        self.last_send = at;
    }

    fn request(&mut self, at: Duration, text: &str, method: &str, id: &Value, message: &Value) {
        let tool = message.pointer("/params/name").and_then(Value::as_str);
        let what = match tool {
            Some(tool) if method == "tools/call" => format!("`{method}` of `{tool}`"),
            _ => format!("`{method}`"),
        };
        let token = message.pointer("/params/_meta/progressToken").cloned();
        if self.out.version.is_none() {
            self.out.version = message
                .pointer(&format!(
                    "/params/_meta/{}",
                    META_VERSION.replace('/', "~1")
                ))
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        self.out.touched.insert(Req::Rpc04);
        if token.is_some() {
            self.out.touched.insert(Req::Prg02);
        }
        if method == "ping" {
            self.out.touched.insert(Req::Ping01);
        }
        if !self.out.requests.contains(&what) {
            self.out.requests.push(what.clone());
        }
        let sent = Sent {
            what,
            at,
            token,
            progress: 0,
            first_progress: None,
            answered: false,
            cancelled: false,
        };
        self.sent.insert(key(id), sent);
        self.send(at, text);
    }
}

impl Walk {
    /// A cancel the client sent: the steps that replay it where the client sent it.
    fn cancel(&mut self, at: &Stamped, text: &str, message: &Value, later: &[Stamped]) {
        let id = message.pointer("/params/requestId");
        let k = id.map(key).unwrap_or_default();
        let Some(sent) = self.sent.get_mut(&k).filter(|s| !s.cancelled) else {
            // Of a request the case never sends (the opening, an unknown id): as it was.
            self.send(at.at, text);
            return;
        };
        sent.cancelled = true;
        let late = id
            .and_then(|id| last_late(later, id, sent.token.as_ref()))
            .map(|a| a.saturating_sub(at.at));
        let window = late.map_or(SILENCE, |d| {
            (d * 2 + Duration::from_millis(100)).max(SILENCE)
        });
        let (what, since) = (sent.what.clone(), at.at.saturating_sub(sent.at));
        let touched: &[Req] = if sent.answered {
            self.out
                .cancels
                .push(format!("request {k} is cancelled after its answer"));
            &[Req::Can09, Req::Can08, Req::Can11]
        } else if sent.progress == 1
            && sent
                .first_progress
                .is_some_and(|p| at.at.saturating_sub(p) <= ON_PROGRESS)
        {
            self.out.cancels.push(format!(
                "request {k} ({what}) is cancelled after its first progress"
            ));
            &[Req::Can05, Req::Can11]
        } else {
            let wait = millis(at.at.saturating_sub(self.last_send));
            if wait > 0 {
                self.out
                    .lines
                    .push(Line::Control(format!("after {wait}ms")));
            }
            let ms = millis(since);
            self.out.cancels.push(format!(
                "request {k} ({what}) is cancelled {ms} ms after it was sent"
            ));
            &[Req::Can05, Req::Can11, Req::Tmo02]
        };
        self.out.touched.extend(touched);
        if k.chars().any(char::is_whitespace) {
            self.send(at.at, text);
        } else {
            let reason = message.pointer("/params/reason").and_then(Value::as_str);
            let reason =
                reason.map(|r| format!(" {}", r.split_whitespace().collect::<Vec<_>>().join(" ")));
            self.out.lines.push(Line::Control(format!(
                "cancel {k}{}",
                reason.unwrap_or_default()
            )));
        }
        self.out.lines.push(Line::Control("barrier".into()));
        self.out.lines.push(Line::Control(format!(
            "silent {k} {}ms",
            millis(window.min(LONGEST_SILENCE))
        )));
        if let Some(late) = late {
            self.out.lines.push(Line::Comment(format!(
                "The recorded server still spoke of request {k} {} ms after this cancel: the silence above watches for that.",
                millis(late)
            )));
        }
    }

    /// A message the server wrote.
    fn server(&mut self, at: Duration, value: Option<&Value>) {
        let Some(message) = value else {
            self.out.touched.insert(Req::Std03);
            self.comment("The recorded server wrote a line that is not JSON here (STD-03).");
            return;
        };
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (None, Some(id)) => self.answer(id, message),
            (Some("notifications/progress"), None) => self.progress(at, message),
            (Some(method), Some(_)) => self.comment(&format!(
                "The recorded server asked the client `{method}` here; the harness answers such requests itself."
            )),
            (Some(method), None) => *self.unexpected.entry(method.to_string()).or_default() += 1,
            (None, None) => {}
        }
    }

    fn answer(&mut self, id: &Value, message: &Value) {
        let k = key(id);
        if self.opening.as_ref() == Some(&k) {
            self.opening = None;
            if let Some(v) = message
                .pointer("/result/protocolVersion")
                .and_then(Value::as_str)
            {
                self.out.version = Some(v.to_string());
            }
            return;
        }
        let Some(sent) = self.sent.get_mut(&k) else {
            self.out.touched.insert(Req::Rpc04);
            return self.comment(&format!(
                "The recorded server answered id {k} here, which the client never used (RPC-04)."
            ));
        };
        if sent.cancelled {
            return;
        }
        if sent.answered {
            return self.comment(&format!(
                "The recorded server answered request {k} a second time here (RPC-04)."
            ));
        }
        sent.answered = true;
        self.out
            .lines
            .push(Line::Expect(vary::response(message).to_string()));
    }

    fn progress(&mut self, at: Duration, message: &Value) {
        let token = message.pointer("/params/progressToken");
        let live = self.sent.values_mut().find(|s| {
            s.token.is_some() && s.token.as_ref() == token && !s.answered && !s.cancelled
        });
        let Some(sent) = live else {
            return; // after its cancel: the silence after the cancel watches for it
        };
        sent.progress += 1;
        sent.first_progress = sent.first_progress.or(Some(at));
        match sent.progress {
            1 => self
                .out
                .lines
                .push(Line::Expect(vary::progress(message).to_string())),
            2 => {
                self.out.touched.insert(Req::Prg03);
            }
            _ => {}
        }
    }

    fn exit(&mut self, at: Duration, code: Option<i32>, signal: Option<i32>) {
        if let Some(closed) = self.closed {
            let within = (at.saturating_sub(closed) * 4).max(Duration::from_secs(2));
            self.out.lines.push(Line::Control("close-stdin".into()));
            self.out
                .lines
                .push(Line::Control(format!("exit {}ms", millis(within))));
            self.out.touched.insert(Req::Std07);
            self.out.stdio_only = true;
            return;
        }
        let how = match (code, signal) {
            (_, Some(signal)) => format!("by signal {signal}"),
            (Some(code), None) => format!("with code {code}"),
            (None, None) => "unexpectedly".into(),
        };
        let open: Vec<&String> = self
            .sent
            .iter()
            .filter(|(_, s)| !s.answered && !s.cancelled)
            .map(|(k, _)| k)
            .collect();
        self.out.touched.insert(Req::Std01);
        self.comment(&format!(
            "The recorded server exited here {how}, {} request(s) unanswered: a replay that meets the same exit fails.",
            open.len()
        ));
    }

    fn comment(&mut self, text: &str) {
        self.out.lines.push(Line::Comment(text.to_string()));
    }

    fn finish(mut self, trace: &Trace) -> Result<Walked, DraftError> {
        if self.sent.is_empty() {
            return Err(DraftError::new(
                trace,
                0,
                "the trace holds no request of the client's besides its opening, so there is nothing to replay; record a session in which the client calls the server",
            ));
        }
        if !self.unexpected.is_empty() {
            let list: Vec<String> = self
                .unexpected
                .iter()
                .map(|(m, n)| format!("`{m}` ({n})"))
                .collect();
            self.comment(&format!(
                "Not expected, as they vary between runs: the recorded server's {}.",
                list.join(", ")
            ));
        }
        if let Some(line) = trace.cut {
            self.comment(&format!(
                "The trace's line {line} was cut short; the session is drafted up to it."
            ));
        }
        Ok(self.out)
    }
}

/// When the server last said something about the cancelled request `id` (with progress
/// token `token`) in `later`: its response, or progress on its token, until the client uses
/// the id or the token again.
fn last_late(later: &[Stamped], id: &Value, token: Option<&Value>) -> Option<Duration> {
    let mut last = None;
    for stamped in later {
        let Event::Message { from, text, .. } = &stamped.event else {
            continue;
        };
        let Ok(message) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        let method = message.get("method").and_then(Value::as_str);
        let names_token = token.is_some()
            && message
                .pointer("/params/_meta/progressToken")
                .or(message.pointer("/params/progressToken"))
                == token;
        match from {
            Party::Client if method.is_some() && (message.get("id") == Some(id) || names_token) => {
                break
            }
            Party::Server if method.is_none() && message.get("id") == Some(id) => {
                last = Some(stamped.at);
            }
            Party::Server if method == Some("notifications/progress") && names_token => {
                last = Some(stamped.at);
            }
            _ => {}
        }
    }
    last
}
