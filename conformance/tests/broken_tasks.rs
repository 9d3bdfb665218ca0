//! The harness judged against deliberately broken task servers over stdio, in 2025-11-25's
//! core tasks and the 2026-07-28 tasks extension: each mode of a small server
//! (`broken_tasks/server.rs`) breaks exactly one task rule, and the harness must give exactly
//! the verdict the spec calls for. Mode `correct` follows every
//! rule and must pass every row's case, so every other verdict is caused by the fault its
//! mode adds. Every row also runs as `loaded/…` with a busy loop on every core.
//!
//! This binary is also the server: with `BROKEN_TASK_SERVER=<mode>` it serves on stdio.

#[path = "broken_tasks/server.rs"]
mod server;

#[path = "support/self_served.rs"]
pub mod self_served;
#[path = "support/shared_rows.rs"]
mod shared_rows;

use conformance::case::Case;
use conformance::engine::server::Connect;
use conformance::era::ProtocolVersion;
use conformance::harness;
use conformance::harness::expect::{Expect, On};
use conformance::outcome::Outcome;
use conformance::requirement::Req;
use libtest_mimic::Failed;
use std::time::Duration;

/// The version of the tasks extension's rows.
const EXT: ProtocolVersion = ProtocolVersion::V2026_07_28;

/// The table: mode, case, what the run must show.
#[rustfmt::skip]
fn table() -> Vec<(&'static str, &'static str, Expect)> {
    use Outcome::Pass;
    type E = Expect;
    let mut rows = vec![];
    for case in [
        "task-cancel-after-progress", "task-cancel-again-rejected", "task-cancel-unknown-id",
        "task-call-cancel-ignored", "task-result-after-cancel", "task-result-wait-cancelled",
        "task-forbidden-refused", "task-required-refused",
    ] {
        rows.push(("correct", case, E::outcome(Pass)));
    }
    for case in [
        "task-ext-cancel-ack", "task-ext-call-cancel-ignored", "task-ext-cancel-unknown-id",
        "task-ext-needs-declaration",
    ] {
        rows.push(("correct", case, E::outcome(Pass).at(EXT)));
    }
    rows.extend([
        // Cancelled, yet its progress goes on: PRG-10; its work never stops: the witness.
        ("keeps-working",                  "task-cancel-after-progress", E::fails(Req::Prg10)),
        ("keeps-working",                  "task-call-cancel-ignored",   E::warns(Req::Tsk04).saying("task")),
        // The answer to tasks/cancel must already say cancelled (TSK-04).
        ("answers-cancel-first",           "task-cancel-after-progress", E::fails(On::Case).saying("cancelled")),
        ("answers-cancel-first",           "task-cancel-again-rejected", E::fails(On::Case)),
        // A terminal task's cancel must be refused with -32602 (TSK-04).
        ("cancels-terminal",               "task-cancel-again-rejected", E::fails(On::Case).saying("-32602")),
        // notifications/cancelled for the creating call is no task cancel (TSK-03).
        ("cancelled-notification-cancels", "task-call-cancel-ignored",   E::warns(On::Case).saying("working")),
        ("cancelled-notification-cancels", "task-cancel-after-progress", E::outcome(Pass)),
        // A plain call of a tool that only runs as a task must be refused with -32601 (TSK-01).
        ("required-makes-task",            "task-required-refused",      E::fails(On::Case).saying("-32601")),
        // The 2026-07-28 extension. A request that did not declare it gets -32021, and never
        // a task (TSK-05).
        ("ext-undeclared",                 "task-ext-needs-declaration", E::fails(On::Case).saying("-32021").at(EXT)),
        ("ext-undeclared-call",            "task-ext-needs-declaration", E::fails(On::Case).saying("no answer matched").at(EXT)),
        // Its cancel is answered with the empty ack, not the task (TSK-05, RPC-14).
        ("ext-cancel-returns-task",        "task-ext-cancel-ack",        E::fails(On::Case).saying("absent").at(EXT)),
        // An id never given out gets an error (a SHOULD).
        ("ext-unknown-acked",              "task-ext-cancel-unknown-id", E::warns(On::Case).at(EXT)),
        // notifications/cancelled for the creating call is no task cancel (CAN-15).
        ("cancelled-notification-cancels", "task-ext-call-cancel-ignored", E::warns(On::Case).saying("working").at(EXT)),
        // Acknowledged as cancelled, yet its work goes on: the witness.
        ("keeps-working",                  "task-ext-cancel-ack",        E::warns(Req::Tsk05).saying("task").at(EXT)),
        // The extension's cancel is cooperative: an ack before anything changed is no fault.
        ("answers-cancel-first",           "task-ext-cancel-ack",        E::outcome(Pass).at(EXT)),
    ]);
    rows
}

/// The variable that tells this binary which mode to serve, and the tables' version.
const VAR: &str = "BROKEN_TASK_SERVER";
const VERSION: &str = "2025-11-25";

fn check(case: &Case, mode: &str, want: &Expect, loaded: bool) -> Result<(), Failed> {
    self_served::check(case, VAR, mode, VERSION, want, loaded)
}

/// This binary serving `mode` over stdio, for the rows played on shared targets.
fn stdio(mode: &str) -> Result<Connect, Failed> {
    self_served::stdio(VAR, mode)
}

fn main() {
    if let Ok(mode) = std::env::var(VAR) {
        server::serve(&mode);
    }
    let args = harness::test_arguments();
    let cases = self_served::server_cases();
    let mut trials = shared_rows::trials(&cases, table(), stdio, |_, want| {
        self_served::options(VERSION, Duration::from_millis(800), want)
    });
    trials.extend(self_served::trials(&cases, table(), check));
    libtest_mimic::run(&args, trials).exit();
}
