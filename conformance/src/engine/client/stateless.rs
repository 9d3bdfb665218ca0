//! The harness as a server of the stateless era (2026-07-28) for a client target, and what
//! it learns from its own answers in either era.
//!
//! Playing 2026-07-28, the harness has no handshake: it answers `server/discover` with the
//! versions it speaks (only 2026-07-28), its capabilities and its name in `_meta` (and, as
//! for `tools/list`, the caching hints `ttlMs` and `cacheScope` the era requires); stamps
//! every result with `resultType` (RPC-14) and its name; answers a request stamped with
//! another version with `-32022` and the supported list (LIF-12), `ping` with "method not
//! found" (the era has none), and `initialize` with `-32022` too, as a modern-only server
//! would (LIF-14). A client that opens with `initialize` does not speak 2026-07-28 with this
//! server, and the case is skipped with the reason; one that falls back to `initialize`
//! after a stateless-era error told it its server is modern is judged (HTTP-20, LIF-12).
//! It never sends a request to the client (RPC-15).
//!
//! A client of the era cancels over stdio with `notifications/cancelled` and over HTTP by
//! closing the request's response stream (CAN-12); `! cancelled` waits for whichever the
//! version and the transport call for.

use super::ClientTarget;
use crate::case::Case;
use crate::case::TASKS_EXTENSION;
use crate::engine::parts::opening::Opening;
use crate::engine::Engine;
use crate::era::{ProtocolVersion, MODERN_ERRORS, STATELESS_VERSION, UNSUPPORTED_VERSION};
use crate::facts::ledger::Ledger;
use crate::outcome::{FindingKind, Severity};
use crate::pattern::{canonical, id_key, json_equal};
use crate::requirement::Req;
use crate::rules::client_stateless;
use crate::rules::envelope::Problem;
use crate::transcript::{Direction, Entry};
use crate::transport::{Channel, Transport};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use tokio::time::Instant as Deadline;

/// What the harness knows of a client of the stateless era.
#[derive(Debug, Default)]
pub struct StatelessSide {
    /// The harness plays a server of 2026-07-28 (otherwise one of the handshake era).
    pub plays: bool,
    /// Why the case turned out not to apply (the client opened with `initialize`).
    pub skip: Option<String>,
    /// The client sent a request of the stateless era (it tried 2026-07-28).
    pub tried: bool,
    /// A stateless-era error (`-32020`, `-32021`, `-32022`) the client got: proof that its
    /// server is modern, so falling back to `initialize` is wrong (HTTP-20, LIF-12).
    pub modern_error: Option<i64>,
    /// The client's requests the harness answered with `-32022`, by id key (LIF-12).
    pub refused: HashSet<String>,
    /// When the client closed the response stream of each channel before its answer (HTTP),
    /// since the target started.
    pub closed: HashMap<Channel, Duration>,
}

/// The answer of a server of 2026-07-28 to `server/discover`.
pub(crate) fn discover_result(id: &Value, makes_tasks: bool) -> Value {
    let mut answer = json!({"jsonrpc": "2.0", "id": id, "result": {
        "supportedVersions": [STATELESS_VERSION],
        "capabilities": {"tools": {}},
        "ttlMs": 0,
        "cacheScope": "public",
    }});
    // A server may answer with a task only where it declared the tasks extension.
    if makes_tasks {
        answer["result"]["capabilities"]["extensions"] = json!({ TASKS_EXTENSION: {} });
    }
    ProtocolVersion::V2026_07_28.stamp_result(&mut answer);
    answer
}

/// Whether a client case's lines answer a request with a task (`resultType: "task"`): the
/// harness's 2026-07-28 server then declares the tasks extension.
fn makes_tasks(case: &crate::case::Case) -> bool {
    fn answers_with_task(steps: &[crate::case::Step]) -> bool {
        steps.iter().any(|step| match &step.kind {
            crate::case::StepKind::Send(text) => {
                text.contains(r#""resultType":"task""#) && !text.contains(r#""method""#)
            }
            kind => kind.inner().is_some_and(answers_with_task),
        })
    }
    answers_with_task(&case.steps)
}

/// Whether the harness's 2026-07-28 server speaks the version a request is stamped with.
fn speaks(stamped: &Value) -> bool {
    stamped
        .as_str()
        .and_then(ProtocolVersion::parse)
        .is_some_and(ProtocolVersion::is_stateless)
}

/// `-32022`: the server does not speak the version `requested` (LIF-12).
pub(crate) fn unsupported(id: &Value, requested: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": UNSUPPORTED_VERSION,
        "message": format!("unsupported protocol version {}; this server speaks {STATELESS_VERSION}", canonical(requested)),
        "data": {"supported": [STATELESS_VERSION], "requested": requested},
    }})
}

impl StatelessSide {
    /// An `initialize` to the harness playing a server of the handshake era in a case about
    /// a client of 2026-07-28 (`@plays handshake`, the run `told_stateless`): one that never
    /// tried 2026-07-28 first has nothing to fall back from, and the case does not apply.
    pub(crate) fn legacy_initialize(&mut self, told_stateless: bool) {
        if told_stateless && !self.plays && !self.tried {
            self.skip.get_or_insert_with(|| {
                "the client opened with `initialize` without trying 2026-07-28 first (no `server/discover` or stamped request): it does not speak 2026-07-28, so it has nothing to fall back from".into()
            });
        }
    }
}

impl ClientTarget {
    /// The answer of the harness's 2026-07-28 server to a request no step answers, where it
    /// differs from a handshake-era server's: `None` for what both answer alike.
    pub(crate) fn stateless_answer(
        &self,
        case: &Case,
        id: &Value,
        method: &str,
        params: Option<&Value>,
    ) -> Option<Value> {
        if !self.era.plays {
            return None;
        }
        let stamped =
            params.and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"));
        match (method, stamped) {
            (_, Some(version)) if !speaks(version) => Some(unsupported(id, version)),
            ("server/discover", _) => Some(discover_result(id, makes_tasks(case))),
            // A cacheable result of the era: it says how long it may be kept (ttlMs, cacheScope).
            ("tools/list", _) => {
                let mut list = super::tool_list();
                list["ttlMs"] = json!(0);
                list["cacheScope"] = json!("public");
                let mut answer = json!({"jsonrpc": "2.0", "id": id, "result": list});
                ProtocolVersion::V2026_07_28.stamp_result(&mut answer);
                Some(answer)
            }
            ("ping", _) => Some(json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32601,
                "message": "method not found: 2026-07-28 has no ping",
            }})),
            _ => None,
        }
    }
}

/// Takes note of a message the harness sent to the client: the version its answer to an
/// `initialize` agreed to (HTTP-18 judges later requests by it; the run's `opening` takes
/// it), and the stateless-era errors a client must heed (HTTP-20, LIF-12). `ledger` knows
/// the client's requests.
pub(crate) fn answered_client(
    side: &mut ClientTarget,
    opening: &mut Opening,
    ledger: &Ledger,
    message: &Value,
) {
    let Some(id) = message
        .get("id")
        .filter(|_| message.get("method").is_none())
    else {
        return;
    };
    let key = ledger.key(id);
    let Some(request) = ledger.received(&key) else {
        return;
    };
    let agreed = message
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str);
    if let (Some(agreed), "initialize") = (agreed, request.method.as_str()) {
        let agreed = agreed.to_string();
        if let Some(session) = side.sessions.current_mut() {
            session.agreed = Some(agreed.clone());
        }
        opening.agree(agreed);
    }
    let code = message.pointer("/error/code").and_then(Value::as_i64);
    if let Some(code) = code.filter(|c| MODERN_ERRORS.contains(c)) {
        side.era.modern_error = Some(code);
        if code == UNSUPPORTED_VERSION {
            side.era.refused.insert(key);
        }
    }
}

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// An `initialize` to the harness's 2026-07-28 server: answered with `-32022` naming the
    /// version it speaks (LIF-14). After a stateless-era error the client knows its server is
    /// modern, and falling back is judged (HTTP-20 over HTTP, LIF-12 on stdio); otherwise the
    /// client does not speak 2026-07-28 with this server, and the case does not apply.
    /// The `initialize` is at transcript index `index`.
    pub(crate) async fn stateless_initialize(&mut self, index: usize) {
        let asked = self
            .transcript
            .params(index)
            .and_then(|p| p.get("protocolVersion"))
            .cloned()
            .unwrap_or(Value::Null);
        let answer = unsupported(&self.transcript.message(index)["id"], &asked);
        match self.side.era.modern_error {
            Some(code) if !self.io.ordered() => self.rule(
                Severity::Fail,
                Req::Http20,
                format!("the client fell back to `initialize` after the harness answered {code} with 400: a stateless-era error means the server is modern, and a client that inspects the body must not fall back"),
            ),
            Some(code) => self.rule(
                self.played.severity().min(Severity::Warn),
                Req::Lif12,
                format!("the client fell back to `initialize` after the harness answered {code}: the server is modern, and the client should retry with a version it lists"),
            ),
            None => {
                self.side.era.skip.get_or_insert_with(|| {
                    format!(
                        "the client opened with `initialize` (asking for {}) instead of speaking 2026-07-28: it does not speak that version with this server",
                        canonical(&asked)
                    )
                });
            }
        }
        self.reply(answer).await;
    }

    /// The client closed the response stream of `channel` before it ended. In 2026-07-28
    /// that is its cancel of the request (CAN-12); up to 2025-11-25 it is no cancel (HTTP-10).
    pub(crate) fn stream_closed(&mut self, at: Duration, channel: Channel) {
        match self.ledger.stream_closed(channel) {
            Some((key, true)) => {
                self.side.era.closed.insert(channel, at);
                self.io.note(format!(
                    "[http] the client closed the stream of {channel} (request {key}) before its answer: in 2026-07-28 that cancels it"
                ));
            }
            _ => self.io.note(format!(
                "[http] the client closed the stream of {channel} before it ended"
            )),
        }
    }

    /// `! cancelled ID`: the client cancels its request ID the way the version and the
    /// transport call for. A stateless-era request over HTTP is cancelled by closing its
    /// response stream; not doing so within `--reply-timeout` (stretched on a busy machine,
    /// and at least to the end of an `! arrives` window) warns, since the MUST is on the
    /// server and the client's part is a SHOULD; a POSTed `notifications/cancelled` instead is
    /// noted (AMB-06). The harness cannot see when the client decided to cancel, so the wait
    /// is generous, not `T_grace`. Otherwise the cancel is a `notifications/cancelled` with
    /// the exact id.
    pub(crate) async fn client_cancels(
        &mut self,
        line: usize,
        id: &Value,
    ) -> Result<(), super::Stop> {
        let key = id_key(id);
        let request = self.ledger.received(&key).map(|r| (r.channel, r.stateless));
        let by_closing =
            !self.io.ordered() && request.map_or(self.side.era.plays, |(_, stateless)| stateless);
        if !by_closing {
            let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
            return self.expect(line, &cancel.to_string()).await;
        }
        let channel = request.map(|(channel, _)| channel);
        let text = format!("[closed the stream of request {}]", canonical(id));
        self.diff.push(format!("> {text}"));
        let began = Deadline::now();
        loop {
            let closed = channel.and_then(|c| self.side.era.closed.get(&c).map(|at| (c, *at)));
            if let Some((channel, at)) = closed {
                let mut entry = Entry::received(at, channel, text.clone(), None);
                entry.consumed_by = Some(line);
                entry.shown = Some(text);
                self.transcript.push(entry);
                self.arrived(line, at);
                return Ok(());
            }
            let allowed = self.clock.stretched(self.played.options().reply_timeout);
            let started = self.io.started();
            let deadline = self
                .step
                .arrival_deadline(began + allowed, started, |d| self.clock.stretched(d));
            if Deadline::now() >= deadline {
                break;
            }
            let tick = deadline.min(Deadline::now() + Duration::from_millis(250));
            if !self.next(tick).await && self.io.finished() {
                break;
            }
        }
        self.step.at(line);
        let posted = self.transcript.iter().any(|e| {
            e.direction == Direction::Received
                && e.value.as_ref().is_some_and(|v| {
                    v.get("method") == Some(&json!("notifications/cancelled"))
                        && v.pointer("/params/requestId")
                            .is_some_and(|r| json_equal(r, id))
                })
        });
        let waited = format!(
            "within {:?}",
            self.clock.stretched(self.played.options().reply_timeout)
        );
        let severity = self.played.severity();
        let problem = if request.is_none() {
            Problem::new(
                severity.min(Severity::Warn),
                Req::Can12,
                format!("the client sent no request {key} to cancel"),
            )
        } else {
            client_stateless::stream_not_closed(&key, posted, &waited, severity)
        };
        self.finding(
            problem.severity,
            FindingKind::Rule(problem.requirement),
            problem.message,
        );
        Ok(())
    }
}
