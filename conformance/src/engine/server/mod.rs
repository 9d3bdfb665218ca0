//! The harness as a client, testing a server target.
//!
//! The session opens with the `initialize` handshake (unless the case performs it itself),
//! the steps run within the case's time limit, and a last barrier flushes whatever the server
//! still had to say about earlier steps, so a response no step expected is seen. The server's
//! own steps are here too: `! silent` and `! witness` (did the work stop?), `! close-stdin`
//! and `! exit` (does the server exit when its input ends?).

use super::http::Streams;
use super::proof;
use super::{Engine, Options, Report, Side, Stop};
use crate::case::{Case, Step, StepKind, TransportKind};
use crate::era::{Era, ProtocolVersion, HANDSHAKE_VERSIONS};
use crate::fixtures;
use crate::load;
use crate::outcome::Severity;
use crate::pattern::{self, canonical};
use crate::rules::envelope::{short, Writer, SERVER};
use crate::transport::http::{Http, HttpTarget};
use crate::transport::process::{display_argv, Launch};
use crate::transport::stdio::Stdio;
use crate::transport::{Channel, Event, SendError, Transport};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// The role of a server target: what the harness, as its client, does beyond the steps.
#[derive(Debug, Default)]
pub struct ServerTarget;

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
pub async fn run_case(case: &Case, connect: &Connect, options: &Options) -> Result<Report, String> {
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
) -> Result<Report, String> {
    let target = display_argv(&launch.argv);
    if let Some(reason) = not_applicable(case, options, TransportKind::Stdio) {
        return Ok(Report::skipped(reason, target));
    }
    let io = Stdio::spawn(launch, options.reply_timeout).map_err(|e| {
        format!("cannot start target `{target}`: {e}; check the command after `--` (it is run without a shell)")
    })?;
    Ok(Engine::new(case, options, io, ServerTarget)
        .run(target)
        .await)
}

/// Runs one case against a server over Streamable HTTP, started for the case when the target
/// has a launch. Never panics on target behaviour; a server it started is always killed and
/// reaped. Fails only when the URL is unusable or the server cannot be started at all.
pub async fn run_http_server_case(
    case: &Case,
    target: &HttpTarget,
    options: &Options,
) -> Result<Report, String> {
    let shown = target.display();
    if let Some(reason) = not_applicable(case, options, TransportKind::Http) {
        return Ok(Report::skipped(reason, shown));
    }
    let io = Http::start(target, options.reply_timeout, options.startup_timeout).await?;
    let mut engine = Engine::new(case, options, io, ServerTarget);
    engine.streams = Streams::http();
    Ok(engine.run(shown).await)
}

/// Why a case does not apply to this target before it starts: its transports, a cancel
/// message the transport's era does not carry, or fixtures the target file does not map.
fn not_applicable(case: &Case, options: &Options, transport: TransportKind) -> Option<String> {
    if !case.transports.contains(&transport) {
        let names: Vec<&str> = case.transports.iter().map(|t| t.as_str()).collect();
        return Some(format!(
            "the case applies to {} only; this run is over {}",
            names.join(" and "),
            transport.as_str()
        ));
    }
    let stateless = crate::era::ProtocolVersion::parse(&options.protocol_version)
        .is_some_and(|v| v.era() == Era::Stateless);
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
        .filter_map(|f| fixtures.lacks(f))
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
        let opening = crate::load::stretched(e.options.startup_timeout, e.stretch) + e.case_limit();
        let Ok(opened) = tokio::time::timeout(opening, open(e)).await else {
            let (rule, what) = if e.protocol().map(|v| v.era()) == Some(Era::Stateless) {
                ("LIF-11", "`server/discover`")
            } else {
                ("LIF-02", "the `initialize` handshake")
            };
            e.line = 0;
            e.rule(
                Severity::Fail,
                rule,
                format!(
                    "{what} did not complete within {opening:?} (the startup allowance and the case's time limit); {}",
                    e.what_was_heard()
                ),
            );
            return Err(Stop::Hung);
        };
        opened?;
        // The case's own clock starts once the target has started; a case that performs the
        // handshake itself also gets the start's allowance.
        let mut limit = e.case_limit();
        if !e.case.handshake {
            limit += crate::load::stretched(e.options.startup_timeout, e.stretch);
        }
        match tokio::time::timeout(limit, body(e)).await {
            Ok(done) => done,
            Err(_) => {
                e.rule(
                    Severity::Fail,
                    "CAN-11",
                    format!(
                        "the case did not finish within its time limit of {limit:?}; the target hung \
                         (see the transcript so far), or raise the limit with --timeout (or the \
                         case's @timeout)"
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

    async fn judge<T: Transport>(e: &mut Engine<'_, T, Self>, index: usize) {
        e.judge_server_message(index).await;
    }

    fn drained<T: Transport>(e: &mut Engine<'_, T, Self>) {
        e.judge_late_progress();
    }

    fn observe<T: Transport>(e: &mut Engine<'_, T, Self>, _at: Duration, event: Event) {
        e.judge_stream_event(&event);
    }

    async fn role_step<T: Transport>(e: &mut Engine<'_, T, Self>, step: &Step) -> Result<(), Stop> {
        match &step.kind {
            StepKind::Silent { id, window } => {
                let id = e.fill_id(id)?;
                let until = Deadline::now() + e.span(window);
                e.pump_until(until).await;
                if let Some(r) = e.ledger.sent.get_mut(&pattern::id_key(&id)) {
                    r.watched = true;
                }
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
            StepKind::Disconnect(id) => e.disconnect_step(id).await,
            StepKind::CloseStdin => {
                e.io.close_input();
                Ok(())
            }
            StepKind::Exit(span) => {
                exit(e, e.span(span)).await;
                Ok(())
            }
            _ => unreachable!("the engine plays every other step"),
        }
    }

    fn prepare<T: Transport>(e: &Engine<'_, T, Self>, message: &mut Value) -> Option<String> {
        fixtures::rewrite_call(message, e.options.fixtures.as_ref()?)
    }

    async fn lost<T: Transport>(e: &mut Engine<'_, T, Self>, _error: SendError) -> Stop {
        // The target is gone; the exit event tells how.
        let until = Deadline::now() + Duration::from_millis(200);
        while !e.exited && e.next(until).await {}
        Self::gone(e);
        Stop::Gone
    }

    fn gone<T: Transport>(e: &mut Engine<'_, T, Self>) {
        let (rule, closed) = if e.streams.over_http {
            ("HTTP-04", "its endpoint refused connections")
        } else {
            ("STD-01", "stdout closed")
        };
        let status =
            e.io.exit_status()
                .map(|s| s.to_string())
                .unwrap_or_else(|| closed.into());
        if !e.findings.iter().any(|f| f.requirement() == rule) {
            e.rule(
                Severity::Fail,
                rule,
                format!("the target stopped serving ({status}) while the case still needed it; see its stderr"),
            );
        }
    }

    fn ended<T: Transport>(e: &mut Engine<'_, T, Self>) -> Option<Stop> {
        if e.exited || e.output_closed {
            Self::gone(e);
            return Some(Stop::Gone);
        }
        None
    }
}

/// Opens the session as the era and the case call for: `server/discover`, the handshake, or
/// nothing (a case that performs the handshake itself).
async fn open<T: Transport>(e: &mut Engine<'_, T, ServerTarget>) -> Result<(), Stop> {
    let era = e.protocol().map(|v| v.era());
    if era == Some(Era::Stateless) {
        discover(e).await
    } else if e.case.handshake {
        handshake(e).await
    } else {
        e.captures
            .insert("version".into(), json!(e.options.protocol_version));
        Ok(())
    }
}

/// How long the harness goes on watching after the last barrier when a cancelled request was
/// not watched by `! silent`: long enough to see a ticking handler go on.
const WATCH_AFTER_CANCEL: Duration = Duration::from_millis(100);

/// The steps, then a last barrier: everything the target was going to say about earlier steps
/// arrives first, so a response no step expected is seen. A cancel no `! silent` watched gets
/// a short watch of its own, so progress that goes on after it is seen too.
async fn body<T: Transport>(e: &mut Engine<'_, T, ServerTarget>) -> Result<(), Stop> {
    let steps = e.case.steps.clone();
    e.steps(&steps).await?;
    // A session the case ended has nobody left to answer the last barrier.
    let ended = e.streams.deleted.contains(&e.streams.session);
    if e.io.input_open() && !e.exited && !ended {
        e.barrier().await?;
        let unwatched = e
            .ledger
            .sent
            .values()
            .any(|r| r.cancel.is_some() && !r.watched && r.answers == 0);
        if unwatched {
            e.pump_until(Deadline::now() + WATCH_AFTER_CANCEL).await;
        }
        e.unexpected_responses();
        e.cancelled_streams();
    }
    Ok(())
}

/// `! session NAME`: switches to session NAME, opening it with its own handshake when it is
/// new. A server that assigns no session ids has no second session to offer.
async fn session<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    name: &str,
) -> Result<(), Stop> {
    let Some(http) = e.io.http() else {
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
        let line = e.line;
        handshake(e).await?;
        e.line = line;
    }
    Ok(())
}

/// `initialize` with the requested version, then `notifications/initialized`.
async fn handshake<T: Transport>(e: &mut Engine<'_, T, ServerTarget>) -> Result<(), Stop> {
    e.line = 0;
    let requested = e.options.protocol_version.clone();
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
    let answer = e.request_internal(init, "LIF-02").await?;
    let Some(version) = answer
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        e.rule(
            Severity::Fail,
            "LIF-02",
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
            "LIF-06",
            format!(
                "asked for {requested}, the target answered with `{version}`, which is no \
                 protocol version of the handshake era"
            ),
        );
        return Err(Stop::Hung);
    }
    e.version = Some(version.clone());
    e.captures.insert("version".into(), json!(version));
    let streamable = ProtocolVersion::parse(&version).is_none_or(|v| v.has_streamable_http());
    if e.streams.over_http && !streamable {
        return Err(Stop::Skip(format!(
            "the target agreed to {version}, whose HTTP transport is the older HTTP+SSE, which the harness does not test (choose 2025-03-26 or later with --protocol-version)"
        )));
    }
    if !e.case.versions.contains(&version) {
        return Err(Stop::Skip(format!(
            "the case applies to {}; the target agreed to {version} (choose one with \
             --protocol-version)",
            e.case.versions.join(", ")
        )));
    }
    e.write(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
        true,
    )
    .await
}

/// The stateless era's opening: every request stands alone, so there is no handshake, but a
/// client that speaks both eras opens with `server/discover` (LIF-11, LIF-14), which also
/// tells a server that speaks both which era the connection is in.
async fn discover<T: Transport>(e: &mut Engine<'_, T, ServerTarget>) -> Result<(), Stop> {
    e.line = 0;
    let version = e.options.protocol_version.clone();
    if !e.case.versions.contains(&version) {
        return Err(Stop::Skip(format!(
            "the case applies to {}, not to {version}",
            e.case.versions.join(", ")
        )));
    }
    e.version = Some(version.clone());
    e.captures.insert("version".into(), json!(version));
    // Over HTTP every POST of the case carries the era's headers from now on (HTTP-19).
    e.io.agreed(&version);
    let probe = crate::era::ProtocolVersion::V2026_07_28.probe("discover");
    let answer = e.request_internal(probe, "LIF-11").await?;
    let listed = answer
        .pointer("/result/supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(version.as_str())));
    if !listed {
        e.rule(
            Severity::Fail,
            "LIF-11",
            format!(
                "server/discover must answer with `supportedVersions` listing the versions the server speaks ({version} among them): {}",
                short(&answer)
            ),
        );
        return Err(Stop::Hung);
    }
    Ok(())
}

/// Stopping work on a cancel is a SHOULD (CAN-05): at most a warning, whatever the case.
fn witness_severity<T: Transport>(e: &Engine<'_, T, ServerTarget>) -> Severity {
    e.case_severity().min(Severity::Warn)
}

/// `! witness ID…`: asks the `cancellations` fixture which requests saw their cancellation. A
/// handler may record its cancellation a moment after the cancel was read, so the question is
/// repeated until every id is listed, or until nothing more can be hoped for: a handler records
/// its cancel soon after the cancel was read or never, so once a question asked a grace after
/// the proof that an id's cancel was read still does not list it, that is the answer (without
/// such a proof, `--reply-timeout` decides). The grace grows by the time the target waited for
/// a CPU since the proof; the reply timeout is stretched by the machine's CPU pressure.
/// `! witness not ID…` (`listed` false) asks once: none of the ids may be listed, their work
/// goes on.
async fn witness<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    ids: &[Value],
    listed: bool,
) -> Result<(), Stop> {
    if e.options
        .fixtures
        .as_ref()
        .is_some_and(|f| !f.has("cancellations"))
    {
        let ids: Vec<String> = ids.iter().map(canonical).collect();
        let message = if listed {
            format!(
                "no witness fixture: whether request {} stopped working is judged only on what \
                 can be observed (no response after the barrier, progress stopped, the server \
                 still answers)",
                ids.join(", ")
            )
        } else {
            format!(
                "no witness fixture: whether request {} kept working cannot be observed",
                ids.join(", ")
            )
        };
        e.rule(Severity::Note, "CAN-05", message);
        return Ok(());
    }
    let reply = load::stretched(e.options.reply_timeout, e.stretch);
    let deadline = Instant::now() + reply;
    let mut pause = Duration::from_millis(2);
    loop {
        e.counter += 1;
        let id = format!("witness-{}", e.counter);
        let asked = e.now();
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "cancellations", "arguments": {}}});
        let answer = e.request_internal(call, "CAN-11").await?;
        let Some(listed_ids) = fixtures::witness_list(&answer) else {
            e.rule(
                witness_severity(e),
                "CAN-05",
                format!("the `cancellations` fixture did not answer with a JSON array in a text item: {}", short(&answer)),
            );
            return Ok(());
        };
        if !listed {
            let stopped: Vec<String> = ids
                .iter()
                .filter(|id| listed_ids.iter().any(|l| pattern::json_equal(l, id)))
                .map(canonical)
                .collect();
            if !stopped.is_empty() {
                e.rule(
                    witness_severity(e),
                    "HTTP-10",
                    format!(
                        "the server's witness lists request {}: its handler observed a cancellation the harness never sent (a closed stream is no cancel up to 2025-11-25, AMB-24)",
                        stopped.join(", ")
                    ),
                );
            }
            return Ok(());
        }
        // A request answered before its cancel was read had nothing left to stop.
        let missing: Vec<&Value> = ids
            .iter()
            .filter(|id| !listed_ids.iter().any(|l| pattern::json_equal(l, id)))
            .filter(|id| e.ledger.sent(id).is_none_or(|r| r.answers == 0))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        // When a question asked now would settle each missing id: a grace after the proof that
        // its cancel was read (`None`: nothing proves it was).
        let marks: Option<Vec<_>> = missing
            .iter()
            .map(|id| e.ledger.sent(id).and_then(|r| r.cancel))
            .collect();
        // The latest of the proofs, and the grace after it (grown by the time lost to load).
        let proof = marks.and_then(|marks| {
            marks
                .iter()
                .map(|m| Some((e.read_by(m)?, e.grace_after(m.waited))))
                .collect::<Option<Vec<_>>>()
                .and_then(|p| p.into_iter().max_by_key(|(read, grace)| *read + *grace))
        });
        let grace = proof.map_or(e.calm_grace(), |(_, grace)| grace);
        let settled_at = proof.map(|(read, grace)| read + grace);
        let settled = settled_at.is_some_and(|at| asked >= at);
        if settled || Instant::now() >= deadline {
            // A stream closed before its request showed it had arrived may have been closed
            // before the server started the work: then there was nothing to stop, and the
            // witness cannot tell the two apart.
            let (unseen, missing): (Vec<&Value>, Vec<&Value>) =
                missing.into_iter().partition(|id| {
                    e.ledger
                        .sent(id)
                        .and_then(|r| r.cancel)
                        .and_then(|m| m.closed)
                        .is_some_and(|closed| !closed.arrived)
                });
            if !unseen.is_empty() {
                let unseen: Vec<String> = unseen.iter().map(|v| canonical(v)).collect();
                e.rule(
                    Severity::Note,
                    "CAN-05",
                    format!(
                        "the server's witness does not list request {}, but nothing had shown the request arrived (no response head, nothing on its stream) when the harness closed its stream: the server may never have started the work, so the timing cannot tell whether it stopped",
                        unseen.join(", ")
                    ),
                );
            }
            if missing.is_empty() {
                return Ok(());
            }
            let why = if settled {
                format!(
                    "asked {} ms after the target had certainly read the cancel (a grace of {} ms{})",
                    proof
                        .map(|(read, _)| asked.saturating_sub(read).as_millis())
                        .unwrap_or_default(),
                    grace.as_millis(),
                    proof::stretched_from(grace, e.calm_grace())
                )
            } else {
                format!("asked for {reply:?}")
            };
            let missing: Vec<String> = missing.iter().map(|v| canonical(v)).collect();
            e.rule(
                witness_severity(e),
                "CAN-05",
                format!(
                    "the server's witness does not list request {}: its handler never observed the cancellation, so the work did not stop ({why}; listed: {})",
                    missing.join(", "),
                    canonical(&Value::Array(listed_ids))
                ),
            );
            return Ok(());
        }
        // Ask again, less and less often (a handler records its cancel soon or never), and
        // at the latest when the answer would settle it.
        pause = (pause * 2).min(Duration::from_millis(200));
        let mut next = Deadline::now() + pause;
        if let Some(at) = settled_at {
            next = next.min(Deadline::from_std(e.io.started() + at));
        }
        e.pump_until(next).await;
    }
}

/// `! exit D`: the target must exit within D of its input closing (STD-07). If it does not,
/// the harness watches a little longer to say when it did, so "promptly" can be weighed.
///
/// A busy machine can make a prompt server late, and a server's own timer can make it late on
/// any machine; the machine's CPU pressure cannot tell the two apart. So the harness reads how
/// long the target's own processes waited for a CPU meanwhile (the kernel's scheduler
/// statistics for its process group, see `waited.rs`) and excuses only that much: a server
/// that would have exited well within D (by `EXIT_MARGIN`) had it not waited gets a note that
/// says so; one that sleeps past D is late however busy the machine was.
async fn exit<T: Transport>(e: &mut Engine<'_, T, ServerTarget>, window: Duration) {
    let closed = Instant::now();
    let before = e.waited();
    let mut starved = Duration::ZERO;
    let sample = |e: &Engine<'_, T, ServerTarget>, starved: &mut Duration| {
        if let (Some(now), Some(before)) = (e.waited(), before) {
            *starved = (*starved).max(now.saturating_sub(before));
        }
    };
    let watch = |until: Instant| Deadline::from_std(until.min(Instant::now() + SAMPLE_EVERY));
    while !e.exited && Instant::now() < closed + window {
        let tick = watch(closed + window);
        if !e.next(tick).await {
            // Nothing more can come (a target that stopped reading): just wait.
            tokio::time::sleep_until(tick).await;
        }
        sample(e, &mut starved);
    }
    if e.exited {
        if let Some(status) = e.io.exit_status().filter(|s| !s.success()) {
            e.rule(
                Severity::Note,
                "STD-07",
                format!("the target exited with {status} after its stdin closed"),
            );
        }
        return;
    }
    // Long enough to say when it exited; longer for a target that is kept from running.
    loop {
        let until = closed + window + LATE_WATCH + starved.min(LATE_WATCH);
        if e.exited || Instant::now() >= until {
            break;
        }
        let tick = watch(until);
        if !e.next(tick).await {
            tokio::time::sleep_until(tick).await;
        }
        if !e.exited {
            sample(e, &mut starved);
        }
    }
    let took = closed.elapsed();
    let when = if e.exited {
        format!("it exited after {:.1} s", took.as_secs_f64())
    } else {
        format!("it was still running after {:.1} s", took.as_secs_f64())
    };
    let waited = if starved >= Duration::from_millis(1) {
        format!(
            "; its processes waited {} ms for a CPU meanwhile",
            starved.as_millis()
        )
    } else {
        String::new()
    };
    // Excused only when the wait explains the lateness with room to spare: the counters are
    // read every SAMPLE_EVERY and the exit is noticed a moment late, so a server that overshoots
    // by a hair (rmcp drains for exactly the 5 s allowed) is late whatever the load.
    if took.saturating_sub(starved) + EXIT_MARGIN <= window {
        e.rule(
            Severity::Note,
            "STD-07",
            format!(
                "the target did not exit within {window:?} after its stdin closed ({when}{waited}): without that wait it would have, so the machine was too busy for the timing to tell"
            ),
        );
        return;
    }
    e.rule(
        e.case_severity(),
        "STD-07",
        format!(
            "the target did not exit within {window:?} after its stdin closed ({when}{waited}); \
             a server should exit promptly when its input ends"
        ),
    );
}

/// How often the CPU waits of a target that should exit are read.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// How far inside its window a server must have been, but for its waits for a CPU, for its
/// lateness to be excused.
const EXIT_MARGIN: Duration = Duration::from_millis(250);
/// How long past its window an exit is still watched for, to say when it came.
const LATE_WATCH: Duration = Duration::from_secs(4);
