//! An interrupted harness (Ctrl-C, a CI cancel, SIGTERM, SIGHUP) leaves nothing behind: it
//! kills every target it started, and everything they started, then ends the way the signal
//! would have ended it.

use conformance::transport::reap;
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
            eprintln!("conformance: interrupted by signal {signal}; stopping every target");
            reap::kill_everything();
            let _ = signal_hook::low_level::emulate_default_handler(signal);
            std::process::exit(128 + signal);
        }
    });
}
