//! What a scripted target does, as a test writes it: acts at fixed moments ([`Script::at`]),
//! reactions to what the harness sends ([`Script::on`]), and the load the engine reads
//! meanwhile ([`Script::load`]). Every moment counts from the target's start, on tokio's
//! clock, so "at +120 ms" is exact when the test pauses time.

use crate::load::source::LoadScript;
use crate::transport::{Channel, PeerSignal};
use serde_json::{json, Value};
use std::time::Duration;

/// What the target saw the harness do: a message it read, or (over HTTP to a server) the
/// harness closing a request's stream.
#[derive(Debug, Clone)]
pub struct Heard {
    /// When the target read it, since it started (later than the harness sent it when the
    /// target was not reading).
    pub at: Duration,
    /// The channel it travelled on.
    pub channel: Channel,
    /// What it said, when it was JSON; for a closed stream, the request that opened it.
    pub message: Option<Value>,
    /// Its text as sent (empty for a closed stream).
    pub text: String,
    /// The harness closed this channel instead of sending on it: over HTTP to a server, a
    /// request's stream (`message` is the request); on [`Channel::Stdio`], its side of the
    /// conversation (a server's stdin ends; a client's server exits).
    pub closed: bool,
}

impl Heard {
    /// Whether the harness ended its side of the conversation (a server's stdin closed, a
    /// client's server exited).
    pub fn input_ended(&self) -> bool {
        self.closed && self.channel == Channel::Stdio
    }

    /// The message's method, if it has one (and is no closed stream).
    pub fn method(&self) -> Option<&str> {
        self.message
            .as_ref()
            .filter(|_| !self.closed)
            .and_then(|m| m.get("method"))
            .and_then(Value::as_str)
    }

    /// The message's id.
    pub fn id(&self) -> Option<&Value> {
        self.message.as_ref().and_then(|m| m.get("id"))
    }

    /// Whether it is a message with this method (a request or a notification).
    pub fn is(&self, method: &str) -> bool {
        self.method() == Some(method)
    }

    /// The `requestId` of a `notifications/cancelled`.
    pub fn cancels(&self) -> Option<&Value> {
        self.is("notifications/cancelled")
            .then(|| self.message.as_ref()?.pointer("/params/requestId"))
            .flatten()
    }

    /// Whether it is the harness's response to the target's request `id`.
    pub fn answers(&self, id: &Value) -> bool {
        !self.closed && self.method().is_none() && self.id() == Some(id)
    }

    /// A value inside the message, by JSON pointer (`/params/arguments/ms`).
    pub fn at_pointer(&self, pointer: &str) -> Option<&Value> {
        self.message.as_ref()?.pointer(pointer)
    }
}

/// Something the target does.
pub enum Act {
    /// Writes one message: on stdio; over HTTP to a server, on the stream of the request it
    /// answers or is about (by id or progress token), else on the newest open one; a client
    /// over HTTP POSTs it.
    Send(Value),
    /// Writes one line as it is (a line that is not JSON).
    Raw(String),
    /// A client adapter writes an outcome line on its stdout (`{"action":N,"outcome":"…"}`).
    Outcome(Value),
    /// Stops reading its input, whose pipe is full: the harness's writes wait (see
    /// `transport::patience`).
    StopReading,
    /// Reads its input again: a write waiting for room goes through.
    Read,
    /// Its output ends (a server's stdout; a client's connection to its server).
    CloseOutput,
    /// The process exits with this code (its output ends too).
    Exit(i32),
    /// A client starts its server: the relay connects (client over stdio).
    Connect,
    /// A client does this to its server process (client over stdio).
    Signal(PeerSignal),
    /// Decides when it is due what the target does then, from state the test keeps (a call
    /// that answers at its end unless it was cancelled meanwhile); the acts are scheduled
    /// from that moment.
    Decide(Decision),
}

/// What an [`Act::Decide`] runs.
pub type Decision = Box<dyn FnOnce() -> Vec<(Duration, Act)> + Send>;

impl std::fmt::Debug for Act {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Act::Send(message) => write!(f, "Send({message})"),
            Act::Raw(text) => write!(f, "Raw({text:?})"),
            Act::Outcome(line) => write!(f, "Outcome({line})"),
            Act::StopReading => f.write_str("StopReading"),
            Act::Read => f.write_str("Read"),
            Act::CloseOutput => f.write_str("CloseOutput"),
            Act::Exit(code) => write!(f, "Exit({code})"),
            Act::Connect => f.write_str("Connect"),
            Act::Signal(signal) => write!(f, "Signal({signal:?})"),
            Act::Decide(_) => f.write_str("Decide(…)"),
        }
    }
}

impl Act {
    /// An [`Act::Decide`] of `decide`.
    pub fn decide(decide: impl FnOnce() -> Vec<(Duration, Act)> + Send + 'static) -> Act {
        Act::Decide(Box::new(decide))
    }
}

/// A reaction: what the target does, and how long after it read the message, when it reads
/// one. Most reactions answer only some messages and return nothing for the rest.
pub type Reaction = Box<dyn FnMut(&Heard) -> Vec<(Duration, Act)> + Send>;

/// What a scripted target does (see the module doc).
pub struct Script {
    pub(super) timeline: Vec<(Duration, Act)>,
    pub(super) reactions: Vec<Reaction>,
    pub(super) load: LoadScript,
    /// Over HTTP to a server: how long after a request arrives its response's head comes
    /// (`None`: with the first message on its stream).
    pub(super) heads_after: Option<Duration>,
    /// Over HTTP to a server: how long after a notification or a response arrives its `202`
    /// comes (`None`: never).
    pub(super) accepts_after: Option<Duration>,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            timeline: vec![],
            reactions: vec![],
            load: LoadScript::calm(),
            heads_after: Some(Duration::ZERO),
            accepts_after: Some(Duration::ZERO),
        }
    }
}

impl Script {
    /// A target that does nothing, on a calm machine.
    pub fn new() -> Script {
        Script::default()
    }

    /// At `at` after it started, the target does `act`.
    pub fn at(mut self, at: Duration, act: Act) -> Script {
        self.timeline.push((at, act));
        self
    }

    /// Whenever the target reads something, `react` says what it does and how long after.
    pub fn on(
        mut self,
        react: impl FnMut(&Heard) -> Vec<(Duration, Act)> + Send + 'static,
    ) -> Script {
        self.reactions.push(Box::new(react));
        self
    }

    /// The machine's load and the target's waits for a CPU as the engine reads them.
    pub fn load(mut self, load: LoadScript) -> Script {
        self.load = load;
        self
    }

    /// Over HTTP to a server: a request's response head comes only with the first message
    /// on its stream (a server that holds heads back).
    pub fn holds_heads(mut self) -> Script {
        self.heads_after = None;
        self
    }

    /// Over HTTP to a server: a request's response head comes this long after the request
    /// arrives, or with the first message on its stream if that is sooner.
    pub fn heads_after(mut self, after: Duration) -> Script {
        self.heads_after = Some(after);
        self
    }

    /// Over HTTP to a server: a notification's (or a response's) POST gets its `202` this long
    /// after it arrives; `None`: never (the POST hangs).
    pub fn accepts_after(mut self, after: Option<Duration>) -> Script {
        self.accepts_after = after;
        self
    }

    /// A server's own answers, `delay` after it reads the request: `initialize` with the
    /// version asked for, `ping` with an empty result, `server/discover` with the versions of
    /// both eras; it declares tools. The harness's opening and its barriers need no more.
    pub fn serving(self, delay: Duration) -> Script {
        self.on(move |heard| match (heard.id(), server_answer(heard)) {
            (Some(id), Some(answer)) => vec![(delay, Act::Send(result(id, answer)))],
            _ => vec![],
        })
    }

    /// A client's opening at `version`, as a client over stdio does it: it starts its server
    /// at once, sends `initialize` `after` that, and `notifications/initialized` as soon as it
    /// reads the answer; `then` says what it does next, from the moment it read the answer.
    pub fn opening_client(
        self,
        version: &str,
        after: Duration,
        mut then: impl FnMut() -> Vec<(Duration, Act)> + Send + 'static,
    ) -> Script {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "scripted", "version": "0"}
        }});
        self.at(Duration::ZERO, Act::Connect)
            .at(after, Act::Send(init))
            .on(move |heard| {
                if !heard.answers(&json!(0)) {
                    return vec![];
                }
                let mut acts = vec![(
                    Duration::ZERO,
                    Act::Send(notification("notifications/initialized", None)),
                )];
                acts.extend(then());
                acts
            })
    }
}

/// What a server answers to `initialize` (the version asked for), `ping` and
/// `server/discover` (the versions of both eras), declaring tools; `None` for anything else.
pub fn server_answer(heard: &Heard) -> Option<Value> {
    let info = json!({"name": "scripted", "version": "0"});
    match heard.method()? {
        "initialize" => Some(json!({
            "protocolVersion": heard.at_pointer("/params/protocolVersion").cloned().unwrap_or(json!("2025-11-25")),
            "capabilities": {"tools": {}},
            "serverInfo": info
        })),
        "ping" => Some(json!({})),
        "server/discover" => {
            let versions: Vec<&str> = crate::era::ProtocolVersion::ALL
                .iter()
                .map(|v| v.as_str())
                .collect();
            Some(json!({
                "supportedVersions": versions,
                "capabilities": {"tools": {}},
                "serverInfo": info,
                "resultType": "complete"
            }))
        }
        _ => None,
    }
}

/// A response with `result` to request `id`.
pub fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A notification.
pub fn notification(method: &str, params: Option<Value>) -> Value {
    match params {
        Some(params) => json!({"jsonrpc": "2.0", "method": method, "params": params}),
        None => json!({"jsonrpc": "2.0", "method": method}),
    }
}

/// A progress notification for `token`.
pub fn progress(token: &Value, progress: u64) -> Value {
    notification(
        "notifications/progress",
        Some(json!({"progressToken": token, "progress": progress})),
    )
}

/// What a tool call returns: one text item.
pub fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}
