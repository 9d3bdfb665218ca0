//! The harness as a server, testing a client target.
//!
//! The client under test is an adapter program around some MCP client library. The harness
//! starts it with the case's actions and a server to start (the relay), answers its
//! `initialize` (unless the case does), plays the steps as the server, answers requests the
//! case does not script as a plain server would, and at the end judges how the adapter says
//! each action ended (`@outcomes`) and how the client shut its server down (STD-06). The
//! adapter contract is in the README ("Testing a client").

use super::adapter::{actions_done, adapter_line, judge_outcomes, wind_down};
use super::{Engine, Options, Report, Side, Stop};
use crate::case::{Case, Step, StepKind};
use crate::era::HANDSHAKE_VERSIONS;
use crate::outcome::{FindingKind, Severity};
use crate::rules::envelope::{Writer, CLIENT};
use crate::transcript::Direction;
use crate::transport::process::{display_argv, Launch};
use crate::transport::relay::Relay;
use crate::transport::{Event, PeerSignal, SendError, Transport};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};
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
    pub(super) outcomes: BTreeMap<usize, Value>,
    /// How many times the client started its server.
    connections: u32,
    /// When the client closed its server's stdin.
    pub(crate) stdin_closed: Option<Instant>,
    /// When the client sent its server SIGTERM.
    terminated: Option<Instant>,
}

/// Runs one client case: starts the adapter `launch` with the case's actions and a server
/// command `relay` (the relay program's argv; the harness appends its address), plays the
/// steps as the server, and judges what the client did and what the adapter reported. Never
/// panics on client behaviour; always kills and reaps the adapter and its children.
pub async fn run_client_case(
    case: &Case,
    launch: &Launch,
    relay: &[String],
    options: &Options,
) -> Result<Report, String> {
    let mut launch = launch.clone();
    launch.env.extend([
        (ENV_ACTIONS.to_string(), json!(case.actions).to_string()),
        (ENV_CASE.to_string(), case.id.clone()),
        (ENV_VERSION.to_string(), options.protocol_version.clone()),
    ]);
    let io = Relay::start(&launch, relay, options.reply_timeout).await?;
    let mut side = ClientTarget::default();
    scripted_methods(&case.steps, &mut side.scripted);
    Ok(Engine::new(case, options, io, side)
        .run(display_argv(&launch.argv))
        .await)
}

/// Methods the case's `>` lines expect: the harness leaves those to the case and answers
/// any other request itself.
fn scripted_methods(steps: &[Step], out: &mut HashSet<String>) {
    for step in steps {
        match &step.kind {
            StepKind::Expect(text) => {
                let probe = text.replace("{$", "{");
                if let Some(method) = serde_json::from_str::<Value>(&probe)
                    .ok()
                    .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_string))
                {
                    out.insert(method);
                }
            }
            StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. } => {
                scripted_methods(steps, out)
            }
            _ => {}
        }
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
        let limit = e.case_limit();
        let played = tokio::time::timeout(limit, async {
            connect(e).await?;
            if e.case.handshake {
                handshake(e).await?;
            } else {
                e.captures
                    .insert("version".into(), json!(e.options.protocol_version));
            }
            let steps = e.case.steps.clone();
            e.steps(&steps).await
        })
        .await;
        match played {
            Ok(done) => done,
            Err(_) => {
                e.rule(
                    Severity::Fail,
                    "TMO-02",
                    format!(
                        "the case did not finish within its time limit of {}; the client hung (see \
                         the transcript so far), or raise the limit with --timeout",
                        crate::transcript::millis(limit).trim_start_matches('+')
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
            Ok(()) | Err(Stop::Done) => wind_down(e).await,
            Err(Stop::Skip(reason)) => return Some(reason),
            Err(Stop::Gone | Stop::Hung) => judge_outcomes(e),
        }
        None
    }

    async fn judge<T: Transport>(e: &mut Engine<'_, T, Self>, index: usize) {
        e.judge_client_message(index).await;
    }

    fn observe<T: Transport>(e: &mut Engine<'_, T, Self>, at: Duration, event: Event) {
        match event {
            Event::Connected(count) => {
                e.heard(at);
                e.side.connections = count;
                if count > 1 {
                    e.rule(
                        e.case_severity(),
                        "CAN-08",
                        "the client started its server a second time: the session was torn down \
                         and restarted (the transcript shows the first session only)"
                            .into(),
                    );
                }
            }
            Event::Signal(PeerSignal::StdinClosed) => {
                e.side.stdin_closed.get_or_insert_with(Instant::now);
                e.io.note("[relay] the client closed the server's stdin; the server exits".into());
            }
            Event::Signal(PeerSignal::Terminated) => {
                e.side.terminated.get_or_insert_with(Instant::now);
                e.io.note("[relay] the client sent SIGTERM to the server".into());
            }
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
                let within = e.span(span);
                let until = Deadline::now() + within;
                while !e.exited && e.next(until).await {}
                judge_exit(e, within);
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

    async fn lost<T: Transport>(e: &mut Engine<'_, T, Self>, _error: SendError) -> Stop {
        // The adapter's last outcome lines travel on another pipe: let them arrive.
        let until = Deadline::now() + Duration::from_millis(200);
        while !actions_done(e) && !e.exited && e.next(until).await {}
        if actions_done(e) {
            return Stop::Done;
        }
        Self::gone(e);
        Stop::Gone
    }

    fn gone<T: Transport>(e: &mut Engine<'_, T, Self>) {
        if e.findings.iter().any(|f| f.requirement() == "CAN-08") {
            return;
        }
        let how = match (e.side.stdin_closed, e.io.exit_status()) {
            (Some(_), _) => "it closed the server's stdin".to_string(),
            (None, Some(status)) => format!("it exited with {status}"),
            (None, None) => "the server connection dropped".to_string(),
        };
        e.rule(
            Severity::Fail,
            "CAN-08",
            format!("the client ended the session while the case still needed it ({how}); see its stderr"),
        );
    }

    fn ended<T: Transport>(_e: &mut Engine<'_, T, Self>) -> Option<Stop> {
        None
    }

    fn absence<T: Transport>(e: &Engine<'_, T, Self>) -> String {
        if e.exited {
            format!(
                " (the client had exited with {})",
                e.io.exit_status()
                    .map(|s| s.to_string())
                    .unwrap_or_default()
            )
        } else if e.side.stdin_closed.is_some() {
            " (the client had closed its server's stdin)".to_string()
        } else {
            String::new()
        }
    }
}

/// Waits for the client to start its server, which connects back to the harness.
async fn connect<T: Transport>(e: &mut Engine<'_, T, ClientTarget>) -> Result<(), Stop> {
    let deadline = Deadline::now() + START_TIMEOUT.min(e.options.case_timeout);
    while e.side.connections == 0 {
        if !e.next(deadline).await || (e.exited && e.side.connections == 0) {
            let how = match e.io.exit_status() {
                Some(status) => format!("it exited with {status}"),
                None => format!("nothing connected within {START_TIMEOUT:?}"),
            };
            e.rule(
                Severity::Fail,
                "STD-01",
                format!(
                    "the client never started the server ({how}); the adapter must spawn the \
                     argv in {} as its stdio server (see its stderr below)",
                    crate::transport::relay::ENV_SERVER
                ),
            );
            return Err(Stop::Gone);
        }
    }
    Ok(())
}

/// Waits for the client's `initialize` and answers it with the version it asked for, or the
/// harness's when it asked for one the harness does not know.
async fn handshake<T: Transport>(e: &mut Engine<'_, T, ClientTarget>) -> Result<(), Stop> {
    e.line = 0;
    let deadline = Deadline::now() + e.options.reply_timeout;
    let index = loop {
        let found = e.transcript.iter().position(|entry| {
            entry.direction == Direction::Received
                && entry.consumed_by.is_none()
                && entry.value.as_ref().and_then(|v| v.get("method")) == Some(&json!("initialize"))
        });
        if let Some(index) = found {
            break index;
        }
        if !e.next(deadline).await {
            e.rule(
                Severity::Fail,
                "LIF-01",
                format!(
                    "the client sent no `initialize` within {:?} of starting its server",
                    e.options.reply_timeout
                ),
            );
            return Err(Stop::Hung);
        }
    };
    e.take_internal(index);
    let request = e.value(index);
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let asked = request
        .pointer("/params/protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = if HANDSHAKE_VERSIONS.contains(&asked) {
        asked.to_string()
    } else {
        e.options.protocol_version.clone()
    };
    e.captures.insert("init".into(), id.clone());
    e.captures.insert("version".into(), json!(version));
    e.version = Some(version.clone());
    if !e.case.versions.contains(&version) {
        return Err(Stop::Skip(format!(
            "the case applies to {}; the client asked for {version}",
            e.case.versions.join(", ")
        )));
    }
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "conformance", "version": env!("CARGO_PKG_VERSION")}
    }});
    e.write(answer.to_string(), true).await
}

/// `! exit D` in a client case: the client ends its session within D, and it does so the
/// stdio way (STD-06): the server's stdin is closed before any signal.
fn judge_exit<T: Transport>(e: &mut Engine<'_, T, ClientTarget>, within: Duration) {
    let shown = crate::transcript::millis(within);
    let shown = shown.trim_start_matches('+');
    let severity = e.case_severity();
    if !e.exited {
        e.rule(
            severity,
            "STD-06",
            format!("the client was still running {shown} after its last action"),
        );
        return;
    }
    let complaint = match (e.side.stdin_closed, e.side.terminated, e.output_closed) {
        (Some(_), None, _) => None,
        (Some(eof), Some(term), _) if eof <= term => None,
        (_, Some(_), _) => {
            Some("the client sent SIGTERM to its server without closing the server's stdin first")
        }
        (None, None, true) => {
            Some("the client killed its server without closing the server's stdin first")
        }
        (None, None, false) => {
            Some("the client exited and left its server running with stdin open")
        }
    };
    if let Some(complaint) = complaint {
        e.rule(severity, "STD-06", complaint.into());
    }
}
