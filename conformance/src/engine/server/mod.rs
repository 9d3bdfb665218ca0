//! The harness as a client, testing a server target.
//!
//! The session opens with the `initialize` handshake (unless the case performs it itself),
//! the steps run within the case's time limit, and a last barrier flushes whatever the server
//! still had to say about earlier steps, so a response no step expected is seen. The server's
//! own steps are here too: `! silent` and `! witness` (did the work stop?), `! close-stdin`
//! and `! exit` (does the server exit when its input ends?).

mod exit;
mod judge;
mod judge_http;
mod opening;
pub(crate) mod tasks;
mod witness;
mod witnessed;

use super::{Engine, Options, Report, Side, Stop, Why};
use crate::case::{Case, Step, StepKind, TransportKind};
use crate::era::Era;
use crate::error::StartError;
use crate::fixtures;
use crate::outcome::{FindingKind, Severity};
use crate::pattern::{self};
use crate::requirement::Req;
use crate::rules::envelope::{Writer, SERVER};
use crate::rules::http;
use crate::transport::http::{Http, HttpTarget};
use crate::transport::process::{display_argv, Launch};
use crate::transport::stdio::Stdio;
use crate::transport::{Event, Transport};
use exit::exit;
use opening::{open, session};
pub use opening::{Opening, SharedOpening};
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant as Deadline;
use witness::{remember_witness, witness};

/// The role of a server target: what the harness, as its client, does beyond the steps.
#[derive(Debug, Default)]
pub struct ServerTarget {
    /// What the `cancellations` witness listed when the case opened, on a running server
    /// that served earlier cases (their requests are no finding of this case's).
    witness_before: Option<Vec<Value>>,
    /// The opening of a stdio session the case shares with others, when it does.
    shared: Option<SharedOpening>,
}

impl ServerTarget {
    /// A case in a stdio session shared with other cases: it adopts the session's opening
    /// when an earlier case opened it, and keeps its own opening there when it opens it.
    pub fn sharing(opening: SharedOpening) -> ServerTarget {
        ServerTarget {
            witness_before: None,
            shared: Some(opening),
        }
    }
}

/// How to reach a server target: a command to run over stdio, or an HTTP endpoint.
#[derive(Debug, Clone)]
pub enum Connect {
    /// A stdio server, started once per case.
    Stdio(Launch),
    /// A server over Streamable HTTP, started once per case when it has a launch.
    Http(HttpTarget),
}

impl Connect {
    /// The target as reports show it.
    pub fn display(&self) -> String {
        match self {
            Connect::Stdio(launch) => display_argv(&launch.argv),
            Connect::Http(target) => target.display(),
        }
    }

    /// The transport the cases run over.
    pub fn transport(&self) -> TransportKind {
        match self {
            Connect::Stdio(_) => TransportKind::Stdio,
            Connect::Http(_) => TransportKind::Http,
        }
    }
}

/// Runs one case against the target, over its transport.
pub async fn run_case(
    case: &Case,
    connect: &Connect,
    options: &Options,
) -> Result<Report, StartError> {
    match connect {
        Connect::Stdio(launch) => run_server_case(case, launch, options).await,
        Connect::Http(target) => run_http_server_case(case, target, options).await,
    }
}

/// Runs one case against a fresh stdio server process. Never panics on target behaviour;
/// always kills and reaps the target before returning. Fails only when the target cannot be
/// started at all.
pub async fn run_server_case(
    case: &Case,
    launch: &Launch,
    options: &Options,
) -> Result<Report, StartError> {
    let target = display_argv(&launch.argv);
    if let Some(reason) = not_applicable(case, options, TransportKind::Stdio) {
        return Ok(Report::skipped(reason, target));
    }
    let io = Stdio::spawn(launch, options.reply_timeout).map_err(|source| StartError::Spawn {
        target: target.clone(),
        source,
    })?;
    Ok(play(case, options, io, target).await)
}

/// Plays one case against the server behind `io`, whatever carries it: a process over stdio,
/// a server over Streamable HTTP, or a scripted target (`transport::scripted`); `target` is
/// how the report names it. Never panics on target behaviour; the target is shut down when
/// this returns.
pub async fn play<T: Transport>(case: &Case, options: &Options, io: T, target: String) -> Report {
    Engine::new(case, options, io, ServerTarget::default())
        .run(target)
        .await
}

/// Runs one case against a server over Streamable HTTP, started for the case when the target
/// has a launch. Never panics on target behaviour; a server it started is always killed and
/// reaped. Fails only when the URL is unusable or the server cannot be started at all.
pub async fn run_http_server_case(
    case: &Case,
    target: &HttpTarget,
    options: &Options,
) -> Result<Report, StartError> {
    let shown = target.display();
    if let Some(reason) = not_applicable(case, options, TransportKind::Http) {
        return Ok(Report::skipped(reason, shown));
    }
    let io = Http::start(target, options.reply_timeout, options.startup_timeout).await?;
    Ok(play(case, options, io, shown).await)
}

/// Why a case does not apply to this target before it starts: its transports, a cancel
/// message the transport's era does not carry, or fixtures the target file does not map.
pub(crate) fn not_applicable(
    case: &Case,
    options: &Options,
    transport: TransportKind,
) -> Option<String> {
    if !case.transports.contains(&transport) {
        let names: Vec<&str> = case.transports.iter().map(|t| t.as_str()).collect();
        return Some(format!(
            "the case applies to {} only; this run is over {}",
            names.join(" and "),
            transport.as_str()
        ));
    }
    let stateless = options.protocol_version.is_stateless();
    if transport == TransportKind::Http && stateless && case.cancels_by_message() {
        return Some(format!(
            "the case sends `notifications/cancelled` for its own request and expects it to cancel; in {} over Streamable HTTP the cancel is closing the request's stream, and a POSTed one may be ignored (CAN-12, AMB-06)",
            options.protocol_version
        ));
    }
    let fixtures = options.fixtures.as_ref()?;
    let lacking: Vec<String> = case
        .fixtures
        .iter()
        .filter_map(|f| fixtures.lacks(f, options.protocol_version))
        .collect();
    (!lacking.is_empty()).then(|| lacking.join("; "))
}

impl Side for ServerTarget {
    const WRITER: &'static Writer = &SERVER;
    const SENDS: char = '>';
    const EXPECTS: char = '<';
    const EXIT_GRACE: Option<Duration> = Some(Duration::from_millis(200));
    const PROBES: bool = true;
    const STAMPS: bool = true;

    async fn play<T: Transport>(e: &mut Engine<'_, T, Self>) -> Result<(), Stop> {
        // The opening may take the startup allowance and the case's own time limit, however
        // the target behaves (it may talk without ever answering).
        let opening = e.limit(e.played.options().startup_timeout + e.played.limit());
        let opened = match opening.within(open(e)).await {
            Ok(opened) => opened,
            Err(ran) => {
                let (rule, what) = if e.protocol().map(|v| v.era()) == Some(Era::Stateless) {
                    (Req::Lif11, "`server/discover`")
                } else {
                    (Req::Lif02, "the `initialize` handshake")
                };
                e.step.at(0);
                e.rule(
                    Severity::Fail,
                    rule,
                    format!(
                        "{what} did not complete within {} (the startup allowance and the case's time limit, longer on a busy machine); {}",
                        crate::transcript::span(ran),
                        e.liveness.what_was_heard()
                    ),
                );
                return Err(Stop::Hung);
            }
        };
        opened?;
        e.opening.complete();
        // The case's own clock starts once the target has started; a case that performs the
        // handshake itself also gets the start's allowance.
        let mut base = e.played.limit();
        if !e.played.case().handshake {
            base += e.played.options().startup_timeout;
        }
        let limit = e.limit(base);
        match limit.within(body(e)).await {
            Ok(done) => done,
            Err(ran) => {
                e.rule(
                    Severity::Fail,
                    Req::Can11,
                    format!(
                        "the case did not finish within its time limit of {} (it ran {}; \
                         a busy machine lengthens it); the target hung (see the \
                         transcript so far), or raise the limit with --timeout (or the case's \
                         @timeout)",
                        crate::transcript::span(base),
                        crate::transcript::span(ran)
                    ),
                );
                Err(Stop::Hung)
            }
        }
    }

    async fn finish<T: Transport>(
        _e: &mut Engine<'_, T, Self>,
        played: Result<(), Stop>,
    ) -> Option<String> {
        match played {
            Err(Stop::Skip(reason)) => Some(reason),
            _ => None,
        }
    }

    async fn judge<T: Transport>(e: &mut Engine<'_, T, Self>, index: usize, scope: Option<&str>) {
        e.judge_server_message(index, scope).await;
    }

    fn drained<T: Transport>(e: &mut Engine<'_, T, Self>) {
        let late = crate::rules::server::late_progress_in(&e.ledger, &e.waits(), |_| e.protocol());
        for (line, problem) in late {
            e.step.at(line);
            e.problems([problem]);
        }
    }

    /// A channel's status, or its end, judged by the HTTP rules.
    fn observe<T: Transport>(e: &mut Engine<'_, T, Self>, _at: Duration, event: Event) {
        // Whether an error status's body answers the request (the stateless era, HTTP-19).
        let stateless = e.protocol().is_some_and(|v| v.era() == Era::Stateless);
        match event {
            Event::Status { channel, head } => {
                let problems = judge_http::status(&e.streams, &e.ledger, channel, &head, stateless);
                e.problems(problems);
            }
            Event::Closed {
                channel,
                end,
                bytes,
            } => e.judge_end(channel, &end, bytes, stateless),
            _ => {}
        }
    }

    async fn role_step<T: Transport>(e: &mut Engine<'_, T, Self>, step: &Step) -> Result<(), Stop> {
        match &step.kind {
            StepKind::Silent { id, window } => {
                let id = e.fill_id(id)?;
                let until = Deadline::now() + window.resolve(e.step.captures());
                e.pump_until(until).await;
                e.ledger.watched(&pattern::id_key(&id));
                match e.ledger.sent(&id) {
                    Some(r) if r.cancel.is_some() || r.answers > 0 => Ok(()),
                    _ => {
                        e.finding(
                            Severity::Fail,
                            crate::outcome::FindingKind::CaseBug,
                            format!("bug in case: `! silent {id}` names a request that was neither cancelled nor answered"),
                        );
                        Err(Stop::Hung)
                    }
                }
            }
            StepKind::Witness(ids) => {
                let ids = ids
                    .iter()
                    .map(|id| e.fill_id(id))
                    .collect::<Result<Vec<_>, _>>()?;
                witness(e, &ids, true).await
            }
            StepKind::Unwitnessed(ids) => {
                let ids = ids
                    .iter()
                    .map(|id| e.fill_id(id))
                    .collect::<Result<Vec<_>, _>>()?;
                witness(e, &ids, false).await
            }
            StepKind::Session(name) => session(e, name).await,
            StepKind::Alive(id) => {
                let id = e.fill_id(id)?;
                alive(e, step.line, &id).await
            }
            StepKind::Disconnect(id) => e.disconnect_step(id).await,
            StepKind::CloseStdin => {
                e.io.close_input();
                Ok(())
            }
            StepKind::Exit(span) => {
                exit(e, span.resolve(e.step.captures())).await;
                Ok(())
            }
            _ => unreachable!("the engine plays every other step"),
        }
    }

    fn prepare<T: Transport>(e: &Engine<'_, T, Self>, message: &mut Value) -> Option<String> {
        fixtures::rewrite_call(message, e.played.options().fixtures.as_ref()?)
            .map(|role| role.to_string())
    }

    /// A server stops the steps only by going away: a message that could not be sent, or a
    /// wait that ran out once its process exited or its output closed.
    async fn stop<T: Transport>(e: &mut Engine<'_, T, Self>, why: Why) -> Option<Stop> {
        match why {
            Why::Step => return None,
            Why::Unsent => {
                // The target is gone; the exit event tells how.
                let until = Deadline::now() + Duration::from_millis(200);
                while !e.liveness.has_exited() && e.next(until).await {}
            }
            Why::Silence | Why::Unanswered if !e.liveness.gone() => return None,
            Why::Silence | Why::Unanswered => {}
        }
        report_gone(e);
        Some(Stop::Gone)
    }
}

/// Reports (once) that the server stopped serving while the case still needed it.
fn report_gone<T: Transport>(e: &mut Engine<'_, T, ServerTarget>) {
    let (rule, closed) = if e.io.channel_per_request() {
        (Req::Http04, "its endpoint refused connections")
    } else {
        (Req::Std01, "stdout closed")
    };
    let status =
        e.io.exit_status()
            .map(|s| s.to_string())
            .unwrap_or_else(|| closed.into());
    if !e.findings.cites(rule) {
        let p = crate::rules::server::stopped_serving(rule, &status, "the case still needed it");
        e.rule(p.severity, p.requirement, p.message);
    }
}

/// `! alive ID`: the era's request that every server offers (`ping`, or `server/discover` in
/// 2026-07-28), sent as a case line with id ID, must get a result: the server still serves.
async fn alive<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    line: usize,
    id: &Value,
) -> Result<(), Stop> {
    let Some(version) = e.protocol() else {
        return Err(Stop::Skip(
            "`! alive` needs a protocol version the harness knows".into(),
        ));
    };
    let mut request = version.probe("");
    request["id"] = id.clone();
    let mut pattern = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": "{object}"});
    if !version.has_ping() {
        // What `server/discover` answers must say which versions the server supports.
        pattern["result"] = serde_json::json!({"supportedVersions": "{array}"});
    }
    e.write(request.to_string(), false).await?;
    e.expect(line, &pattern.to_string()).await
}

/// How long the harness goes on watching after the last barrier when a cancelled request was
/// not watched by `! silent`: long enough to see a ticking handler go on.
const WATCH_AFTER_CANCEL: Duration = Duration::from_millis(100);

/// The steps, then a last barrier: everything the target was going to say about earlier steps
/// arrives first, so a response no step expected is seen. A cancel no `! silent` watched gets
/// a short watch of its own, so progress that goes on after it is seen too.
async fn body<T: Transport>(e: &mut Engine<'_, T, ServerTarget>) -> Result<(), Stop> {
    let steps = &e.played.case().steps;
    remember_witness(e, steps).await?;
    e.steps(steps).await?;
    // A session the case ended has nobody left to answer the last barrier.
    let ended = e.streams.is_deleted();
    if e.io.input_open() && !e.liveness.has_exited() && !ended && !e.liveness.cut_off() {
        e.barrier().await?;
        let unwatched = e
            .ledger
            .sent_requests()
            .values()
            .any(|r| r.cancel.is_some() && !r.watched && r.answers == 0);
        if unwatched {
            e.pump_until(Deadline::now() + WATCH_AFTER_CANCEL).await;
        }
        let severity = e.played.severity();
        for message in judge::stray(&e.ledger, &e.streams, &e.transcript) {
            e.finding(severity, FindingKind::Unmet, message);
        }
        if e.io.channel_per_request() {
            // What became of the streams of cancelled requests.
            let notes = http::cancelled_streams(e.ledger.sent_requests(), e.streams.channels());
            e.problems(notes);
        }
        e.streams_left_open().await;
    }
    Ok(())
}
