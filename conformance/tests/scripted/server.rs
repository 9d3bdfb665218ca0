//! The harness as a client of a scripted server over stdio: the barrier's proof, the grace
//! after it, waits stretched by CPU pressure, a target that stops reading, `! exit`.

use crate::scripted::servers::one_worker;
use crate::scripted::support::{ms, options, serve, serve_with, server_case, shipped_case, Played};
use conformance::outcome::{Outcome, Severity};
use conformance::transport::scripted::{progress, result, text, Act, LoadScript, Role, Script};
use serde_json::json;
use std::time::Duration;

/// A `sleep` of 200 ms (its natural end +181 ms) cancelled at +51 ms, then the barrier and a
/// watch.
const CANCELLED_SLEEP: &str = r#"@requirement CAN-05
@level should
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":200}}}
! after 50ms
! cancel 1 no longer needed
! barrier
! silent 1 600ms
"#;

/// A server that answers the opening and pings at once and ignores the cancel: it answers the
/// sleep when it ends, 200 ms after reading it.
fn ignores_cancels() -> Script {
    Script::new().serving(ms(1)).on(|heard| match heard.id() {
        Some(id) if heard.is("tools/call") => vec![(ms(200), Act::Send(result(id, text("slept"))))],
        _ => vec![],
    })
}

async fn cancelled_sleep(script: Script) -> Played {
    serve(
        &server_case(CANCELLED_SLEEP),
        "2025-11-25",
        Role::StdioServer,
        script,
    )
    .await
}

/// Barrier proof: the answer to the barrier's ping (+52 ms) proves the cancel was read before
/// the sleep could end (+181 ms); its answer at +201 ms was sent knowing of the cancel: CAN-05.
/// Twins broken.rs (`ignores-cancels`, `no-response-after-cancel`), whose real run may be
/// untimed on a loaded machine (`or_untimed`); here the timing is exact.
#[tokio::test(start_paused = true)]
async fn barrier_proof_charges_an_answer_sent_knowing_of_the_cancel() {
    cancelled_sleep(ignores_cancels())
        .await
        .outcome(Outcome::Warn)
        .cites(Severity::Warn, "CAN-05")
        .says("had read the cancel before the tool could have finished on its own");
}

/// Barrier proof: a server with one worker answers the barrier's ping only after the sleep
/// (at +202 ms, behind it): the sleep's answer came before any proof, so it crossed the
/// cancel. Twins broken.rs (`answers-after-cancel`, `no-response-after-cancel`) and the
/// order-of-arrival fix cdbc2a2 (after a cancel means after it in time).
#[tokio::test(start_paused = true)]
async fn barrier_proof_that_comes_after_the_answer_excuses_it() {
    let busy = one_worker(Box::new(|_| (ms(200), Some(text("slept")))));
    cancelled_sleep(busy)
        .await
        .outcome(Outcome::Pass)
        .never_cites("CAN-05")
        .says("crossed its cancel");
}

/// A cancel sent after the sleep could have ended is not charged however late its result
/// lands (CAN-09): the writer lags and writes it after the barrier's answer. Twins broken.rs
/// (`late-results`, `late-cancel-sweep`), a pass calm and loaded.
#[tokio::test(start_paused = true)]
async fn a_cancel_sent_after_the_tool_could_end_charges_nothing() {
    let case = server_case(
        r#"@requirement CAN-05
@level should
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":100}}}
! after 120ms
! cancel 1
! barrier
! silent 1 300ms
"#,
    );
    // Its handler finished at +101 ms; the result is written just after the barrier's answer.
    let late_writer = Script::new()
        .serving(ms(1))
        .on(|heard| match heard.cancels() {
            Some(id) => vec![(ms(3), Act::Send(result(id, text("slept"))))],
            None => vec![],
        });
    serve(&case, "2025-11-25", Role::StdioServer, late_writer)
        .await
        .outcome(Outcome::Pass)
        .cites(Severity::Note, "CAN-08")
        .says("when the tool could already have finished");
}

/// The target's own waits for a CPU from the proof past the sleep's end leave open whether
/// its handler saw the cancel in time: a note, not CAN-05. Twins a8ff1e2 and 5211d3f (a
/// cancel read before a sleep could end, the server then starved past that end).
#[tokio::test(start_paused = true)]
async fn target_waits_past_the_tools_end_excuse_an_answer_after_the_proof() {
    let starved = LoadScript::calm().target_starved(ms(52), ms(260));
    cancelled_sleep(ignores_cancels().load(starved))
        .await
        .outcome(Outcome::Pass)
        .cites(Severity::Note, "CAN-08")
        .says("for a CPU since, so its handler may not have run before the tool's end");
}

/// The machine's CPU pressure excuses nothing where the target's own waits are known: a busy
/// machine (80 %, waits stretched five times) whose target never waited is the calm verdict.
/// Twins d38b3ec (graces grow by the target's waits, not by the pressure the harness's own
/// parallel cases drive up).
#[tokio::test(start_paused = true)]
async fn pressure_alone_excuses_nothing_the_targets_waits_do_not() {
    let busy = LoadScript::calm().pressure(Duration::ZERO, 80.0);
    cancelled_sleep(ignores_cancels().load(busy))
        .await
        .outcome(Outcome::Warn)
        .cites(Severity::Warn, "CAN-05");
}

/// A ticker (every 50 ms, token `t`) cancelled at +121 ms; the barrier's answer at +122 ms
/// proves the cancel read.
const CANCELLED_TICKER: &str = r#"@requirement CAN-05
@level should
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ticker","arguments":{"interval_ms":50},"_meta":{"progressToken":"t"}}}
! after 120ms
! cancel 1
! barrier
! silent 1 600ms
"#;

/// A ticker that reports at +51 and +101 ms and once more `late` after the proof (+122 ms),
/// then stops.
async fn one_late_tick(late: Duration, load: LoadScript) -> Played {
    let tick = |n| Act::Send(progress(&json!("t"), n));
    let ticker = Script::new()
        .serving(ms(1))
        .at(ms(51), tick(1))
        .at(ms(101), tick(2))
        .at(ms(122) + late, tick(3))
        .load(load);
    serve(
        &server_case(CANCELLED_TICKER),
        "2025-11-25",
        Role::StdioServer,
        ticker,
    )
    .await
}

/// Grace window: one progress 200 ms after the proof, then none, is within the calm grace
/// (250 ms): it may have been produced before the cancel was read. Twins 110af98 (a burst
/// after the proof that stopped is a note) and the calm `correct` rows of progress cases.
#[tokio::test(start_paused = true)]
async fn one_progress_within_the_grace_after_the_proof_is_a_note() {
    one_late_tick(ms(200), LoadScript::calm())
        .await
        .outcome(Outcome::Pass)
        .cites(Severity::Note, "CAN-08")
        .says("came just after the proof that its cancel was read");
}

/// Grace window: the same progress 400 ms after the proof, on a calm machine, was sent
/// knowing of the cancel: CAN-05. Twins broken.rs (`ignores-cancels`, `progress-monotonic`,
/// CAN-05).
#[tokio::test(start_paused = true)]
async fn progress_past_the_grace_after_the_proof_breaks_can_05() {
    one_late_tick(ms(400), LoadScript::calm())
        .await
        .outcome(Outcome::Warn)
        .cites(Severity::Warn, "CAN-05")
        .says("progress for request 1 after the target had read its cancel");
}

/// Grace window under load: the grace grows by exactly the time the target waited for a CPU
/// since the proof (300 ms: 250 + 300 > 400), so the same progress is a note. Twins d38b3ec
/// and 8d7849e (a grace that grows by the target's own waits), 32d36ea.
#[tokio::test(start_paused = true)]
async fn the_grace_grows_by_the_targets_waits_for_a_cpu() {
    let starved = LoadScript::calm().target_starved(ms(122), ms(422));
    one_late_tick(ms(400), starved)
        .await
        .outcome(Outcome::Pass)
        .cites(Severity::Note, "CAN-08")
        .says("later than the 250 ms a calm machine allows, but the target waited 300 ms");
}

/// Grace window without the kernel's word (a target the harness did not start): the calm
/// grace is stretched by the machine's pressure instead (80 %: 1250 ms), and the same
/// progress is a note. Twins 9ca06b2 (graces stretched by the pressure) as d38b3ec left it
/// where the waits are unknown.
#[tokio::test(start_paused = true)]
async fn the_pressure_stretches_the_grace_only_where_the_targets_waits_are_unknown() {
    let unknown = LoadScript::calm()
        .target_unknown()
        .pressure(Duration::ZERO, 80.0);
    one_late_tick(ms(400), unknown)
        .await
        .outcome(Outcome::Pass)
        .cites(Severity::Note, "CAN-08");
    let known = LoadScript::calm().pressure(Duration::ZERO, 80.0);
    one_late_tick(ms(400), known)
        .await
        .outcome(Outcome::Warn)
        .cites(Severity::Warn, "CAN-05");
}

/// An `echo` the server takes 3 s to answer (its one worker busy; the probes wait behind it,
/// so nothing proves the echo read early), against the 2 s reply timeout.
async fn slow_echo(load: LoadScript) -> Played {
    let case = server_case(
        r#"@requirement CAN-11
@level must
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}
< {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}
"#,
    );
    let slow = one_worker(Box::new(|_| (ms(3000), Some(text("hi"))))).load(load);
    serve(&case, "2025-11-25", Role::StdioServer, slow).await
}

/// Reply timeout under CPU pressure: calm, an answer after 3 s is missing (2 s); at 50 %
/// pressure the wait is twice as long and the same answer is in time. Twins 9ca06b2 and
/// 8331639 (every row played again on a loaded machine must give the same verdict).
#[tokio::test(start_paused = true)]
async fn the_reply_timeout_is_stretched_by_cpu_pressure() {
    slow_echo(LoadScript::calm())
        .await
        .outcome(Outcome::Fail)
        .says("no response matching line 5 within 2s");
    slow_echo(LoadScript::calm().pressure(Duration::ZERO, 50.0))
        .await
        .outcome(Outcome::Pass);
}

/// Reply timeout when the pressure rises during the wait (at +0.5 s): the clock reads the
/// pressure again once a second (at +1 s here), and the wait, begun calm, stretches. (A rise
/// in the last second before a deadline is not seen: the reading is up to a second old.)
/// Twins 385c28e (waits follow the pressure while they last, not the reading at their start).
#[tokio::test(start_paused = true)]
async fn a_wait_follows_the_pressure_as_it_rises() {
    slow_echo(LoadScript::calm().pressure(ms(500), 50.0))
        .await
        .outcome(Outcome::Pass);
}

/// A server that stops reading its input once it has read the cancel (its pipe full) and
/// reads again at +3 s; it answers the sleep's cancel with nothing.
async fn stalls_after_the_cancel(load: LoadScript) -> Played {
    let stalls = Script::new()
        .serving(ms(1))
        .on(|heard| match heard.cancels() {
            Some(_) => vec![(Duration::ZERO, Act::StopReading)],
            None => vec![],
        })
        .at(ms(3000), Act::Read)
        .load(load);
    cancelled_sleep(stalls).await
}

/// A stall after a cancel: the barrier's ping (case line 7) cannot be written for the 2 s
/// write patience, so the target stopped reading: CAN-11, and the case ends. Twins broken.rs
/// (`floods-pings-unread`, `cancel-unknown-id`, CAN-11).
#[tokio::test(start_paused = true)]
async fn a_target_that_stops_reading_after_a_cancel_fails_can_11() {
    stalls_after_the_cancel(LoadScript::calm())
        .await
        .outcome(Outcome::Fail)
        .cites_at(Severity::Fail, "CAN-11", 7)
        .says("stopped reading what the harness sends");
}

/// The same pause on a busy machine (60 %: the patience stretched to 5 s) is slow reading,
/// not a stall. Twins 7b3a6a0 (write patience is stretched for a busy machine).
#[tokio::test(start_paused = true)]
async fn a_busy_machine_stretches_the_write_patience() {
    let played = stalls_after_the_cancel(LoadScript::calm().pressure(Duration::ZERO, 60.0)).await;
    played.outcome(Outcome::Pass).never_cites("CAN-11");
    // The barrier's ping went through when the target read again.
    let ping = played
        .heard
        .iter()
        .find(|h| h.is("ping"))
        .expect("the ping was read");
    assert_eq!(ping.at, ms(3000), "{}", played.shown());
}

/// `shutdown-on-stdin-close` against a server that exits 5.6 s after its stdin closes.
async fn exits_late(load: LoadScript) -> Played {
    let late = Script::new()
        .serving(ms(1))
        .on(|heard| match heard.input_ended() {
            true => vec![(ms(5600), Act::Exit(0))],
            false => vec![],
        })
        .load(load);
    let case = shipped_case("server/shutdown-on-stdin-close");
    serve_with(&case, &options("2025-11-25"), Role::StdioServer, late).await
}

/// `! exit` lateness: 600 ms late on a calm machine warns (STD-07); the same lateness while
/// the target's processes waited a second for a CPU is excused (a note); the machine's
/// pressure alone, the target's waits known and nil, excuses nothing. Twins broken.rs
/// (`exits-late-by-its-timer`, `shutdown-on-stdin-close`, STD-07 calm and loaded), ca4dc52
/// and d234660.
#[tokio::test(start_paused = true)]
async fn exit_lateness_is_excused_only_by_the_targets_own_waits() {
    exits_late(LoadScript::calm())
        .await
        .outcome(Outcome::Warn)
        .cites(Severity::Warn, "STD-07");
    // Stdin closes at +2 ms; the target waits for a CPU from +1 s to +2 s.
    exits_late(LoadScript::calm().target_starved(ms(1000), ms(2000)))
        .await
        .outcome(Outcome::Pass)
        .cites(Severity::Note, "STD-07")
        .says("too busy for the timing to tell");
    exits_late(LoadScript::calm().pressure(Duration::ZERO, 90.0))
        .await
        .outcome(Outcome::Warn)
        .cites(Severity::Warn, "STD-07");
}
