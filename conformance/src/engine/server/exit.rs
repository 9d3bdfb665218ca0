//! `! exit D`: does the server exit when its input ends, and is it late by its own doing
//! or by the machine's?

use super::super::Engine;
use super::ServerTarget;
use crate::engine::parts::clock;
use crate::outcome::Severity;
use crate::requirement::Req;
use crate::transport::Transport;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// `! exit D`: the target must exit within D of its input closing (STD-07). If it does not,
/// the harness watches a little longer to say when it did, so "promptly" can be weighed.
///
/// A busy machine can make a prompt server late, and a server's own timer can make it late on
/// any machine; the machine's CPU pressure cannot tell the two apart. So the harness reads how
/// long the target's own processes waited for a CPU meanwhile (the kernel's scheduler
/// statistics for its process group, see `waited.rs`) and excuses only that much: a server
/// that would have exited well within D (by `EXIT_MARGIN`) had it not waited gets a note that
/// says so; one that sleeps past D is late however busy the machine was.
pub(super) async fn exit<T: Transport>(e: &mut Engine<'_, T, ServerTarget>, window: Duration) {
    let closed = clock::now();
    let before = e.waited();
    let mut starved = Duration::ZERO;
    let sample = |e: &Engine<'_, T, ServerTarget>, starved: &mut Duration| {
        if let (Some(now), Some(before)) = (e.waited(), before) {
            *starved = (*starved).max(now.saturating_sub(before));
        }
    };
    let watch = |until: Instant| Deadline::from_std(until.min(clock::now() + SAMPLE_EVERY));
    while !e.liveness.has_exited() && clock::now() < closed + window {
        let tick = watch(closed + window);
        if !e.next(tick).await {
            // Nothing more can come (a target that stopped reading): just wait.
            tokio::time::sleep_until(tick).await;
        }
        sample(e, &mut starved);
    }
    if e.liveness.has_exited() {
        if let Some(status) = e.io.exit_status().filter(|s| !s.success()) {
            e.rule(
                Severity::Note,
                Req::Std07,
                format!("the target exited with {status} after its stdin closed"),
            );
        }
        return;
    }
    // Long enough to say when it exited; longer for a target that is kept from running.
    loop {
        let until = closed + window + LATE_WATCH + starved.min(LATE_WATCH);
        if e.liveness.has_exited() || clock::now() >= until {
            break;
        }
        let tick = watch(until);
        if !e.next(tick).await {
            tokio::time::sleep_until(tick).await;
        }
        if !e.liveness.has_exited() {
            sample(e, &mut starved);
        }
    }
    let took = clock::since(closed);
    let when = if e.liveness.has_exited() {
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
            Req::Std07,
            format!(
                "the target did not exit within {window:?} after its stdin closed ({when}{waited}): without that wait it would have, so the machine was too busy for the timing to tell"
            ),
        );
        return;
    }
    e.rule(
        e.played.severity(),
        Req::Std07,
        format!(
            "the target did not exit within {window:?} after its stdin closed ({when}{waited}); \
             a server should exit promptly when its input ends"
        ),
    );
}

/// How often the CPU waits of a target that should exit are read.
pub(super) const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// How far inside its window a server must have been, but for its waits for a CPU, for its
/// lateness to be excused.
pub(super) const EXIT_MARGIN: Duration = Duration::from_millis(250);
/// How long past its window an exit is still watched for, to say when it came.
pub(super) const LATE_WATCH: Duration = Duration::from_secs(4);
