//! What the target is proven to have read, and the harness's own request ids.
//!
//! On an ordered transport an answer to one of the harness's requests proves the target read
//! everything sent before it: the proof is a transcript index below which every message of
//! the harness's is read, the time the proof arrived, and how long the target had waited for
//! a CPU by then (a grace after the proof grows by what it waits afterwards). The shortest
//! round trip seen sets the calm grace: four of them, at least [`MIN_GRACE`].

use std::time::Duration;

/// The least time a message may still take after what caused it was proven read.
pub const MIN_GRACE: Duration = Duration::from_millis(250);

/// The proofs of one run.
#[derive(Debug, Default)]
pub struct Proofs {
    /// Every message the harness sent before this transcript index is proven read.
    proven: usize,
    /// When that proof arrived (since the target started).
    at: Option<Duration>,
    /// How long the target had waited for a CPU when it arrived.
    waited: Option<Duration>,
    /// The transcript index of the last probe sent, if any.
    probing: Option<usize>,
    /// The shortest round trip of the harness's requests.
    rtt: Option<Duration>,
    /// Numbers the harness's own request ids.
    counter: u32,
}

impl Proofs {
    /// Everything sent before transcript index `before` is proven read, by a proof that
    /// arrived `at` when the target had waited `waited` for a CPU. A proof never moves back.
    pub fn proved(&mut self, before: usize, at: Duration, waited: Option<Duration>) {
        if before > self.proven {
            self.proven = before;
            self.at = Some(at);
            self.waited = waited;
        }
    }

    /// When the message at transcript index `index` was proven read, if it was.
    pub fn read_at(&self, index: usize) -> Option<Duration> {
        (index < self.proven).then_some(self.at).flatten()
    }

    /// The index below which everything is proven read.
    pub fn proven(&self) -> usize {
        self.proven
    }

    /// How long the target had waited for a CPU when the last proof came.
    pub fn waited(&self) -> Option<Duration> {
        self.waited
    }

    /// A probe was sent at transcript index `index`.
    pub fn probe_sent(&mut self, index: usize) {
        self.probing = Some(index);
    }

    /// Whether a probe sent after transcript index `index` is on its way.
    pub fn probing_after(&self, index: usize) -> bool {
        self.probing.is_some_and(|p| p > index)
    }

    /// A round trip took `took`.
    pub fn round_trip(&mut self, took: Duration) {
        self.rtt = Some(self.rtt.map_or(took, |r| r.min(took)));
    }

    /// The shortest round trip seen.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt
    }

    /// The grace on a calm machine over an ordered transport: the larger of [`MIN_GRACE`]
    /// and four round trips.
    pub fn calm_grace(&self) -> Duration {
        MIN_GRACE.max(self.rtt.unwrap_or_default() * 4)
    }

    /// A fresh id for one of the harness's own requests: `prefix-N`.
    pub fn next_id(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}-{}", self.counter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_covers_what_came_before_it_and_never_moves_back() {
        let mut p = Proofs::default();
        assert_eq!(p.read_at(0), None);
        p.proved(5, Duration::from_millis(40), Some(Duration::from_millis(3)));
        assert_eq!(p.read_at(4), Some(Duration::from_millis(40)));
        assert_eq!(p.read_at(5), None, "the proof itself is not before it");
        p.proved(3, Duration::from_millis(90), None);
        assert_eq!(p.proven(), 5);
        assert_eq!(p.waited(), Some(Duration::from_millis(3)));
    }

    #[test]
    fn the_calm_grace_is_four_round_trips_at_least_250_ms() {
        let mut p = Proofs::default();
        assert_eq!(p.calm_grace(), MIN_GRACE);
        p.round_trip(Duration::from_millis(100));
        p.round_trip(Duration::from_millis(300));
        assert_eq!(p.rtt(), Some(Duration::from_millis(100)));
        assert_eq!(p.calm_grace(), Duration::from_millis(400));
    }

    #[test]
    fn ids_and_probes() {
        let mut p = Proofs::default();
        assert_eq!(p.next_id("barrier"), "barrier-1");
        assert_eq!(p.next_id("probe"), "probe-2");
        p.probe_sent(7);
        assert!(p.probing_after(6) && !p.probing_after(7));
    }
}
