//! The harness judged against deliberately broken servers: each mode of a small server breaks
//! exactly one rule, and the harness must give exactly the verdict the spec calls for.
//!
//! This binary is also the server. When `BROKEN_SERVER=<mode>` is set it serves MCP on stdio
//! (synchronous, one thread per long call) and exits; otherwise it runs the trials, each of
//! which starts this same executable with a mode and plays one case against it. Mode `correct`
//! is the fixture profile done right and must pass, so every other verdict is caused by the
//! fault the mode adds. Every row also runs as `loaded/…` with a busy loop on every core: the
//! verdict must be the same on a loaded machine.

#![allow(unsafe_code)] // libc: signals and measures the processes it starts

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
use self_served::Target;
use std::path::PathBuf;
use std::time::Duration;

/// The deliberately broken servers.
#[path = "support/broken_server.rs"]
mod server;

fn pid_file(mode: &str, case: &str, loaded: bool) -> PathBuf {
    std::env::temp_dir().join(format!(
        "conformance-broken-{}-{}{mode}-{}.pid",
        std::process::id(),
        if loaded { "loaded-" } else { "" },
        case.replace('/', "-")
    ))
}

/// Plays `case` against the server in `mode` and judges the run by `want`, with the pids the
/// server wrote (itself, its children) for `reaped`.
fn check(case: &Case, mode: &str, want: &Expect, loaded: bool) -> Result<(), Failed> {
    let pids = pid_file(
        mode,
        &format!(
            "{}{}",
            case.id,
            want.version().map_or("", ProtocolVersion::as_str)
        ),
        loaded,
    );
    let env = [("BROKEN_PID_FILE".to_string(), pids.display().to_string())];
    let launch = self_served::this_binary("BROKEN_SERVER", mode, &[], &env)?;
    let options = self_served::options("2025-11-25", Duration::from_millis(500), want);
    let report = self_served::play(case, Target::Stdio(&launch), &options);
    let started: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let _ = std::fs::remove_file(&pids);
    Ok(self_served::judge(
        case, mode, want, &report?, &started, loaded,
    )?)
}

/// A target that fails at once is judged within this (stretched on a busy machine, as the
/// harness stretches its waits).
const FAST: Duration = Duration::from_secs(3);
/// A row's test process (it plays such a row alone, see `own_process_if`) stays far below
/// what a target floods (100 MiB): the harness keeps bounded lines and a bounded stderr log.
/// Alone, each such row peaks at 12–21 MiB.
const PEAK_MIB: u64 = 48;
/// A start may take 15 s, as by default: only a target that has not yet written anything
/// gets it.
const SLOW_START: Duration = Duration::from_secs(15);
/// A reply timeout far longer than the run may take: the wait must end on proof.
const PATIENT: Duration = Duration::from_secs(8);
/// The era where a server MUST NOT send anything more for a cancelled request.
const STATELESS: ProtocolVersion = ProtocolVersion::V2026_07_28;

/// The table: mode, case, what the run must show.
#[rustfmt::skip]
fn table() -> Vec<(&'static str, &'static str, Expect)> {
    use Outcome::{Info, Pass};
    type E = Expect;
    let secs = Duration::from_secs;
    let mut rows = vec![];
    // The mini server is sound: every case passes (info cases are recorded).
    for case in [
        "cancel-after-progress", "cancel-by-deadline", "cancel-request-id-fidelity",
        "cancel-unknown-id", "concurrent-cancel-isolation", "late-cancel-after-completion",
        "late-cancel-sweep",
        "malformed-input", "no-progress-without-token", "no-response-after-cancel",
        "notifications-never-answered", "ping-during-long-call", "progress-after-completion",
        "progress-monotonic", "progress-token-echoed", "server-alive-after-cancel",
        "shutdown-on-stdin-close", "stdio-framing", "unknown-method", "unknown-method-code",
    ] {
        rows.push(("correct", case, E::outcome(Pass)));
    }
    rows.extend([
        ("correct",                     "cancel-id-type-mismatch",     E::outcome(Info)),
        ("correct",                     "cancel-initialize-ignored",   E::outcome(Info)),
        ("answers-after-cancel",        "cancel-after-progress",       E::warns(Req::Can05)),
        ("answers-after-cancel",        "cancel-by-deadline",          E::warns(Req::Can05)),
        // The error may beat the barrier's answer; it is still charged to the cancel, since it
        // came before the sleep could have ended and carries -32800.
        ("answers-after-cancel",        "no-response-after-cancel",    E::warns(Req::Can05)),
        ("answers-after-cancel-slowly", "no-response-after-cancel",    E::warns(Req::Can05)),
        ("crashes-on-cancel",           "cancel-unknown-id",           E::fails(Req::Std01).within(FAST).reaped()),
        ("crashes-on-cancel",           "server-alive-after-cancel",   E::fails(Req::Std01).within(FAST)),
        ("never-answers",               "cancel-unknown-id",           E::fails(Req::Lif02).within(FAST).reaped()),
        ("non-json-stdout",             "stdio-framing",               E::fails(Req::Std03).reaped()),
        ("non-json-stdout",             "cancel-unknown-id",           E::fails(Req::Std03)),
        // Non-JSON on stdout ends the case at its first line, however much more follows; the
        // flood does not keep the case reading (nor make the machine look busy to it).
        ("garbage-flood",               "unknown-method",              E::fails(Req::Std03).saying("not JSON: `garbage`").within(FAST).reaped()),
        ("garbage-flood",               "cancel-after-progress",       E::fails(Req::Std03).saying("not JSON: `garbage`").within(FAST).reaped()),
        ("ignores-cancels",             "no-response-after-cancel",    E::warns(Req::Can05).or_untimed()),
        ("ignores-cancels",             "cancel-by-deadline",          E::warns(Req::Can05).or_untimed()),
        ("ignores-cancels",             "concurrent-cancel-isolation", E::warns(Req::Can05).or_untimed()),
        // The witness stops asking a grace after the proof that the cancels were read.
        ("ignores-cancels",             "cancel-request-id-fidelity",  E::warns(Req::Can05).reply_timeout(PATIENT).within(FAST)),
        ("duplicate-response",          "cancel-unknown-id",           E::fails(Req::Rpc04)),
        ("duplicate-response",          "stdio-framing",               E::fails(Req::Rpc04)),
        ("string-ids",                  "cancel-unknown-id",           E::fails(Req::Rpc04)),
        ("progress-without-token",      "no-progress-without-token",   E::fails(Req::Prg06)),
        ("progress-repeats",            "progress-monotonic",          E::warns(Req::Prg03)),
        ("progress-decreases",          "progress-monotonic",          E::fails(Req::Prg03)),
        ("no-exit-on-eof",              "shutdown-on-stdin-close",     E::warns(Req::Std07).reaped()),
        // Late by its own timer (as rmcp's 5 s drain is): late on a loaded machine too.
        ("exits-late-by-its-timer",     "shutdown-on-stdin-close",     E::warns(Req::Std07).reaped()),
        // A finished call's handler ignores the cancel it reads afterwards (CAN-09) and its
        // result lands after the barrier's answer: the timing cannot tell, so no warning,
        // calm or loaded.
        ("late-results",                "late-cancel-sweep",           E::outcome(Pass)),
        ("spawns-child",                "cancel-unknown-id",           E::outcome(Pass).reaped()),
        // Silence on unreadable input is a SHOULD (AMB-14); the rest of the case still runs.
        ("silent-on-parse-error",       "malformed-input",             E::warns(On::Case)),
        // Another code than -32601 for an unknown method is a warning up to 2025-11-25 (a
        // convention there, RPC-09); an error it must be, and the server must go on serving.
        ("unknown-method-internal-error", "unknown-method",            E::outcome(Pass)),
        ("unknown-method-internal-error", "unknown-method-code",       E::warns(On::Case)),
        ("unknown-method-invalid-params", "unknown-method",            E::outcome(Pass)),
        ("unknown-method-invalid-params", "unknown-method-code",       E::warns(On::Case)),
        ("unknown-method-result",       "unknown-method",              E::fails(On::Case)),
        ("exits-at-once",               "cancel-unknown-id",           E::fails(Req::Std01).within(FAST).reaped()),
        ("floods-stdout-line",          "cancel-unknown-id",           E::fails(Req::Std02).within(FAST).small(PEAK_MIB).reaped()),
        ("floods-stderr",               "cancel-unknown-id",           E::outcome(Pass).within(FAST).small(PEAK_MIB).reaped()),
        ("spawns-child",                "shutdown-on-stdin-close",     E::outcome(Pass).reaped()),
        // Issue-9 hostile targets: each ends in bounded time with the reason, and leaves
        // nothing behind.
        ("floods-pings-unread",         "cancel-unknown-id",           E::fails(Req::Can11).within(FAST).reaped()),
        ("exits-leaving-child",         "cancel-unknown-id",           E::fails(Req::Std01).within(FAST).startup_timeout(SLOW_START).reaped()),
        ("half-line",                   "cancel-unknown-id",           E::fails(Req::Lif02).saying("the start of a line").within(FAST).startup_timeout(SLOW_START).reaped()),
        ("daemonizes",                  "cancel-unknown-id",           E::outcome(Pass).reaped()),
        ("chatty",                      "ping-during-long-call",       E::outcome(Pass)),
        // Talking is no answer: a wait is extended only so long by a target that writes at its
        // own pace, and the whole opening has a deadline (startup allowance and case limit)
        // however fast it writes: whichever ends first (on a busy machine the talk allowance
        // is stretched past the opening's deadline), the failure says what the target wrote.
        ("chatty-never-initializes",    "cancel-unknown-id",           E::fails(Req::Lif02).saying("kept writing other messages|messages meanwhile").within(FAST).reaped()),
        ("floods-never-initializes",    "cancel-unknown-id",           E::fails(Req::Lif02).case_timeout(secs(3)).within(secs(8)).small(PEAK_MIB).reaped()),
        ("floods-unknown-progress",     "cancel-unknown-id",           E::fails(Req::Prg06).small(PEAK_MIB).bounded()),
        // The harness's replies to a ping flood are sent and counted, not kept; responses for
        // made-up ids are judged one by one, each its own finding, in linear time, and listed
        // up to a point.
        ("floods-pings",                "cancel-unknown-id",           E::outcome(Pass).small(PEAK_MIB).bounded()),
        ("floods-unknown-responses",    "cancel-unknown-id",           E::fails(Req::Rpc04).saying("never used as a request id").within(secs(10)).small(PEAK_MIB).bounded()),
        // A ticker that ignores its cancel keeps reporting progress after the last barrier.
        ("ignores-cancels",             "progress-monotonic",          E::warns(Req::Can05).or_untimed()),
        // The same faults in the stateless era: a MUST NOT there, so a failure.
        ("correct",                     "cancel-after-progress",       E::outcome(Pass).at(STATELESS)),
        ("correct",                     "no-response-after-cancel",    E::outcome(Pass).at(STATELESS)),
        ("correct",                     "late-cancel-after-completion", E::outcome(Pass).at(STATELESS)),
        ("correct",                     "late-cancel-sweep",           E::outcome(Pass).at(STATELESS)),
        ("late-results",                "late-cancel-sweep",           E::outcome(Pass).at(STATELESS)),
        ("answers-after-cancel",        "cancel-after-progress",       E::fails(Req::Can05).at(STATELESS)),
        ("answers-after-cancel-slowly", "no-response-after-cancel",    E::fails(Req::Can05).at(STATELESS)),
        ("ignores-cancels",             "progress-monotonic",          E::fails(Req::Can05).or_untimed().at(STATELESS)),
        ("ignores-cancels",             "no-response-after-cancel",    E::fails(Req::Can05).or_untimed().at(STATELESS)),
        ("correct",                     "stateless-result-type",       E::outcome(Pass).at(STATELESS)),
        ("correct",                     "stateless-no-server-requests", E::outcome(Pass).at(STATELESS)),
        ("no-result-type",              "stateless-result-type",       E::fails(Req::Rpc14).at(STATELESS)),
        ("requests-client",             "stateless-no-server-requests", E::fails(Req::Rpc15).at(STATELESS)),
    ]);
    rows
}

/// This binary serving `mode` over stdio, for the rows played on shared targets.
fn stdio(mode: &str) -> Result<Connect, Failed> {
    self_served::stdio("BROKEN_SERVER", mode)
}

fn main() {
    if let Ok(mode) = std::env::var("BROKEN_SERVER") {
        server::serve(&mode);
    }
    let args = harness::test_arguments();
    conformance::transport::reap::become_subreaper();
    let cases = self_served::server_cases();
    let mut trials = shared_rows::trials(&cases, table(), stdio, |_, want| {
        self_served::options("2025-11-25", Duration::from_millis(500), want)
    });
    trials.extend(self_served::trials(&cases, table(), check));
    libtest_mimic::run(&args, trials).exit();
}
