//! Diagnostics on stderr that a hostile server cannot turn into a flood.
//!
//! A server that writes garbage can produce millions of bad lines a second; logging each
//! one would make the client's stderr the bottleneck and bury the one line that matters.
//! [`Throttle`] shows the first few reports of a kind in full, then at most one summary per
//! interval counting what it did not show.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many reports of a kind are shown in full.
const SHOWN_IN_FULL: u32 = 5;
/// How often a summary of suppressed reports may be shown.
const SUMMARY_EVERY: Duration = Duration::from_secs(5);

/// Writes one diagnostic line to stderr.
pub(crate) fn warn(message: &str) {
    eprintln!("reference-client: {message}");
}

/// Rate-limits one kind of report (see the module documentation).
pub(crate) struct Throttle {
    what: &'static str,
    state: Mutex<State>,
}

struct State {
    shown: u32,
    suppressed: u64,
    last_summary: Option<Instant>,
}

impl Throttle {
    /// A throttle for reports of `what` (a plural noun phrase, used in the summary).
    pub(crate) const fn new(what: &'static str) -> Self {
        Self {
            what,
            state: Mutex::new(State {
                shown: 0,
                suppressed: 0,
                last_summary: None,
            }),
        }
    }

    /// Reports one occurrence; `message` is only built when it will be shown.
    pub(crate) fn report(&self, message: impl FnOnce() -> String) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.shown < SHOWN_IN_FULL {
            state.shown += 1;
            warn(&message());
            if state.shown == SHOWN_IN_FULL {
                warn(&format!(
                    "further {} are counted, not shown, from now on",
                    self.what
                ));
                state.last_summary = Some(Instant::now());
            }
            return;
        }
        state.suppressed += 1;
        let due = state
            .last_summary
            .is_none_or(|at| at.elapsed() >= SUMMARY_EVERY);
        if due {
            warn(&format!(
                "{} more {} were not shown",
                state.suppressed, self.what
            ));
            state.suppressed = 0;
            state.last_summary = Some(Instant::now());
        }
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if state.suppressed > 0 {
            warn(&format!(
                "{} more {} were not shown",
                state.suppressed, self.what
            ));
        }
    }
}
