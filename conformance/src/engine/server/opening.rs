//! How a server case opens: `server/discover` in the stateless era, the `initialize`
//! handshake before it, and `! session NAME` for a second session over HTTP.

use super::super::{Engine, Stop};
use super::ServerTarget;
use crate::era::{Era, ProtocolVersion, HANDSHAKE_VERSIONS};
use crate::outcome::Severity;
use crate::pattern::canonical;
use crate::requirement::Req;
use crate::rules::envelope::short;
use crate::transport::{Channel, Transport};
use serde_json::{json, Value};

/// Opens the session as the era and the case call for: `server/discover`, the handshake, or
/// nothing (a case that performs the handshake itself).
pub(super) async fn open<T: Transport>(e: &mut Engine<'_, T, ServerTarget>) -> Result<(), Stop> {
    let era = e.protocol().map(|v| v.era());
    if era == Some(Era::Stateless) {
        discover(e).await
    } else if e.played.case().handshake {
        handshake(e).await
    } else {
        e.step
            .captures_mut()
            .insert("version".into(), json!(e.played.options().protocol_version));
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
    let known = e.streams.names.iter().position(|n| n == name);
    if known.is_none() && !http.has_session_id() {
        return Err(Stop::Skip(
            "the server assigned no session id, so there is no second session to open (sessions are optional, HTTP-16)".into(),
        ));
    }
    let fresh = http.switch_session(name);
    let index = match known {
        Some(index) => index,
        None => {
            e.streams.names.push(name.to_string());
            e.streams.names.len() - 1
        }
    };
    e.streams.session = index;
    e.ledger.scope = e.scope_of(index);
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
    let requested = e.played.options().protocol_version.clone();
    let init = json!({
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": requested,
            "capabilities": {},
            "clientInfo": {"name": "conformance", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let answer = e.request_internal(init, Req::Lif02).await?;
    let Some(version) = answer
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        e.rule(
            Severity::Fail,
            Req::Lif02,
            format!(
                "initialize was not answered with a result carrying protocolVersion: {}; the \
                 target must complete the handshake before anything can be tested",
                canonical(&answer)
            ),
        );
        return Err(Stop::Hung);
    };
    if version != requested && !HANDSHAKE_VERSIONS.contains(&version.as_str()) {
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
    if !e.played.case().versions.contains(&version) {
        return Err(Stop::Skip(format!(
            "the case applies to {}; the target agreed to {version} (choose one with \
             --protocol-version)",
            e.played.case().versions.join(", ")
        )));
    }
    needs_met(e, &answer, false)?;
    e.write(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
        true,
    )
    .await
}

/// The stateless era's opening: every request stands alone, so there is no handshake, but a
/// client that speaks both eras opens with `server/discover` (LIF-11, LIF-14), which also
/// tells a server that speaks both which era the connection is in.
pub(super) async fn discover<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
) -> Result<(), Stop> {
    e.step.at(0);
    let version = e.played.options().protocol_version.clone();
    if !e.played.case().versions.contains(&version) {
        return Err(Stop::Skip(format!(
            "the case applies to {}, not to {version}",
            e.played.case().versions.join(", ")
        )));
    }
    e.opening.agree(version.clone());
    e.step
        .captures_mut()
        .insert("version".into(), json!(version));
    // Over HTTP every POST of the case carries the era's headers from now on (HTTP-19).
    e.io.agreed(&version);
    let probe = crate::era::ProtocolVersion::V2026_07_28.probe("discover");
    let answer = e.request_internal(probe, Req::Lif11).await?;
    let listed = answer
        .pointer("/result/supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(version.as_str())));
    if !listed {
        e.rule(
            Severity::Fail,
            Req::Lif11,
            format!(
                "server/discover must answer with `supportedVersions` listing the versions the server speaks ({version} among them): {}",
                short(&answer)
            ),
        );
        return Err(Stop::Hung);
    }
    needs_met(e, &answer, true)
}

/// `@needs`: a case about what the server did not declare does not apply to it (skipped with
/// the reason, never failed).
fn needs_met<T: Transport>(
    e: &Engine<'_, T, ServerTarget>,
    opening: &Value,
    stateless: bool,
) -> Result<(), Stop> {
    match e
        .played
        .case()
        .needs
        .iter()
        .find_map(|n| n.unmet(opening, stateless))
    {
        Some(reason) => Err(Stop::Skip(reason)),
        None => Ok(()),
    }
}
