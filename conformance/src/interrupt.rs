//! An interrupted harness (Ctrl-C, a CI cancel, SIGTERM, SIGHUP) leaves nothing behind: it
//! kills every target it started, and everything they started, starts none after that, and
//! ends the way the signal would have ended it. The cases the kill cut short are not reported:
//! their targets did nothing wrong, the run was interrupted, and that is all it says.

use crate::transport::reap;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Makes the harness the subreaper of its targets and watches for the signals that end it.
/// Call once, before any target starts.
pub fn guard() {
    if !reap::become_subreaper() {
        eprintln!("conformance: note: cannot become the subreaper of the targets (not Linux?); a target's daemon that leaves its process group and clears its environment may outlive the run");
    }
    let mut signals = match Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("conformance: note: cannot watch for interrupts ({e}); an interrupted run may leave targets running");
            return;
        }
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            // From here on the console is quiet and no target starts.
            reap::interrupt();
            eprintln!(
                "conformance: interrupted by signal {signal} ({}); every target was stopped, the run is incomplete and gives no verdict",
                name(signal)
            );
            let _ = signal_hook::low_level::emulate_default_handler(signal);
            std::process::exit(128 + signal);
        }
    });
}

/// After the run: an interrupted harness waits here for the signal's thread to end the process
/// with the signal's status, rather than exit with the run's.
pub fn hold_if_interrupted() {
    while reap::interrupted() {
        std::thread::park();
    }
}

fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}
