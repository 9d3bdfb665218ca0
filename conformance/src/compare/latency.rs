//! How fast a target goes quiet after a cancel, over every case and version of a run: the
//! distribution (median and worst) an SDK author compares before and after a release. The
//! figures are the ones each case's report already carries (`timings.cancels`); this only
//! gathers them, so a number here can be traced to the transcript it came from.
//!
//! A median moves with the machine's load, some by a factor of ten; so each keeps the median
//! of the run before (`conformance compare --previous`), and the tables show a median only
//! where it held between the two runs ([`Spread::held`]).

use crate::report::json::RunReport;
use crate::report::timing::{self, ms_after};
use serde::{Deserialize, Serialize};

/// The cancel timings of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Latency {
    /// From the cancel to the target's last message about the cancelled request (0 when it
    /// said nothing more), over cancels of requests in flight.
    pub cancel_to_quiet: Spread,
    /// From the cancel to the proof that the target read it (the first answer to a request
    /// sent after the cancel on stdio; the barrier after the grace over HTTP).
    pub cancel_to_proof: Spread,
    /// From the cancel to the answer of the `cancellations` witness that first listed the
    /// request (its handler had seen the cancel), over cancels a witness step asked about.
    /// When the case asks is part of it: a witness step comes after the barrier, and the
    /// question is repeated, less and less often, until the request is listed.
    #[serde(default)]
    pub cancel_to_witness: Spread,
}

/// A distribution of milliseconds: how many, the median (nearest rank) and the worst.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spread {
    /// How many measurements.
    pub count: usize,
    /// The median, nearest rank; absent without measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ms: Option<f64>,
    /// The largest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_ms: Option<f64>,
    /// The median of the same target's run before this one (`--previous`), when there was
    /// one and it had measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_median_ms: Option<f64>,
}

/// Two medians under this many milliseconds both say "at once": they held, whatever their
/// ratio.
pub const HELD_UNDER_MS: f64 = 10.0;

/// Two medians over [`HELD_UNDER_MS`] held when the larger is at most this many times the
/// smaller.
pub const HELD_RATIO: f64 = 1.5;

/// Whether a median held between two runs, and how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Held {
    /// Both runs measured it, and they agree: this run's median.
    Yes(f64),
    /// Both runs measured it, and they disagree.
    Varies,
    /// Only this run measured it (no run before, or one without measurements).
    OneRun,
    /// Nothing was measured.
    None,
}

impl Spread {
    /// The spread of these measurements (in any order); the median by nearest rank, as the
    /// reports' [`timing::Stats`] give it.
    pub fn of(values: &[f64]) -> Spread {
        let stats = timing::stats(values);
        Spread {
            count: stats.count,
            median_ms: stats.median_ms,
            worst_ms: stats.max_ms,
            previous_median_ms: None,
        }
    }

    /// Whether the median held between the run before and this one: both under
    /// [`HELD_UNDER_MS`], or within [`HELD_RATIO`] of each other.
    pub fn held(&self) -> Held {
        match (self.median_ms, self.previous_median_ms) {
            (None, _) => Held::None,
            (Some(_), None) => Held::OneRun,
            (Some(now), Some(before)) => {
                let (low, high) = (now.min(before), now.max(before));
                if high < HELD_UNDER_MS || high <= low * HELD_RATIO {
                    Held::Yes(now)
                } else {
                    Held::Varies
                }
            }
        }
    }
}

impl Latency {
    /// This run's latency, each median beside the one `before` (the same target's latency in
    /// the run before) had.
    pub fn after(mut self, before: &Latency) -> Latency {
        self.cancel_to_quiet.previous_median_ms = before.cancel_to_quiet.median_ms;
        self.cancel_to_proof.previous_median_ms = before.cancel_to_proof.median_ms;
        self.cancel_to_witness.previous_median_ms = before.cancel_to_witness.median_ms;
        self
    }
}

/// The latency of a run: every cancel of a request in flight, in every case that ran.
pub fn of_run(report: &RunReport) -> Latency {
    let cancels = || {
        report
            .cases
            .iter()
            .flat_map(|c| &c.timings.cancels)
            .filter(|c| c.in_flight)
    };
    let quiet: Vec<f64> = cancels().map(|c| c.quiet_ms).collect();
    let proof: Vec<f64> = cancels()
        .filter_map(|c| c.proof_ms.map(|proof| ms_after(c.at_ms, proof)))
        .collect();
    let witness: Vec<f64> = cancels()
        .filter_map(|c| c.witness_ms.map(|at| ms_after(c.at_ms, at)))
        .collect();
    Latency {
        cancel_to_quiet: Spread::of(&quiet),
        cancel_to_proof: Spread::of(&proof),
        cancel_to_witness: Spread::of(&witness),
    }
}
