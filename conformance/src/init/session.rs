//! One session with the target for `conformance init`: opening it (the handshake era's
//! `initialize`, or the stateless era's `server/discover` where the server speaks only that),
//! and calls watched as they run: their answer, their progress, and a cancel when the check
//! has seen enough.

use super::error::{OpenError, OpeningError};
use crate::era::ProtocolVersion;
use crate::error::StartError;
use crate::rules::envelope::short;
use crate::transport::http::{Http, HttpTarget};
use crate::transport::process::{display_argv, Launch};
use crate::transport::stdio::Stdio;
use crate::transport::{Channel, Event, Transport};
use crate::versions::Identity;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// How a fresh connection to the target is made: the seam between `init` and the transports.
#[allow(async_fn_in_trait)]
pub trait Start {
    /// The transport it gives.
    type Io: Transport;
    /// Starts the target (or connects to it).
    async fn start(&self) -> Result<Self::Io, StartError>;
}

/// A stdio server, started by its argv.
pub struct StartStdio<'a> {
    /// How to start it.
    pub launch: &'a Launch,
    /// How long a write may wait for the target to read.
    pub patience: Duration,
}

impl Start for StartStdio<'_> {
    type Io = Stdio;
    async fn start(&self) -> Result<Stdio, StartError> {
        Stdio::spawn(self.launch, self.patience).map_err(|source| StartError::Spawn {
            target: display_argv(&self.launch.argv),
            source,
        })
    }
}

/// A Streamable HTTP server, started by the harness or already running.
pub struct StartHttp<'a> {
    /// Its endpoint and launch.
    pub target: &'a HttpTarget,
    /// How long a connection may take.
    pub patience: Duration,
    /// How long a started server may take to listen.
    pub startup: Duration,
}

impl Start for StartHttp<'_> {
    type Io = Http;
    async fn start(&self) -> Result<Http, StartError> {
        Http::start(self.target, self.patience, self.startup)
            .await
            .map_err(StartError::Transport)
    }
}

/// An open session.
pub struct Session<T: Transport> {
    /// The connection.
    pub io: T,
    /// The version agreed to (or, stateless, the one every request is stamped with).
    pub version: ProtocolVersion,
    /// Who the server says it is.
    pub identity: Option<Identity>,
    /// The answer to the opening (`initialize`, or `server/discover`): what the server
    /// declared.
    pub opening: Value,
    next_id: u64,
}

/// What a watched call did.
#[derive(Debug, Default)]
pub struct Watched {
    /// Its answer, if one came.
    pub answer: Option<Value>,
    /// When the answer came, after the call was sent.
    pub answered_after: Option<Duration>,
    /// When each progress notification for its token came, after the call was sent.
    pub progress: Vec<Duration>,
    /// How long it was watched.
    pub watched: Duration,
    /// The target went away meanwhile.
    pub gone: bool,
}

/// When a watch has seen enough.
pub struct Enough {
    /// The watch ends at this time after the call was sent, whatever came.
    pub within: Duration,
    /// Or once this many progress notifications came and `after` has passed.
    pub progress: Option<(usize, Duration)>,
}

/// Opens a session: `initialize` at the newest handshake version (a server of an older one
/// offers its own), else, on a fresh start, a stamped `server/discover` for a server that
/// speaks only the stateless era.
pub async fn open<S: Start>(start: &S, wait: Duration) -> Result<Session<S::Io>, OpenError> {
    let newest = ProtocolVersion::NEWEST_HANDSHAKE.as_str();
    let initialize = json!({"jsonrpc": "2.0", "id": "init-open", "method": "initialize",
        "params": {"protocolVersion": newest, "capabilities": {},
            "clientInfo": {"name": "conformance-init", "version": env!("CARGO_PKG_VERSION")}}});
    let mut io = start.start().await?;
    let handshake = match opening(&mut io, &initialize, wait).await {
        Ok(answer) => answer,
        Err(why) => {
            let log = io.shutdown(Duration::ZERO).await;
            return Err(OpenError::Initialize {
                why,
                stderr: log.tail(5),
            });
        }
    };
    let agreed = handshake
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str)
        .and_then(ProtocolVersion::parse)
        .filter(|v| v.has_handshake());
    if let Some(version) = agreed {
        io.agreed(version.as_str());
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        io.send(initialized.to_string().as_bytes(), None)
            .await
            .map_err(OpenError::StoppedReading)?;
        return Ok(Session {
            identity: Identity::of_answer(&handshake),
            io,
            version,
            opening: handshake,
            next_id: 0,
        });
    }
    // No handshake version: perhaps a server of the stateless era only.
    io.shutdown(Duration::ZERO).await;
    discover(start, wait)
        .await
        .map_err(|discover| OpenError::NoVersion {
            newest,
            handshake: short(&handshake),
            discover,
        })
}

/// Opens a session of the stateless era on a fresh start: a stamped `server/discover` that
/// must list 2026-07-28. `Err` says, short, what came instead (start errors included).
pub async fn discover<S: Start>(start: &S, wait: Duration) -> Result<Session<S::Io>, String> {
    let stateless = ProtocolVersion::V2026_07_28;
    let mut io = start.start().await.map_err(|e| e.to_string())?;
    let answer = opening(&mut io, &stateless.probe("init-open"), wait).await;
    let speaks = answer.as_ref().is_ok_and(|a| {
        a.pointer("/result/supportedVersions")
            .and_then(Value::as_array)
            .is_some_and(|v| v.contains(&json!(stateless.as_str())))
    });
    if !speaks {
        io.shutdown(Duration::ZERO).await;
        return Err(match answer {
            Ok(a) => short(&a),
            Err(why) => why.to_string(),
        });
    }
    io.agreed(stateless.as_str());
    let answer = answer.unwrap_or_default();
    Ok(Session {
        identity: Identity::of_answer(&answer),
        io,
        version: stateless,
        opening: answer,
        next_id: 0,
    })
}

/// Sends the opening and waits for its answer.
async fn opening<T: Transport>(
    io: &mut T,
    request: &Value,
    wait: Duration,
) -> Result<Value, OpeningError> {
    io.send(request.to_string().as_bytes(), None)
        .await
        .map_err(OpeningError::Unread)?;
    let deadline = Deadline::now() + wait;
    loop {
        match io.next(deadline).await {
            None if io.finished() => {
                return Err(match io.exit_status() {
                    Some(status) => OpeningError::Exited(status),
                    None => OpeningError::OutputEnded,
                })
            }
            None if Deadline::now() < deadline => continue,
            None => return Err(OpeningError::NoAnswer(wait)),
            Some((_, Event::Message { bytes, channel })) => {
                let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
                    if channel == Channel::Stdio && !bytes.trim_ascii().is_empty() {
                        let shown: String =
                            String::from_utf8_lossy(&bytes).chars().take(200).collect();
                        return Err(OpeningError::NotJson(shown));
                    }
                    continue;
                };
                if value.get("method").is_none() && value.get("id") == request.get("id") {
                    return Ok(value);
                }
            }
            Some(_) => {}
        }
    }
}

impl<T: Transport> Session<T> {
    /// Calls `tool` with `arguments` (and a progress token, if given) and watches it until it
    /// answers or `enough` says to stop. A call still running then is cancelled, the way the
    /// era and the transport call for, and a moment is left for its answer to go by.
    pub async fn call(
        &mut self,
        tool: &str,
        arguments: &Value,
        token: Option<&str>,
        enough: Enough,
    ) -> Watched {
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(token) = token {
            params["_meta"] = json!({"progressToken": token});
        }
        self.request("tools/call", params, token, enough).await
    }

    /// Sends request `method` with `params` (stamped as the era wants) and watches it, and the
    /// progress of `token`, as [`Session::call`] does.
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        token: Option<&str>,
        enough: Enough,
    ) -> Watched {
        self.next_id += 1;
        let id = format!("init-{}", self.next_id);
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.version.stamp(&mut request);
        let sent = Instant::now();
        let Ok(channel) = self.io.send(request.to_string().as_bytes(), None).await else {
            return Watched {
                gone: true,
                ..Watched::default()
            };
        };
        let watched = self.watch(Some(&id), token, sent, enough).await;
        if watched.answer.is_none() && !watched.gone {
            self.cancel(&id, channel).await;
        }
        watched
    }

    /// Watches for the answer to request `id` (when given) and the progress of `token`, from
    /// `sent` on, until the answer comes or `enough` says to stop; answers what the server
    /// asks meanwhile.
    pub async fn watch(
        &mut self,
        id: Option<&str>,
        token: Option<&str>,
        sent: Instant,
        enough: Enough,
    ) -> Watched {
        let mut watched = Watched::default();
        let deadline = Deadline::from_std(sent + enough.within);
        loop {
            let seen_enough = enough.progress.is_some_and(|(count, after)| {
                watched.progress.len() >= count && sent.elapsed() >= after
            });
            if seen_enough || Deadline::now() >= deadline {
                break;
            }
            // Once the progress asked for came, the watch ends when `after` has passed.
            let until = match enough.progress {
                Some((count, after)) if watched.progress.len() >= count => {
                    deadline.min(Deadline::from_std(sent + after))
                }
                _ => deadline,
            };
            match self.io.next(until).await {
                None if self.io.finished() => {
                    watched.gone = true;
                    break;
                }
                None => continue,
                Some((at, Event::Message { bytes, .. })) => {
                    let Ok(message) = serde_json::from_slice::<Value>(&bytes) else {
                        continue;
                    };
                    let answers = id.is_some_and(|id| message.get("id") == Some(&json!(id)));
                    if message.get("method").is_none() && answers {
                        watched.answer = Some(message);
                        watched.answered_after = Some(at.saturating_duration_since(sent));
                        break;
                    }
                    let progress_of_token = message.get("method")
                        == Some(&json!("notifications/progress"))
                        && token.is_some_and(|t| {
                            message.pointer("/params/progressToken") == Some(&json!(t))
                        });
                    if progress_of_token {
                        watched.progress.push(at.saturating_duration_since(sent));
                    } else {
                        self.answer_request(&message).await;
                    }
                }
                Some(_) => {}
            }
        }
        watched.watched = sent.elapsed();
        watched
    }

    /// Cancels request `id`: `notifications/cancelled`, or in the stateless era over HTTP,
    /// closing its response stream. Then waits a moment, letting its answer or last
    /// progress go by.
    async fn cancel(&mut self, id: &str, channel: Channel) {
        if self
            .version
            .cancel_closes_channel(self.io.channel_per_request())
        {
            self.io.abort(channel);
        } else {
            let mut cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "conformance init has seen enough"}});
            self.version.stamp(&mut cancel);
            let _ = self.io.send(cancel.to_string().as_bytes(), None).await;
        }
        let until = Deadline::now() + Duration::from_millis(200);
        while let Some((_, event)) = self.io.next(until).await {
            if let Event::Message { bytes, .. } = event {
                if let Ok(message) = serde_json::from_slice::<Value>(&bytes) {
                    self.answer_request(&message).await;
                }
            }
        }
    }

    /// Answers a request the server sends meanwhile: `ping` with an empty result, anything
    /// else with "method not found" (the harness declared no capabilities).
    async fn answer_request(&mut self, message: &Value) {
        let (Some(id), Some(method)) = (message.get("id"), message.get("method")) else {
            return;
        };
        let answer = if method == "ping" {
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
                "message": "conformance init declared no capabilities"}})
        };
        let _ = self.io.send(answer.to_string().as_bytes(), None).await;
    }
}

/// The text items of a `tools/call` result, joined; `None` for an error or no result.
pub fn result_text(answer: &Value) -> Option<String> {
    let result = answer.get("result")?;
    let content = result.get("content")?.as_array()?;
    Some(
        content
            .iter()
            .filter_map(|item| item.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// Why an answer is no success: a JSON-RPC error, or a result marked `isError`.
pub fn failure(answer: &Value) -> Option<String> {
    if let Some(error) = answer.get("error") {
        return Some(format!("it was refused: {}", short(error)));
    }
    if answer.pointer("/result/isError") == Some(&Value::Bool(true)) {
        let text = result_text(answer).unwrap_or_default();
        return Some(format!("it answered with an error: `{}`", cut(&text, 200)));
    }
    None
}

/// `text` cut to `max` characters.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}…")
    } else {
        text.to_string()
    }
}
