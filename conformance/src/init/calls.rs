//! What init's checks send and measure, shared by the checks of plain and task roles: the
//! sleeps and tick interval asked of a candidate, how long work is watched, the arguments and
//! progress token of a call, and the median gap between progress notifications.

use super::Candidate;
use crate::fixtures::{fill_arguments, Role};
use serde_json::Value;
use std::time::Duration;

/// The sleeps asked for, in milliseconds.
pub(super) const SLEEPS: [u64; 2] = [300, 1000];

/// The interval asked of a ticker, in milliseconds.
pub(super) const TICK_MS: u64 = 100;

/// How long `work` is watched at least, once it sent progress.
pub(super) const WORK_WATCH: Duration = Duration::from_secs(1);

/// The arguments a case's call of the role becomes.
pub(super) fn arguments(candidate: &Candidate, case_arguments: Value) -> Value {
    match &candidate.arguments {
        Some(template) => fill_arguments(template, &case_arguments),
        None => case_arguments,
    }
}

/// A progress token of its own for each call.
pub(super) fn token(role: Role) -> String {
    format!(
        "init-{role}-{}",
        fresh_text().rsplit(' ').next().unwrap_or("")
    )
}

/// The median time between progress notifications, when at least two came.
pub(super) fn median_gap(progress: &[Duration]) -> Option<Duration> {
    let mut gaps: Vec<Duration> = progress
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    gaps.sort();
    gaps.get(gaps.len() / 2).copied()
}

/// A text no tool could have made up.
pub(super) fn fresh_text() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "conformance init {:08x}",
        nanos ^ std::process::id().rotate_left(16)
    )
}
