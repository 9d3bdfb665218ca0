//! How fast a target is, measured from its transcripts: how long it takes to stop talking
//! about a request once the harness cancels it (cancel-to-quiet), how long it takes to answer
//! its opening, and how long the harness's small requests take to come back. Pure functions
//! of the recorded times, so the figures in the JSON and HTML reports can be compared across
//! SDKs and over time, and checked by hand against a dump.
//!
//! What the harness sees is what it measures: over Streamable HTTP a cancel in the 2026-07-28
//! era closes the request's stream, and what the server would have written on it afterwards
//! is never seen, so cancel-to-quiet there is usually zero; the witness, not the clock, says
//! whether the work stopped.

use super::timeline::{self, Cancel};
use crate::transcript::{Direction, Entry};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What one cancel took, as the JSON report gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTiming {
    /// The id the cancel named.
    pub request_id: serde_json::Value,
    /// The method of the request it cancelled, when the harness had sent one with that id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// When the cancel was sent (ms since the target started).
    pub at_ms: f64,
    /// The index of the cancel in the case's transcript.
    #[serde(default)]
    pub entry: usize,
    /// The index of the target's last message about the request after the cancel, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_entry: Option<usize>,
    /// When the proof that it was read came, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof_ms: Option<f64>,
    /// When the answer of the `cancellations` witness that first listed the request came (its
    /// handler had seen the cancel), if a witness step asked and it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness_ms: Option<f64>,
    /// From the cancel to the target's last message about the request (its progress, its
    /// response, anything on its stream): 0 when nothing came after the cancel.
    pub quiet_ms: f64,
    /// How many messages about the request came after the cancel.
    pub after: usize,
    /// How many of them came after the proof.
    pub late: usize,
    /// The target answered the request after the cancel (it did not stop, or the answer
    /// crossed the cancel).
    #[serde(default)]
    pub answered: bool,
    /// Whether the request was still running when cancelled (it had been sent and not yet
    /// answered): only such cancels count in the run's cancel-to-quiet figures.
    pub in_flight: bool,
}

/// The timings of one case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseTimings {
    /// From the start of the target to its opening: a server's answer to the first
    /// `initialize` or `server/discover`, a client's first message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_ms: Option<f64>,
    /// Round trips of the harness's own requests (barriers, probes, witness calls) and of
    /// every `ping` and `server/discover`, after the opening, that were answered and not
    /// cancelled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_trips_ms: Vec<f64>,
    /// Every cancel the harness sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cancels: Vec<CancelTiming>,
}

/// A summary of many measurements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// How many there were.
    pub count: usize,
    /// The median (nearest rank), absent without measurements.
    pub median_ms: Option<f64>,
    /// The 95th percentile (nearest rank).
    pub p95_ms: Option<f64>,
    /// The largest.
    pub max_ms: Option<f64>,
}

/// A run's timings: each figure over every case of the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunTimings {
    /// Cancel-to-quiet of every cancel of a request in flight (not of `initialize`).
    pub cancel_to_quiet: Stats,
    /// Of those cancels, how many were followed by a message about the request.
    #[serde(default)]
    pub talked_after_cancel: usize,
    /// Of those cancels, how many were followed by the request's response.
    #[serde(default)]
    pub answered_after_cancel: usize,
    /// Of those cancels, from the cancel to the answer of the `cancellations` witness that
    /// first listed the request, over those a witness step saw listed.
    #[serde(default)]
    pub cancel_to_witness: Stats,
    /// From the start of the target to its opening.
    pub startup: Stats,
    /// Round trips of small requests.
    pub round_trip: Stats,
}

/// Milliseconds, to a tenth.
pub fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

/// The timings of one case from its transcript, and from when the `cancellations` witness
/// first listed each request it listed (`witnessed`: id, since the target started).
pub fn of_case(
    transcript: &[Entry],
    cancels: &[Cancel],
    witnessed: &[(serde_json::Value, Duration)],
) -> CaseTimings {
    CaseTimings {
        startup_ms: startup(transcript).map(ms),
        round_trips_ms: round_trips(transcript, cancels)
            .into_iter()
            .map(ms)
            .collect(),
        cancels: cancels
            .iter()
            .filter(|c| c.by == Direction::Sent)
            .map(|c| CancelTiming {
                witness_ms: witnessed_after(transcript, c, witnessed),
                ..cancel_timing(transcript, c)
            })
            .collect(),
    }
}

/// The transcript index of the opening request the harness sent (the first `initialize` or
/// `server/discover`) and of its answer.
fn opening(transcript: &[Entry]) -> Option<(usize, usize)> {
    let request = transcript.iter().position(is_opening)?;
    let id = timeline::id(&transcript[request])?;
    let answer = transcript
        .iter()
        .enumerate()
        .skip(request + 1)
        .find(|(_, e)| {
            e.direction == Direction::Received
                && timeline::is_response(e)
                && timeline::id(e) == Some(id)
        })?;
    Some((request, answer.0))
}

/// From the start of the target to its opening: a server's answer to the opening request, or
/// (when the harness sent none: it plays the server) the target's first message.
pub fn startup(transcript: &[Entry]) -> Option<Duration> {
    if transcript.iter().any(is_opening) {
        // A server that never answered its opening has no startup time.
        return opening(transcript).map(|(_, answer)| transcript[answer].at);
    }
    transcript
        .iter()
        .find(|e| e.direction == Direction::Received && e.value.is_some())
        .map(|e| e.at)
}

/// Whether the harness sent this to open a session.
fn is_opening(entry: &Entry) -> bool {
    entry.direction == Direction::Sent
        && timeline::is_request(entry)
        && matches!(
            timeline::method(entry),
            Some("initialize" | "server/discover")
        )
}

/// Round trips of the harness's small requests after the opening: its own (barriers, probes,
/// witness calls) and any `ping` or `server/discover`, answered and not cancelled.
pub fn round_trips(transcript: &[Entry], cancels: &[Cancel]) -> Vec<Duration> {
    let opened = opening(transcript);
    // A round trip counts once the target was running: a request sent before the opening was
    // answered waited for the start (as `engine/proof.rs` counts them too).
    let running_from = opened.map(|(_, answer)| transcript[answer].at);
    let cancelled: Vec<usize> = cancels.iter().filter_map(|c| c.request).collect();
    let mut trips = vec![];
    for (index, e) in transcript.iter().enumerate() {
        let small = e.internal || matches!(timeline::method(e), Some("ping" | "server/discover"));
        if e.direction != Direction::Sent
            || !timeline::is_request(e)
            || !small
            || opened.is_some_and(|(request, answer)| index == request || index < answer)
            || running_from.is_some_and(|at| e.at < at)
            || cancelled.contains(&index)
        {
            continue;
        }
        let id = timeline::id(e);
        let answer = transcript[index + 1..].iter().find(|a| {
            a.direction == Direction::Received
                && a.session == e.session
                && timeline::is_response(a)
                && timeline::id(a) == id
        });
        if let Some(answer) = answer {
            trips.push(answer.at.saturating_sub(e.at));
        }
    }
    trips
}

/// When the witness first listed the request `cancel` named, at or after the cancel (ms
/// since the target started).
fn witnessed_after(
    transcript: &[Entry],
    cancel: &Cancel,
    witnessed: &[(serde_json::Value, Duration)],
) -> Option<f64> {
    let sent = transcript[cancel.index].at;
    witnessed
        .iter()
        .find(|(id, at)| *at >= sent && crate::pattern::json_equal(id, &cancel.request_id))
        .map(|(_, at)| ms(*at))
}

/// What one cancel took.
pub fn cancel_timing(transcript: &[Entry], cancel: &Cancel) -> CancelTiming {
    let last = cancel.last_after(transcript);
    let quiet = last.map_or(Duration::ZERO, |last| {
        timeline::between(transcript, cancel.index, last)
    });
    let late = cancel
        .after
        .iter()
        .filter(|&&i| cancel.is_late(transcript, i))
        .count();
    CancelTiming {
        request_id: cancel.request_id.clone(),
        method: cancel.method.clone(),
        at_ms: ms(transcript[cancel.index].at),
        entry: cancel.index,
        quiet_entry: last,
        proof_ms: cancel.proof.map(|p| ms(transcript[p].at)),
        witness_ms: None,
        quiet_ms: ms(quiet),
        after: cancel.after.len(),
        late,
        answered: cancel
            .after
            .iter()
            .any(|&i| timeline::is_response(&transcript[i])),
        in_flight: cancel.request.is_some() && !cancel.answered_before,
    }
}

/// Milliseconds from `from` to `to` (two of the reports' times), to a tenth; 0 when `to`
/// is not later.
pub fn ms_after(from: f64, to: f64) -> f64 {
    ((to - from).max(0.0) * 10.0).round() / 10.0
}

/// The median, 95th percentile and largest of `values` (nearest rank).
pub fn stats(values: &[f64]) -> Stats {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let rank = |p: f64| {
        let n = sorted.len();
        let at = ((p * n as f64).ceil() as usize).clamp(1, n);
        sorted[at - 1]
    };
    if sorted.is_empty() {
        return Stats::default();
    }
    Stats {
        count: sorted.len(),
        median_ms: Some(rank(0.5)),
        p95_ms: Some(rank(0.95)),
        max_ms: sorted.last().copied(),
    }
}

/// A run's timings from its cases' timings.
pub fn of_run<'a>(cases: impl IntoIterator<Item = &'a CaseTimings> + Clone) -> RunTimings {
    let counted: Vec<&CancelTiming> = cases
        .clone()
        .into_iter()
        .flat_map(|c| &c.cancels)
        .filter(|c| c.in_flight && c.method.as_deref() != Some("initialize"))
        .collect();
    let quiet: Vec<f64> = counted.iter().map(|c| c.quiet_ms).collect();
    let witnessed: Vec<f64> = counted
        .iter()
        .filter_map(|c| c.witness_ms.map(|at| ms_after(c.at_ms, at)))
        .collect();
    let startup: Vec<f64> = cases
        .clone()
        .into_iter()
        .filter_map(|c| c.startup_ms)
        .collect();
    let trips: Vec<f64> = cases
        .into_iter()
        .flat_map(|c| c.round_trips_ms.iter().copied())
        .collect();
    RunTimings {
        cancel_to_quiet: stats(&quiet),
        talked_after_cancel: counted.iter().filter(|c| c.after > 0).count(),
        answered_after_cancel: counted.iter().filter(|c| c.answered).count(),
        cancel_to_witness: stats(&witnessed),
        startup: stats(&startup),
        round_trip: stats(&trips),
    }
}

#[cfg(test)]
mod tests;
