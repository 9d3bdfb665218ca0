//! The console: the run's lines on stdout, written so that a closed pipe (`conformance list |
//! head`) ends the output quietly, like any Unix tool, instead of a panic. The run itself goes
//! on: its reports, exit code and cleanup do not depend on anyone reading the console. Once the
//! harness is interrupted the console is quiet: a case its kill cut short has nothing to say.
//!
//! Outcomes are coloured on a terminal only, never with `NO_COLOR` (`anstream` strips the
//! colour where it does not belong).

use anstyle::{AnsiColor, Style};
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes one line to stdout, unless stdout has been closed.
pub fn say(line: std::fmt::Arguments) {
    if CLOSED.load(Ordering::Relaxed) || conformance::transport::reap::interrupted() {
        return;
    }
    let mut out = anstream::stdout().lock();
    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
        CLOSED.store(true, Ordering::Relaxed);
    }
}

/// An outcome's word (`pass`, `fail`, `FAILED` …), padded to `width` and coloured by what it
/// means.
pub fn paint(word: &str, width: usize) -> String {
    let lower = word.to_ascii_lowercase();
    let color = if lower.starts_with("fail") || lower == "error" || lower.starts_with("stale") {
        Some(AnsiColor::Red)
    } else if lower.starts_with("warn") || lower.starts_with("flaky") {
        Some(AnsiColor::Yellow)
    } else if lower.starts_with("pass") {
        Some(AnsiColor::Green)
    } else if lower.starts_with("info") {
        Some(AnsiColor::Cyan)
    } else {
        None
    };
    let style = match color {
        Some(c) => Style::new().fg_color(Some(c.into())).bold(),
        None => Style::new().dimmed(),
    };
    format!("{style}{word:<width$}{style:#}")
}
