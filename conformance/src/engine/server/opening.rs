//! How a server case opens: `server/discover` in the stateless era, the `initialize`
//! handshake before it, and `! session NAME` for a second session over HTTP. On a stdio
//! session that cases share ([`crate::share`]), the first case's opening serves the later
//! ones: it is kept as an [`Opening`], which they adopt instead of opening again.

use super::super::{Engine, Stop};
use super::ServerTarget;
use crate::era::{Era, ProtocolVersion};
use crate::outcome::Finding;
use crate::outcome::Severity;
use crate::pattern::canonical;
use crate::requirement::Req;
use crate::rules::envelope::short;
use crate::transport::{Channel, Transport};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// What a completed opening of a shared session settled: the answer (`initialize`'s, or
/// `server/discover`'s), the version, and the findings the standing rules made of it, which
/// every case that adopts it carries as a case that opened on its own would.
#[derive(Debug, Clone)]
pub struct Opening {
    /// What the harness sent to open it (`initialize` or `server/discover`).
    request: Value,
    answer: Value,
    version: String,
    findings: Vec<Finding>,
    /// Who opened it: `an earlier case`, or `the version probe`.
    by: &'static str,
}

impl Opening {
    /// The opening of a session the version probe opened and handed to the cases: its
    /// question, the target's answer, and the version. The probe hands a session over only
    /// when the answer and everything else the target wrote were answers the envelope rules
    /// find nothing in ([`crate::versions`]), so the opening earned no finding.
    pub fn of_probe(request: Value, answer: Value, version: String) -> Opening {
        Opening {
            request,
            answer,
            version,
            findings: vec![],
            by: "the version probe",
        }
    }
}

/// The opening of a session cases share: empty until its first case (or the version probe)
/// opens it.
pub type SharedOpening = Arc<Mutex<Option<Opening>>>;

/// Opens the session as the era and the case call for: `server/discover`, the handshake, or
/// nothing (a case that performs the handshake itself).
pub(super) async fn open<T: Transport>(e: &mut Engine<'_, T, ServerTarget>) -> Result<(), Stop> {
    let era = e.protocol().map(|v| v.era());
    let kept = e
        .side
        .shared
        .as_ref()
        .and_then(|s| s.lock().unwrap_or_else(|p| p.into_inner()).clone());
    if let Some(opening) = kept {
        return adopt(e, &opening, era == Some(Era::Stateless));
    }
    if era == Some(Era::Stateless) {
        discover(e).await
    } else if e.played.case().handshake {
        handshake(e).await
    } else {
        e.step.captures_mut().insert(
            "version".into(),
            json!(e.played.options().protocol_version.as_str()),
        );
        Ok(())
    }
}

/// `! session NAME`: switches to session NAME, opening it with its own handshake when it is
/// new. A server that assigns no session ids has no second session to offer.
pub(super) async fn session<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    name: &str,
) -> Result<(), Stop> {
    let Some(http) = e.io.http_steps() else {
        return Ok(());
    };
    if http.session_name() == name {
        return Ok(());
    }
    if !e.streams.knows(name) && !http.has_session_id() {
        return Err(Stop::Skip(
            "the server assigned no session id, so there is no second session to open (sessions are optional, HTTP-16)".into(),
        ));
    }
    let fresh = http.switch_session(name);
    let index = e.streams.enter(name);
    e.ledger.enter(e.streams.scope(index).map(str::to_string));
    e.mark(format!("[session {name}]"), Channel::Stdio);
    if fresh {
        let line = e.step.line();
        handshake(e).await?;
        e.step.at(line);
    }
    Ok(())
}

/// `initialize` with the requested version, then `notifications/initialized`.
pub(super) async fn handshake<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
) -> Result<(), Stop> {
    e.step.at(0);
    let before = e.findings.list().len();
    let requested = e.played.options().protocol_version;
    let init = json!({
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": requested.as_str(),
            "capabilities": {},
            "clientInfo": {"name": "conformance", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let answer = e.request_internal(&init, Req::Lif02).await?;
    let reply = e.transcript.message(answer);
    let Some(version) = reply
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        let shown = canonical(reply);
        e.rule(
            Severity::Fail,
            Req::Lif02,
            format!(
                "initialize was not answered with a result carrying protocolVersion: {shown}; \
                 the target must complete the handshake before anything can be tested"
            ),
        );
        return Err(Stop::Hung);
    };
    let handshake_version = ProtocolVersion::parse(&version).is_some_and(|v| v.has_handshake());
    if version != requested.as_str() && !handshake_version {
        e.rule(
            Severity::Fail,
            Req::Lif06,
            format!(
                "asked for {requested}, the target answered with `{version}`, which is no \
                 protocol version of the handshake era"
            ),
        );
        return Err(Stop::Hung);
    }
    e.opening.agree(version.clone());
    e.step
        .captures_mut()
        .insert("version".into(), json!(version));
    let streamable = ProtocolVersion::parse(&version).is_none_or(|v| v.has_streamable_http());
    if e.io.channel_per_request() && !streamable {
        return Err(Stop::Skip(format!(
            "the target agreed to {version}, whose HTTP transport is the older HTTP+SSE, which the harness does not test (choose 2025-03-26 or later with --protocol-version)"
        )));
    }
    let skip = agreed_skip(e, &version).or_else(|| unmet(e, e.transcript.message(answer), false));
    // A shared session is completed all the same: the later cases go on in it.
    if let (Some(reason), None) = (&skip, &e.side.shared) {
        return Err(Stop::Skip(reason.clone()));
    }
    e.write(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
        true,
    )
    .await?;
    keep(e, init, answer, version, before);
    skip.map_or(Ok(()), |reason| Err(Stop::Skip(reason)))
}

/// Why a handshake-era case does not apply at the version the target agreed to.
fn agreed_skip<T: Transport>(e: &Engine<'_, T, ServerTarget>, version: &str) -> Option<String> {
    (!covers(e.played.case(), version)).then(|| {
        format!(
            "the case applies to {}; the target agreed to {version} (choose one with \
             --protocol-version)",
            ProtocolVersion::joined(&e.played.case().versions)
        )
    })
}

/// Whether the case applies to `version`, a version as the target gave it.
fn covers(case: &crate::case::Case, version: &str) -> bool {
    ProtocolVersion::parse(version).is_some_and(|v| case.versions.contains(&v))
}

/// Keeps a completed opening for the later cases of a shared session (the answer at
/// transcript index `answer`, a copy for the later cases), with the findings made of it since
/// `before`.
fn keep<T: Transport>(
    e: &Engine<'_, T, ServerTarget>,
    request: Value,
    answer: usize,
    version: String,
    before: usize,
) {
    if let Some(shared) = &e.side.shared {
        let findings = e.findings.list()[before..].to_vec();
        *shared.lock().unwrap_or_else(|p| p.into_inner()) = Some(Opening {
            request,
            answer: e.transcript.message(answer).clone(),
            version,
            findings,
            by: "an earlier case",
        });
    }
}

/// Goes on in a shared session an earlier case opened: what its opening settled, and the
/// skips a case of its own would decide on the same answer.
fn adopt<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    opening: &Opening,
    stateless: bool,
) -> Result<(), Stop> {
    e.step.at(0);
    let version = opening.version.clone();
    if stateless && !covers(e.played.case(), &version) {
        return Err(Stop::Skip(format!(
            "the case applies to {}, not to {version}",
            ProtocolVersion::joined(&e.played.case().versions)
        )));
    }
    for f in &opening.findings {
        for _ in 0..f.times.max(1) {
            e.findings
                .add(f.severity, f.kind, f.line, f.message.clone());
        }
    }
    e.opening.agree(version.clone());
    e.step
        .captures_mut()
        .insert("version".into(), json!(version));
    if stateless {
        e.io.agreed(&version);
    } else if let Some(reason) = agreed_skip(e, &version) {
        return Err(Stop::Skip(reason));
    }
    e.io.note(format!(
        "[harness] the session was opened by {} at {version}; this case goes on in it",
        opening.by
    ));
    // The reports show how its session was opened, which this case's transcript cannot.
    let mut messages = vec![opening.request.clone(), opening.answer.clone()];
    if !stateless {
        messages.push(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }
    e.opening.adopt(messages);
    needs_met(e, &opening.answer, stateless)
}

/// The stateless era's opening: every request stands alone, so there is no handshake, but a
/// client that speaks both eras opens with `server/discover` (LIF-11, LIF-14), which also
/// tells a server that speaks both which era the connection is in.
pub(super) async fn discover<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
) -> Result<(), Stop> {
    e.step.at(0);
    let version = e.played.options().protocol_version;
    if !e.played.case().versions.contains(&version) {
        return Err(Stop::Skip(format!(
            "the case applies to {}, not to {version}",
            ProtocolVersion::joined(&e.played.case().versions)
        )));
    }
    let before = e.findings.list().len();
    e.opening.agree(version.to_string());
    e.step
        .captures_mut()
        .insert("version".into(), json!(version.as_str()));
    // Over HTTP every POST of the case carries the era's headers from now on (HTTP-19).
    e.io.agreed(version.as_str());
    let probe = crate::era::ProtocolVersion::V2026_07_28.probe("discover");
    let answer = e.request_internal(&probe, Req::Lif11).await?;
    let reply = e.transcript.message(answer);
    let listed = reply
        .pointer("/result/supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(version.as_str())));
    if !listed {
        let shown = short(reply);
        e.rule(
            Severity::Fail,
            Req::Lif11,
            format!(
                "server/discover must answer with `supportedVersions` listing the versions the server speaks ({version} among them): {shown}"
            ),
        );
        return Err(Stop::Hung);
    }
    let met = needs_met(e, e.transcript.message(answer), true);
    keep(e, probe, answer, version.to_string(), before);
    met
}

/// `@needs`: a case about what the server did not declare does not apply to it (skipped with
/// the reason, never failed).
fn needs_met<T: Transport>(
    e: &Engine<'_, T, ServerTarget>,
    opening: &Value,
    stateless: bool,
) -> Result<(), Stop> {
    unmet(e, opening, stateless).map_or(Ok(()), |reason| Err(Stop::Skip(reason)))
}

/// The first `@needs` the opening does not meet, as a skip reason.
fn unmet<T: Transport>(
    e: &Engine<'_, T, ServerTarget>,
    opening: &Value,
    stateless: bool,
) -> Option<String> {
    e.played
        .case()
        .needs
        .iter()
        .find_map(|n| n.unmet(opening, stateless))
}
