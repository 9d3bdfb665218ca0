//! The harness as a client, testing a server target.
//!
//! The session opens with the `initialize` handshake (unless the case performs it itself),
//! the steps run within the case's time limit, and a last barrier flushes whatever the server
//! still had to say about earlier steps, so a response no step expected is seen. The server's
//! own steps are here too: `! silent` and `! witness` (did the work stop?), `! close-stdin`
//! and `! exit` (does the server exit when its input ends?).

use super::{Engine, Options, Report, Side, Stop};
use crate::case::{Case, Step, StepKind, TransportKind};
use crate::era::{Era, HANDSHAKE_VERSIONS};
use crate::fixtures;
use crate::outcome::Severity;
use crate::pattern::{self, canonical, id_key};
use crate::rules::envelope::{short, Writer, SERVER};
use crate::transport::process::{display_argv, Launch};
use crate::transport::stdio::Stdio;
use crate::transport::{Event, SendError, Transport};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// The role of a server target: what the harness, as its client, does beyond the steps.
#[derive(Debug, Default)]
pub struct ServerTarget;

/// Runs one case against a fresh stdio server process. Never panics on target behaviour;
/// always kills and reaps the target before returning. Fails only when the target cannot be
/// started at all.
pub async fn run_server_case(
    case: &Case,
    launch: &Launch,
    options: &Options,
) -> Result<Report, String> {
    let target = display_argv(&launch.argv);
    if !case.transports.contains(&TransportKind::Stdio) {
        return Ok(Report::skipped(
            "the case applies to Streamable HTTP only; this run is over stdio".into(),
            target,
        ));
    }
    if let Some(fixtures) = &options.fixtures {
        let lacking: Vec<String> = case
            .fixtures
            .iter()
            .filter_map(|f| fixtures.lacks(f))
            .collect();
        if !lacking.is_empty() {
            return Ok(Report::skipped(lacking.join("; "), target));
        }
    }
    let io = Stdio::spawn(launch, options.reply_timeout).map_err(|e| {
        format!("cannot start target `{target}`: {e}; check the command after `--` (it is run without a shell)")
    })?;
    Ok(Engine::new(case, options, io, ServerTarget)
        .run(target)
        .await)
}

impl Side for ServerTarget {
    const WRITER: &'static Writer = &SERVER;
    const SENDS: char = '>';
    const EXPECTS: char = '<';
    const EXIT_GRACE: Option<Duration> = Some(Duration::from_millis(200));
    const PROBES: bool = true;
    const STAMPS: bool = true;

    async fn play<T: Transport>(e: &mut Engine<'_, T, Self>) -> Result<(), Stop> {
        let era = e.protocol().map(|v| v.era());
        if era == Some(Era::Stateless) {
            discover(e).await?;
        } else if e.case.handshake {
            handshake(e).await?;
        } else {
            e.captures
                .insert("version".into(), json!(e.options.protocol_version));
        }
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

    fn observe<T: Transport>(_e: &mut Engine<'_, T, Self>, _at: Duration, _event: Event) {}

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
                witness(e, &ids).await
            }
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
        let status =
            e.io.exit_status()
                .map(|s| s.to_string())
                .unwrap_or_else(|| "stdout closed".into());
        if !e.findings.iter().any(|f| f.requirement() == "STD-01") {
            e.rule(
                Severity::Fail,
                "STD-01",
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

/// How long the harness goes on watching after the last barrier when a cancelled request was
/// not watched by `! silent`: long enough to see a ticking handler go on.
const WATCH_AFTER_CANCEL: Duration = Duration::from_millis(100);

/// The steps, then a last barrier: everything the target was going to say about earlier steps
/// arrives first, so a response no step expected is seen. A cancel no `! silent` watched gets
/// a short watch of its own, so progress that goes on after it is seen too.
async fn body<T: Transport>(e: &mut Engine<'_, T, ServerTarget>) -> Result<(), Stop> {
    let steps = e.case.steps.clone();
    e.steps(&steps).await?;
    if e.io.input_open() && !e.exited {
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
/// repeated until every id is listed or the reply timeout passes.
async fn witness<T: Transport>(
    e: &mut Engine<'_, T, ServerTarget>,
    ids: &[Value],
) -> Result<(), Stop> {
    if e.options
        .fixtures
        .as_ref()
        .is_some_and(|f| !f.has("cancellations"))
    {
        let ids: Vec<String> = ids.iter().map(canonical).collect();
        e.rule(
            Severity::Note,
            "CAN-05",
            format!(
                "no witness fixture: whether request {} stopped working is judged only on what \
                 can be observed (no response after the barrier, progress stopped, the server \
                 still answers)",
                ids.join(", ")
            ),
        );
        return Ok(());
    }
    let deadline = Instant::now() + e.options.reply_timeout;
    let mut pause = Duration::from_millis(2);
    loop {
        e.counter += 1;
        let id = format!("witness-{}", e.counter);
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "cancellations", "arguments": {}}});
        let answer = e.request_internal(call, "CAN-11").await?;
        let Some(listed) = fixtures::witness_list(&answer) else {
            e.rule(
                witness_severity(e),
                "CAN-05",
                format!("the `cancellations` fixture did not answer with a JSON array in a text item: {}", short(&answer)),
            );
            return Ok(());
        };
        // A request answered before its cancel was read had nothing left to stop.
        let missing: Vec<&Value> = ids
            .iter()
            .filter(|id| !listed.iter().any(|l| pattern::json_equal(l, id)))
            .filter(|id| {
                e.ledger
                    .sent
                    .get(&id_key(id))
                    .is_none_or(|r| r.answers == 0)
            })
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let missing: Vec<String> = missing.iter().map(|v| canonical(v)).collect();
            e.rule(
                witness_severity(e),
                "CAN-05",
                format!(
                    "the server's witness does not list request {}: its handler never observed the cancellation, so the work did not stop (listed: {})",
                    missing.join(", "),
                    canonical(&Value::Array(listed))
                ),
            );
            return Ok(());
        }
        // Ask again, less and less often: a handler records its cancel soon or never.
        pause = (pause * 2).min(Duration::from_millis(200));
        e.pump_until(Deadline::now() + pause).await;
    }
}

/// `! exit D`: the target must exit within D of its input closing (STD-07). If it does not,
/// the harness watches a little longer to say when it did, so "promptly" can be weighed.
async fn exit<T: Transport>(e: &mut Engine<'_, T, ServerTarget>, window: Duration) {
    let closed = Instant::now();
    let until = Deadline::now() + window;
    while !e.exited && e.next(until).await {}
    if !e.exited {
        let later = Deadline::now() + Duration::from_secs(4);
        while !e.exited && e.next(later).await {}
        let when = if e.exited {
            format!("it exited after {:.1} s", closed.elapsed().as_secs_f64())
        } else {
            format!(
                "it was still running after {:.1} s",
                closed.elapsed().as_secs_f64()
            )
        };
        e.rule(
            e.case_severity(),
            "STD-07",
            format!(
                "the target did not exit within {window:?} after its stdin closed ({when}); \
                 a server should exit promptly when its input ends"
            ),
        );
    } else if let Some(status) = e.io.exit_status().filter(|s| !s.success()) {
        e.rule(
            Severity::Note,
            "STD-07",
            format!("the target exited with {status} after its stdin closed"),
        );
    }
}
