//! How a client's session starts: the client reaches the harness's server (its relay
//! connects, or its first HTTP request arrives), and its `initialize` is answered with the
//! version it asked for when the harness knows it. The harness plays a server of the
//! handshake era, also when asked to play 2026-07-28.

use super::adapter::actions_done;
use super::{ClientTarget, START_TIMEOUT};
use crate::engine::{Engine, Stop};
use crate::era::ProtocolVersion;
use crate::outcome::Severity;
use crate::requirement::Req;
use crate::transcript::Direction;
use crate::transport::http_server::ENV_SERVER_URL;
use crate::transport::Transport;
use serde_json::{json, Value};

/// How the finding of a client that never reached the harness's server begins.
const NEVER_REACHED: &str = "the client never reached the server";

/// Whether a client case ended because the client never reached the harness's server.
pub fn never_reached(report: &crate::case_report::Report) -> bool {
    report.findings.iter().any(|f| {
        f.severity == Severity::Fail
            && f.requirement() == Req::Std01.as_str()
            && f.message.starts_with(NEVER_REACHED)
    })
}

/// Waits for the client to start its server, which connects back to the harness. The
/// allowance follows the machine's CPU pressure while it lasts (see `wait_allowed`).
pub(super) async fn connect<T: Transport>(e: &mut Engine<'_, T, ClientTarget>) -> Result<(), Stop> {
    let start = e
        .wait_allowed(
            |e| e.clock.stretched(START_TIMEOUT).min(e.played.limit()),
            |e| e.side.connected || e.liveness.has_exited() || e.side.declined.is_some(),
        )
        .await;
    if let Some(stop) = super::adapter::declined(e) {
        return Err(stop);
    }
    if e.side.connected {
        return Ok(());
    }
    if e.liveness.has_exited() {
        // What it wrote before exiting may still be on its way.
        e.read_to_end().await;
        if e.side.connected {
            return Ok(());
        }
        if let Some(stop) = super::adapter::declined(e) {
            return Err(stop);
        }
        if gave_up_first(e) {
            e.rule(
                Severity::Note,
                Req::Std01,
                "the client's connect deadline passed before its first request reached the server: it sent nothing, so the case has nothing more to judge".into(),
            );
            return Err(Stop::Done);
        }
    }
    let how = match e.io.exit_status() {
        Some(status) => format!("it exited with {status}"),
        None => format!("nothing connected within {start:?}"),
    };
    let contract = if e.io.ordered() {
        format!(
            "the adapter must spawn the argv in {} as its stdio server",
            crate::transport::relay::ENV_SERVER
        )
    } else {
        format!("the adapter must connect to the URL in {ENV_SERVER_URL}")
    };
    e.rule(
        Severity::Fail,
        Req::Std01,
        format!("{NEVER_REACHED} ({how}); {contract} (see its stderr below)"),
    );
    Err(Stop::Gone)
}

/// Waits for the client's `initialize` and answers it with the version it asked for, or the
/// harness's when it asked for one the harness does not know. The wait follows the machine's
/// CPU pressure while it lasts.
pub(super) async fn handshake<T: Transport>(
    e: &mut Engine<'_, T, ClientTarget>,
) -> Result<(), Stop> {
    e.step.at(0);
    let reply = e.played.options().reply_timeout;
    let within = e
        .wait_allowed(
            |e| e.clock.stretched(reply),
            |e| initialize_index(e).is_some(),
        )
        .await;
    let Some(index) = initialize_index(e) else {
        e.rule(
            Severity::Fail,
            Req::Lif01,
            format!("the client sent no `initialize` within {within:?} of starting its server"),
        );
        return Err(Stop::Hung);
    };
    e.transcript.take_internal(index);
    let (answer, version) = initialize_answer(e, e.transcript.message(index));
    e.step
        .captures_mut()
        .insert("init".into(), answer["id"].clone());
    e.step
        .captures_mut()
        .insert("version".into(), json!(version));
    e.opening.agree(version.clone());
    e.side.handshaken = true;
    let covered =
        ProtocolVersion::parse(&version).is_some_and(|v| e.played.case().versions.contains(&v));
    if !covered {
        return Err(Stop::Skip(format!(
            "the case applies to {}; the client asked for {version}",
            ProtocolVersion::joined(&e.played.case().versions)
        )));
    }
    e.write(answer.to_string(), true).await
}

/// Where the client's first `initialize` not yet taken is in the transcript.
fn initialize_index<T: Transport>(e: &Engine<'_, T, ClientTarget>) -> Option<usize> {
    e.transcript.iter().position(|entry| {
        entry.direction == Direction::Received
            && entry.consumed_by.is_none()
            && entry.value.as_ref().and_then(|v| v.get("method")) == Some(&json!("initialize"))
    })
}

/// The version the harness's server plays: the one asked for with `--protocol-version` when
/// it is of the handshake era, else the newest of that era.
pub(super) fn played_version<T: Transport>(e: &Engine<'_, T, ClientTarget>) -> &'static str {
    let asked = e.played.options().protocol_version;
    if asked.has_handshake() {
        asked.as_str()
    } else {
        ProtocolVersion::NEWEST_HANDSHAKE.as_str()
    }
}

/// The harness's answer to an `initialize` request, and the version it agrees to: the one the
/// client asked for when the harness knows it, else the one it plays. The harness plays a
/// server of the handshake era: asked to play 2026-07-28, it answers as the newest
/// handshake-era server would (so a client that speaks both eras must fall back, LIF-14).
pub(crate) fn initialize_answer<T: Transport>(
    e: &Engine<'_, T, ClientTarget>,
    request: &Value,
) -> (Value, String) {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let asked = request
        .pointer("/params/protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = if ProtocolVersion::parse(asked).is_some_and(|v| v.has_handshake()) {
        asked
    } else {
        played_version(e)
    };
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "conformance", "version": env!("CARGO_PKG_VERSION")}
    }});
    (answer, version.to_string())
}

/// Whether the adapter reported its first `connect` as ended by its own deadline (or an
/// error) and every later action too: a client whose deadline passed before its first
/// request left (a slow start on a busy machine) did nothing wrong.
fn gave_up_first<T: Transport>(e: &Engine<'_, T, ClientTarget>) -> bool {
    let first_connect = e
        .played
        .case()
        .actions
        .iter()
        .position(|a| a.get("connect").is_some());
    let Some(i) = first_connect else {
        return false;
    };
    let deadline = e.played.case().actions[i].get("timeout_ms").is_some();
    let word = e
        .side
        .outcomes
        .get(&i)
        .and_then(|v| v.get("outcome"))
        .and_then(Value::as_str);
    deadline && matches!(word, Some("timeout")) && actions_done(e)
}
