//! How fast a target goes quiet after a cancel, over every case and version of a run: the
//! distribution (median and worst) an SDK author compares before and after a release. The
//! figures are the ones each case's report already carries (`timings.cancels`); this only
//! gathers them, so a number here can be traced to the transcript it came from.

use crate::report::json::RunReport;
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
}

impl Spread {
    /// The spread of these measurements (in any order).
    pub fn of(mut values: Vec<f64>) -> Spread {
        values.sort_by(f64::total_cmp);
        let median = (!values.is_empty()).then(|| values[(values.len() - 1) / 2]);
        Spread {
            count: values.len(),
            median_ms: median,
            worst_ms: values.last().copied(),
        }
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
    Latency {
        cancel_to_quiet: Spread::of(cancels().map(|c| c.quiet_ms).collect()),
        cancel_to_proof: Spread::of(
            cancels()
                .filter_map(|c| c.proof_ms.map(|proof| round((proof - c.at_ms).max(0.0))))
                .collect(),
        ),
        cancel_to_witness: Spread::of(
            cancels()
                .filter_map(|c| c.witness_ms.map(|at| round((at - c.at_ms).max(0.0))))
                .collect(),
        ),
    }
}

/// Milliseconds to a tenth, as the reports write them.
fn round(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}
