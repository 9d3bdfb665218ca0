//! The harness as a server, testing a client target.
//!
//! The client under test is an adapter program around some MCP client library. The harness
//! starts it with the case's actions and a server to start (the relay), answers its
//! `initialize` (unless the case does), plays the steps as the server, answers requests the
//! case does not script as a plain server would, and at the end judges how the adapter says
//! each action ended (`@outcomes`) and how the client shut its server down (STD-06). The
//! adapter contract is in the README ("Testing a client").

mod adapter;
mod answer;
mod crossing;
mod ending;
pub mod http;
mod judge;
mod judge_http;
mod judge_stateless;
mod message;
mod run;
pub mod session;
mod start;
pub use run::{play_client, run_client_case, ClientTransport};
pub use start::never_reached;
mod stateless;
pub(crate) mod tasks;

use super::{Engine, Side, Stop, Why};
use crate::case::{Step, StepKind};
use crate::era::{ProtocolVersion, STATELESS_VERSION};
use crate::outcome::{FindingKind, Severity};
use crate::requirement::Req;
use crate::rules::envelope::{Writer, CLIENT};
use crate::transport::{Channel, Event, Transport};
use adapter::{actions_done, adapter_line, settle, wind_down};
use http::HttpSide;
use serde_json::{json, Value};
use session::Sessions;
pub(crate) use start::initialize_answer;
use start::{connect, handshake, played_version};
pub(crate) use stateless::unsupported;
use stateless::StatelessSide;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;
use tokio::time::Instant as Deadline;

/// How long a cancel may trail the response it crossed before it counts as a cancel of a
/// finished request (CAN-03).
pub const T_GRACE: Duration = Duration::from_millis(250);
/// How long the client may take to start and connect its server.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The actions, as a JSON array (an adapter's environment).
pub const ENV_ACTIONS: &str = "CONFORMANCE_ACTIONS";
/// The case id.
pub const ENV_CASE: &str = "CONFORMANCE_CASE";
/// The protocol version the harness plays.
pub const ENV_VERSION: &str = "CONFORMANCE_PROTOCOL_VERSION";

/// The role of a client target: what the harness, as its server, knows beyond the steps.
#[derive(Debug, Default)]
pub struct ClientTarget {
    /// Methods the case's expected lines name: the harness leaves those to the case.
    pub(crate) scripted: HashSet<String>,
    /// What the adapter reported, by action index.
    pub(crate) outcomes: BTreeMap<usize, Value>,
    /// The client's sessions with the harness's server, oldest first.
    pub(crate) sessions: Sessions,
    /// The harness performed the handshake itself (`@handshake auto`): a later `initialize`
    /// (a new session) is answered the same way.
    pub(crate) handshaken: bool,
    /// The case line where the steps stopped on a failure already reported: from then on the
    /// harness serves every request as a plain server, and what follows from the stop (how
    /// the adapter reports its actions) is noted, not judged again.
    pub(crate) stopped: Option<usize>,
    /// The harness's server exited on its own (`! server-exit`): the session's end is the
    /// harness's doing, not the client's.
    pub(crate) server_exited: bool,
    /// The adapter was still running after the case's last step (TMO-02, reported): the
    /// actions it never reported follow from that, and are noted.
    pub(crate) hung: bool,
    /// The client reached the harness's server (a relay connected, or an HTTP request came).
    pub(crate) connected: bool,
    /// The adapter declined the case (a `{"decline": "…"}` line): its words, until the
    /// steps stop on them.
    pub(crate) declined: Option<String>,
    /// What the harness knows of the client's HTTP requests.
    pub(crate) http: HttpSide,
    /// What the harness knows of a client of the stateless era.
    pub(crate) era: StatelessSide,
    /// The client's messages held until what they may have crossed over HTTP arrives.
    pub(crate) crossing: crossing::Crossing,
    /// The tasks the case created, served where the case leaves their requests to the harness.
    pub(crate) tasks: tasks::ClientTasks,
    /// The capabilities the client declared in its latest `initialize`.
    pub(crate) declared: Option<Value>,
}

/// The client capability a request of the harness's server needs, by method.
fn needed_capability(method: &str) -> Option<&'static str> {
    match method {
        "roots/list" => Some("roots"),
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        _ => None,
    }
}

/// The tools the harness's server lists when a client asks (`tools/list` is answered by the
/// harness unless a case scripts it).
pub(crate) fn tool_list() -> Value {
    let tool = |name: &str, description: &str, properties: Value| {
        json!({"name": name, "description": description,
               "inputSchema": {"type": "object", "properties": properties}})
    };
    json!({"tools": [
        tool("work", "Runs until cancelled, reporting progress.", json!({})),
        tool("echo", "Returns its text.", json!({"text": {"type": "string"}})),
    ]})
}

impl Side for ClientTarget {
    const WRITER: &'static Writer = &CLIENT;
    const SENDS: char = '<';
    const EXPECTS: char = '>';
    const EXIT_GRACE: Option<Duration> = None;
    const PROBES: bool = false;
    const STAMPS: bool = false;

    async fn play<T: Transport>(e: &mut Engine<'_, T, Self>) -> Result<(), Stop> {
        let base = e.played.limit();
        let limit = e.limit(base);
        let played = limit
            .within(async {
                connect(e).await?;
                if e.side.era.plays {
                    // No handshake: the steps begin at once, and requests carry their version.
                    e.opening.agree(STATELESS_VERSION.to_string());
                    e.step
                        .captures_mut()
                        .insert("version".into(), json!(STATELESS_VERSION));
                } else if e.played.case().handshake {
                    handshake(e).await?;
                } else {
                    let played = played_version(e);
                    e.step
                        .captures_mut()
                        .insert("version".into(), json!(played));
                }
                let steps = &e.played.case().steps;
                e.steps(steps).await
            })
            .await;
        match played {
            Ok(done) => done,
            Err(ran) => {
                e.rule(
                    Severity::Fail,
                    Req::Tmo02,
                    format!(
                        "the case did not finish within its time limit of {} (it ran {}; a busy \
                         machine lengthens it); the client hung (see the \
                         transcript so far), or raise the limit with --timeout",
                        crate::transcript::span(base),
                        crate::transcript::span(ran)
                    ),
                );
                Err(Stop::Hung)
            }
        }
    }

    async fn finish<T: Transport>(
        e: &mut Engine<'_, T, Self>,
        played: Result<(), Stop>,
    ) -> Option<String> {
        match played {
            Ok(()) | Err(Stop::Done) => {
                wind_down(e).await;
                if crate::rules::client_cancel::abandons_only(&e.played.case().actions) {
                    let level = e.played.severity();
                    let open = crate::rules::client_cancel::waits_left_open(
                        e.ledger.received_requests(),
                        level,
                    );
                    e.problems(open);
                }
            }
            Err(Stop::Skip(reason)) => return Some(reason),
            Err(Stop::Gone | Stop::Hung) => {
                e.side.stopped = Some(e.step.line());
                settle(e).await;
                // It may have said why it left.
                if let Some(Stop::Skip(reason)) = adapter::declined(e) {
                    return Some(reason);
                }
            }
        }
        for message in e.side.sessions.uninitialized(&e.ledger) {
            e.rule(Severity::Fail, Req::Lif03, message);
        }
        e.http_finish();
        for note in e.side.sessions.notes() {
            e.rule(Severity::Note, Req::Std06, note);
        }
        None
    }

    /// A client's ids are scoped by its sessions: the ledger starts afresh with each one, and
    /// the harness's server has no second session of its own, so `scope` is always the first.
    async fn judge<T: Transport>(e: &mut Engine<'_, T, Self>, index: usize, _scope: Option<&str>) {
        e.judge_client_message(index).await;
    }

    fn drained<T: Transport>(e: &mut Engine<'_, T, Self>) {
        let problems = e.side.crossing.finish(&e.ledger);
        e.problems(problems);
    }

    fn observe<T: Transport>(e: &mut Engine<'_, T, Self>, at: Duration, event: Event) {
        match event {
            Event::Connected(count) => {
                e.liveness.heard(at);
                e.side.connected = true;
                if count > 1 {
                    e.io.note(format!("[relay] the client started server process {count}"));
                }
                e.open_session(Channel::of_process(count), None, false);
            }
            Event::Signal {
                channel: channel @ (Channel::Post(_) | Channel::Get(_)),
                ..
            } => e.stream_closed(at, channel),
            Event::Signal { channel, signal } => {
                if let Some((note, ended)) = e.side.sessions.signal(channel, signal) {
                    if ended {
                        e.liveness.output_closed();
                    }
                    e.io.note(note);
                }
            }
            Event::HttpRequest(seen) => e.http_request(at, *seen),
            Event::AdapterLine(bytes) => adapter_line(e, &bytes),
            Event::AdapterOverlong => e.finding(
                Severity::Fail,
                FindingKind::Adapter,
                "the adapter wrote an overlong stdout line".into(),
            ),
            _ => {}
        }
    }

    async fn role_step<T: Transport>(e: &mut Engine<'_, T, Self>, step: &Step) -> Result<(), Stop> {
        match &step.kind {
            StepKind::Exit(span) => {
                let within = span.resolve(e.step.captures());
                e.judge_exit(within).await;
                Ok(())
            }
            StepKind::ExpireSession => {
                e.io.expire_session();
                e.side.http.expired = true;
                if let Some(session) = e.side.sessions.current_mut() {
                    session.forgotten = true;
                }
                e.io.note("[harness] the server forgets the session".into());
                Ok(())
            }
            StepKind::Disconnect(id) => {
                let id = e.fill_id(id)?;
                e.disconnect(&id);
                Ok(())
            }
            StepKind::Cancelled(id) => {
                let id = e.fill_id(id)?;
                e.client_cancels(step.line, &id).await
            }
            StepKind::ServerExit => {
                e.side.server_exited = true;
                e.io.note("[harness] the server exits on its own".into());
                let text = "[the server exits]".to_string();
                e.diff.push(format!("{} {text}", Self::SENDS));
                e.transcript
                    .push(crate::transcript::Entry::sent(e.now(), text, None, false));
                e.clock.sent();
                e.io.close_input();
                Ok(())
            }
            _ => {
                e.finding(
                    Severity::Fail,
                    FindingKind::CaseBug,
                    "bug in case: `! silent`, `! witness` and `! close-stdin` are for server cases"
                        .into(),
                );
                Err(Stop::Hung)
            }
        }
    }

    /// A client stops the steps when the adapter declines the case or the case turns out not
    /// to apply (before a step); by ending its session, which is no fault once its actions
    /// are done (a message that could not be sent); or by going away while the harness waits
    /// for an answer of its own. A silence is judged by the expected message it leaves
    /// missing.
    async fn stop<T: Transport>(e: &mut Engine<'_, T, Self>, why: Why) -> Option<Stop> {
        match why {
            Why::Step => {
                return adapter::declined(e).or_else(|| e.side.era.skip.take().map(Stop::Skip))
            }
            Why::Silence => return None,
            Why::Unanswered if !e.liveness.gone() => return None,
            Why::Unanswered => {}
            Why::Unsent => {
                // The adapter's last outcome lines travel on another pipe: let them arrive.
                // Its exit says nothing about them: the exit and its output are reported by
                // different tasks, so the lines it wrote last may still be on their way when
                // the exit is known.
                let until = Deadline::now() + e.clock.stretched(Duration::from_millis(200));
                while !actions_done(e) && !e.io.finished() && e.next(until).await {}
                if actions_done(e) {
                    return Some(Stop::Done);
                }
            }
        }
        report_gone(e);
        Some(Stop::Gone)
    }

    fn stamp<T: Transport>(e: &Engine<'_, T, Self>, message: &mut Value) -> bool {
        e.side.era.plays
            && e.played.case().stamp
            && ProtocolVersion::V2026_07_28.stamp_result(message)
    }

    fn unoffered<T: Transport>(e: &Engine<'_, T, Self>, message: &Value) -> Option<String> {
        let method = message.get("method").and_then(Value::as_str)?;
        message.get("id")?;
        let capability = needed_capability(method)?;
        let declared = e.side.declared.as_ref()?;
        declared.get(capability).is_none().then(|| {
            format!(
                "the client did not declare `{capability}` in its `initialize`, so the harness's server may not send it `{method}`; the case needs a client that offers {capability}"
            )
        })
    }

    fn sent<T: Transport>(e: &mut Engine<'_, T, Self>, message: &Value) {
        stateless::answered_client(&mut e.side, &mut e.opening, &e.ledger, message);
        let answered = message
            .get("id")
            .filter(|_| message.get("method").is_none())
            .and_then(|id| e.ledger.received(&e.ledger.key(id)));
        if let (Some(request), Some(id)) = (answered, message.get("id")) {
            let key = e.ledger.key(id);
            // The request may not have been judged yet (the steps answer it first).
            let params = e
                .transcript
                .iter()
                .rev()
                .filter(|entry| entry.direction == crate::transcript::Direction::Received)
                .filter_map(|entry| entry.value.as_ref())
                .find(|v| v.get("method").is_some() && v.get("id") == Some(id))
                .and_then(|v| v.get("params"));
            e.side.tasks.asked(&key, params);
            e.side.tasks.learn(&key, &request.method, message);
        }
    }

    async fn after_send<T: Transport>(e: &mut Engine<'_, T, Self>) {
        e.send_released().await;
    }

    fn absence<T: Transport>(e: &Engine<'_, T, Self>) -> String {
        if e.liveness.has_exited() {
            format!(
                " (the client had exited with {})",
                e.io.exit_status()
                    .map(|s| s.to_string())
                    .unwrap_or_default()
            )
        } else if e
            .side
            .sessions
            .current()
            .is_some_and(|s| s.stdin_closed.is_some())
        {
            " (the client had closed its server's stdin)".to_string()
        } else {
            String::new()
        }
    }
}

/// Reports (once) that the client ended its session while the case still needed it, unless
/// the harness's server exited on its own.
fn report_gone<T: Transport>(e: &mut Engine<'_, T, ClientTarget>) {
    if e.side.server_exited || e.findings.cites(Req::Can08) {
        return;
    }
    let how = match (e.side.sessions.current(), e.io.exit_status()) {
        (_, Some(status)) => format!("it exited with {status}"),
        (Some(session), None) if session.http_id.is_none() => {
            format!("it {}", session.how_ended())
        }
        _ => "the server connection dropped".to_string(),
    };
    e.rule(
        Severity::Fail,
        Req::Can08,
        format!(
            "the client ended the session while the case still needed it ({how}); see its stderr"
        ),
    );
}
