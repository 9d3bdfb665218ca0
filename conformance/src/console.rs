//! The console: the run's lines on stdout, written so that a closed pipe (`conformance list |
//! head`) ends the output quietly, like any Unix tool, instead of a panic. The run itself goes
//! on: its reports, exit code and cleanup do not depend on anyone reading the console. Once the
//! harness is interrupted the console is quiet: a case its kill cut short has nothing to say.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes one line to stdout, unless stdout has been closed.
pub fn say(line: std::fmt::Arguments) {
    if CLOSED.load(Ordering::Relaxed) || conformance::transport::reap::interrupted() {
        return;
    }
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
        CLOSED.store(true, Ordering::Relaxed);
    }
}
