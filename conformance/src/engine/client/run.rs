//! Running one client case: whether it applies to the transport and the version, the
//! adapter's environment, the server the harness plays (the relay or its own HTTP server),
//! and which requests the case's steps answer themselves.

use super::{ClientTarget, ENV_ACTIONS, ENV_CASE, ENV_VERSION};
use crate::case::{Case, Step, StepKind, TransportKind};
use crate::case_report::Report;
use crate::engine::{Engine, Options};
use crate::era::{Era, ProtocolVersion};
use crate::error::StartError;
use crate::transport::http_server::HttpServer;
use crate::transport::process::{display_argv, Launch};
use crate::transport::relay::Relay;
use crate::transport::Transport;
use serde_json::{json, Value};
use std::collections::HashSet;

/// How the harness meets a client target.
#[derive(Debug, Clone)]
pub enum ClientTransport {
    /// The client starts `relay` (the relay program's argv; the harness appends its address)
    /// as its stdio server.
    Stdio {
        /// The relay program's argv.
        relay: Vec<String>,
    },
    /// The client talks to the harness's Streamable HTTP server at a loopback URL.
    Http,
}

impl ClientTransport {
    /// The kind of transport, as cases name it.
    pub fn kind(&self) -> TransportKind {
        match self {
            ClientTransport::Stdio { .. } => TransportKind::Stdio,
            ClientTransport::Http => TransportKind::Http,
        }
    }
}

/// Runs one client case: starts the adapter `launch` with the case's actions and a server to
/// talk to over `transport`, plays the steps as the server, and judges what the client did
/// and what the adapter reported. A case that does not apply to the transport is skipped.
/// Never panics on client behaviour; always kills and reaps the adapter and its children.
pub async fn run_client_case(
    case: &Case,
    launch: &Launch,
    transport: &ClientTransport,
    options: &Options,
) -> Result<Report, StartError> {
    let target = display_argv(&launch.argv);
    let kind = transport.kind();
    let version = options.protocol_version;
    if !case.versions.contains(&version) {
        return Ok(Report::skipped(
            format!(
                "the case applies to {}; this run is at {version}",
                ProtocolVersion::joined(&case.versions),
            ),
            target,
        ));
    }
    if kind == TransportKind::Http && !version.has_streamable_http() {
        return Ok(Report::skipped(
            format!("{version} has no Streamable HTTP (its HTTP transport was HTTP+SSE)"),
            target,
        ));
    }
    if !case.transports.contains(&kind) {
        let names: Vec<&str> = case.transports.iter().map(|t| t.as_str()).collect();
        return Ok(Report::skipped(
            format!(
                "the case applies to {} only; this run is over {}",
                names.join(" and "),
                kind.as_str()
            ),
            target,
        ));
    }
    let mut launch = launch.clone();
    launch.env.extend([
        (ENV_ACTIONS.to_string(), json!(case.actions).to_string()),
        (ENV_CASE.to_string(), case.id.clone()),
        (ENV_VERSION.to_string(), version.to_string()),
    ]);
    let report = match transport {
        ClientTransport::Stdio { relay } => {
            let io = Relay::start(&launch, relay, options.reply_timeout).await?;
            play_client(case, options, io, target).await
        }
        ClientTransport::Http => {
            let stateless = plays_stateless(case, version);
            let io = HttpServer::start(&launch, options.reply_timeout, stateless).await?;
            play_client(case, options, io, target).await
        }
    };
    Ok(report)
}

/// Whether the server the harness plays is of the stateless era: the run's era, unless the
/// case says otherwise (a client told to speak 2026-07-28 meeting a legacy server, LIF-14).
fn plays_stateless(case: &Case, version: ProtocolVersion) -> bool {
    case.plays.unwrap_or(version.era()) == Era::Stateless
}

/// Plays one client case against the client behind `io`, whatever carries it: an adapter
/// through the relay or the harness's HTTP server, or a scripted client
/// (`transport::scripted`), at `options.protocol_version` (one the case covers); `target` is
/// how the report names it. Never panics on client behaviour; the client is shut down when
/// this returns.
pub async fn play_client<T: Transport>(
    case: &Case,
    options: &Options,
    io: T,
    target: String,
) -> Report {
    let version = options.protocol_version;
    let mut side = ClientTarget::default();
    scripted_methods(&case.steps, &mut side.scripted);
    side.era.plays = plays_stateless(case, version);
    Engine::new(case, options, io, side).run(target).await
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
            kind => {
                if let Some(steps) = kind.inner() {
                    scripted_methods(steps, out)
                }
            }
        }
    }
}
