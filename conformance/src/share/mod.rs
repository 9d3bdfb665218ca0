//! One target for many cases: against a server that is slow to start, starting it once per
//! case dominates a run, so cases that cannot change a verdict by sharing share a target.
//! Whether a run's cases share is decided from what a start costs ([`decide`]): against a
//! target that starts in milliseconds every case runs on a target of its own.
//!
//! Over Streamable HTTP with a command, the cases share one server process and each opens a
//! session of its own (the 2026-07-28 era has none: every request stands alone), as clients
//! of one running server do. Each shared run's request ids and progress tokens carry a mark
//! of their own on the wire ([`wire`]), so what one case does is never taken for another's,
//! not even by the `cancellations` witness, which lists every cancel the process saw. Over
//! stdio a server has one session: the cases take turns on it, the first opening it for the
//! later ones ([`stdio`]). A case runs alone, on a target started for it, when its file says
//! `@fresh REASON`, and with `--isolate`. A case that does not pass when sharing is run again
//! alone and the lone verdict is the one reported (except a skip decided by the target's
//! answer to the opening of the case's session, the answer a target of its own gives), so
//! sharing makes a run faster and never changes its outcome. Each report says where its case
//! ran ([`Placement`]), so a crash of a shared server can be traced to the cases that ran on
//! it.

use crate::case::Case;
use crate::case_report::CaseResult;
use crate::case_report::Report;
use crate::case_report::{Placement, SharedProcess};
use crate::engine::server::{not_applicable, run_case, Connect, ServerTarget};
use crate::engine::{Engine, Options};
use crate::error::StartError;
use crate::outcome::Outcome;
use crate::transport::http::{Http, HttpTarget};
use crate::transport::{Event, Transport};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant as Deadline;
use wire::Renumbered;

pub mod decide;
pub mod lent;
pub mod stdio;
pub mod wire;

/// Whether a case may share a target: it does not say `@fresh`.
pub fn may_share(case: &Case) -> bool {
    case.fresh.is_none()
}

/// The shared targets of one run, started as cases need them.
pub enum Pool {
    /// Streamable HTTP servers the harness starts: one at a time, a session per case.
    Http(HttpPool),
    /// Stdio servers: a few at a time, one session each, which cases take turns on.
    Stdio(stdio::Pool),
}

/// The shared HTTP servers of one run.
pub struct HttpPool {
    target: HttpTarget,
    options: Options,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    current: Option<Arc<Server>>,
    started: u32,
    all: Vec<Arc<Server>>,
}

/// A server process started for many cases, kept on a thread of its own (its output is
/// drained whatever the cases' workers do), ended when the pool is dropped.
struct Server {
    process: SharedProcess,
    endpoint: String,
    group: Option<i32>,
    dead: Arc<AtomicBool>,
    stop: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Pool {
    /// The pool for `connect`, when its cases can share a target: a stdio server, or a server
    /// over Streamable HTTP that the harness starts on a port it chooses. `None` otherwise (a
    /// running server, a fixed port).
    pub fn for_target(connect: &Connect, options: &Options) -> Option<Pool> {
        match connect {
            Connect::Http(target) if target.isolated() => Some(Pool::Http(HttpPool {
                target: target.clone(),
                options: options.clone(),
                state: Mutex::new(State::default()),
            })),
            Connect::Stdio(launch) => {
                stdio::Pool::new(launch, options.reply_timeout, STDIO_PROCESSES)
                    .ok()
                    .map(Pool::Stdio)
            }
            Connect::Http(_) => None,
        }
    }
}

/// How many stdio processes cases share at a time. Starting one costs a slow target a second
/// or more of CPU; more of them lets cases that wait (windows, sweeps) overlap.
const STDIO_PROCESSES: usize = 3;

impl HttpPool {
    /// The live shared server, started (again) when there is none.
    fn server(&self) -> Result<Arc<Server>, StartError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(server) = &state.current {
            if !server.dead.load(Ordering::SeqCst) {
                return Ok(server.clone());
            }
        }
        state.started += 1;
        let server = Arc::new(Server::start(&self.target, &self.options, state.started)?);
        state.current = Some(server.clone());
        state.all.push(server.clone());
        Ok(server)
    }
}

impl Drop for HttpPool {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        for server in &state.all {
            server.end();
        }
    }
}

impl Server {
    fn start(target: &HttpTarget, options: &Options, ordinal: u32) -> Result<Server, StartError> {
        let (ready, started) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let dead = Arc::new(AtomicBool::new(false));
        let target = target.clone();
        let (reply, startup) = (options.reply_timeout, options.startup_timeout);
        let flag = dead.clone();
        let thread = std::thread::spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = ready.send(Err(StartError::Runtime(e)));
                    return;
                }
            };
            runtime.block_on(async move {
                let mut http = match Http::start(&target, reply, startup).await {
                    Ok(http) => http,
                    Err(e) => {
                        let _ = ready.send(Err(StartError::Transport(e)));
                        return;
                    }
                };
                let _ = ready.send(Ok((http.endpoint(), http.process_group())));
                keep(&mut http, &flag, stopped).await;
                http.shutdown(Duration::ZERO).await;
            });
        });
        let (endpoint, group) = started
            .recv()
            .map_err(|_| StartError::SharedServerThread)??;
        Ok(Server {
            process: SharedProcess {
                ordinal,
                pid: group.unwrap_or(0),
            },
            endpoint,
            group,
            dead,
            stop: Mutex::new(Some(stop)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Stops the server and waits for its thread (which kills and reaps it).
    fn end(&self) {
        if let Some(stop) = self.stop.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

/// Drains the shared server's output (into its log) until told to stop, and says when it died.
async fn keep(http: &mut Http, dead: &AtomicBool, mut stop: tokio::sync::oneshot::Receiver<()>) {
    loop {
        tokio::select! {
            _ = &mut stop => return,
            event = http.next(Deadline::now() + Duration::from_secs(1)) => {
                if matches!(event, Some((_, Event::Exited(_)))) || http.finished() {
                    dead.store(true, Ordering::SeqCst);
                }
            }
        }
    }
}

/// Runs one case: on the pool's shared server when it may share, again alone when it did not
/// pass there; alone when there is no pool or it may not share.
pub async fn run(
    case: &Case,
    connect: &Connect,
    pool: Option<&Pool>,
    options: &Options,
) -> CaseResult {
    let shown = connect.display();
    let alone = || async { run_case(case, connect, options).await };
    let Some(pool) = pool.filter(|_| may_share(case)) else {
        return alone().await;
    };
    if let Some(reason) = not_applicable(case, options, connect.transport()) {
        return Ok(Report::skipped(reason, shown));
    }
    let shared = match pool {
        Pool::Http(pool) => {
            let server = pool.server()?;
            run_attached(case, &server, options, shown).await?
        }
        Pool::Stdio(pool) => match run_lent(case, pool, options, shown).await {
            Some(report) => report,
            None => return alone().await,
        },
    };
    if !needs_rerun(&shared) {
        return Ok(shared);
    }
    let mut alone = alone().await?;
    if let Some(process) = shared.placement.process() {
        alone.placement = Placement::Rerun(process, shared.outcome);
    }
    Ok(alone)
}

/// Whether a case that ran on a shared target is run again alone: it did not pass (a skip
/// decided by the target's answer to the opening of the case's session is what a target of
/// its own answers to the same opening: no rerun), or its pass left a question open.
fn needs_rerun(shared: &Report) -> bool {
    let skipped_at_opening = shared.outcome == Outcome::Skip && !shared.opened;
    let passed = shared.outcome == Outcome::Pass && !left_open(shared);
    !passed && !skipped_at_opening
}

/// One case in a shared stdio session. `None` when no shared process could be started (the
/// case then runs alone, and says why a target of its own did not start).
async fn run_lent(
    case: &Case,
    pool: &stdio::Pool,
    options: &Options,
    shown: String,
) -> Option<Report> {
    let version = options.protocol_version;
    let shared = pool.borrow(version).ok()?;
    let back = lent::Returned::default();
    let (lent, side, placement) = shared.lend(version, back.clone());
    let io = Renumbered::taking_turns(lent, witness_tool(options));
    let mut report = Engine::new(case, options, io, side).run(shown).await;
    report.placement = placement;
    let returned = back.lock().unwrap_or_else(|e| e.into_inner()).take();
    pool.give_back(returned, !needs_rerun(&report), version);
    Some(report)
}

/// The tool that plays the `cancellations` witness on this target.
fn witness_tool(options: &Options) -> String {
    options
        .fixtures
        .as_ref()
        .and_then(|f| f.mapping(crate::fixtures::Role::Cancellations))
        .map_or_else(
            || crate::fixtures::Role::Cancellations.to_string(),
            |m| m.tool.clone(),
        )
}

/// Whether a pass left open whether the work stopped: a note with a [`Doubt`] (the witness
/// does not list a request nothing showed had arrived, or the target's waits for a CPU
/// excused a cancel its handler may not have seen in time). On a server busy with other
/// cases both are likelier than on a server of its own (there the other cases' work counts
/// as the target's waits), which may answer the question.
fn left_open(report: &Report) -> bool {
    report.findings.iter().any(|f| f.doubt.is_some())
}

/// One case on the shared server, in a session of its own.
async fn run_attached(
    case: &Case,
    server: &Server,
    options: &Options,
    shown: String,
) -> CaseResult {
    let attach = HttpTarget {
        url: server.endpoint.clone(),
        launch: None,
    };
    let mut io = Http::start(&attach, options.reply_timeout, options.startup_timeout).await?;
    io.share_group(server.group);
    let io = Renumbered::new(io, witness_tool(options));
    let mut report = Engine::new(case, options, io, ServerTarget::default())
        .run(shown)
        .await;
    report.placement = Placement::Shared(server.process);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(text: &str) -> Case {
        let head = "# intent\n@requirement CAN-05\n@level must\n";
        crate::case::parse("server/x", "x.mcpt", &format!("{head}{text}")).unwrap()
    }

    #[test]
    fn fresh_cases_run_alone() {
        let ping = "> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        assert!(may_share(&case(ping)));
        assert!(!may_share(&case(&format!(
            "@fresh it ends the session\n{ping}"
        ))));
        assert!(may_share(&case(&format!("{ping}! witness 1\n"))));
    }

    #[test]
    fn a_pass_the_timing_left_open_is_rerun_alone() {
        use crate::outcome::{Doubt, Finding, FindingKind, Severity};
        use crate::requirement::Req;
        let note = |req: Req, doubt: Option<Doubt>| Finding {
            severity: Severity::Note,
            line: 1,
            kind: FindingKind::Rule(req),
            message: "the timing cannot tell".into(),
            times: 1,
            doubt,
        };
        let pass = |findings: Vec<Finding>| Report {
            findings,
            ..Report::skipped(String::new(), String::new())
        };
        let pass = |findings| Report {
            outcome: Outcome::Pass,
            skip_reason: None,
            ..pass(findings)
        };
        assert!(!needs_rerun(&pass(vec![])));
        assert!(!needs_rerun(&pass(vec![note(Req::Can08, None)])));
        assert!(!needs_rerun(&pass(vec![note(Req::Can05, None)])));
        let waited = note(Req::Can08, Some(Doubt::WaitedPastEnd));
        assert!(needs_rerun(&pass(vec![waited])));
        let unseen = note(Req::Can05, Some(Doubt::Unarrived));
        assert!(needs_rerun(&pass(vec![unseen])));
    }

    #[test]
    fn placements_name_their_process() {
        let p = SharedProcess {
            ordinal: 2,
            pid: 77,
        };
        assert_eq!(Placement::Alone.mark(), "");
        assert_eq!(Placement::Shared(p).mark(), " [shared #2]");
        assert_eq!(
            Placement::Rerun(p, Outcome::Fail).mark(),
            " [rerun alone: fail on shared #2]"
        );
        assert_eq!(Placement::Rerun(p, Outcome::Fail).process(), Some(p));
        assert_eq!(Placement::Alone.mode(), "alone");
    }
}
