//! The findings of one run: what went wrong (or was only noted), each once, in the order
//! noticed, and bounded however much the target floods.
//!
//! The same finding again (same severity, kind, case line and message) only counts one more
//! time. Past [`KEPT`] different findings of one severity and kind, further ones are counted
//! in one finding that says so: a target that makes up a response for every id it can think
//! of cannot make the findings grow without bound, and the verdict, which rests on the worst
//! severity, is the same.

use crate::outcome::{Doubt, Finding, FindingKind, Severity};
use crate::requirement::Req;
use std::collections::HashMap;

/// How many different findings of one severity and kind a case keeps; more are counted in one.
pub const KEPT: usize = 100;

/// What makes two findings the same one.
type Key = (Severity, FindingKind, usize, String);

/// The findings of a run, with their index.
#[derive(Debug, Default)]
pub struct Findings {
    list: Vec<Finding>,
    /// Where each finding is in `list`, by what makes it the same finding.
    index: HashMap<Key, usize>,
    /// How many different findings of each severity and kind are kept.
    kinds: HashMap<(Severity, FindingKind), usize>,
}

impl Findings {
    /// Records a finding at case line `line`.
    pub fn add(&mut self, severity: Severity, kind: FindingKind, line: usize, message: String) {
        self.add_doubting(severity, kind, line, message, None);
    }

    /// Records a finding at case line `line` that may carry a [`Doubt`].
    pub fn add_doubting(
        &mut self,
        severity: Severity,
        kind: FindingKind,
        line: usize,
        message: String,
        doubt: Option<Doubt>,
    ) {
        if self.again(&(severity, kind, line, message.clone())) {
            return;
        }
        let distinct = self.kinds.entry((severity, kind)).or_default();
        let message = if *distinct >= KEPT {
            format!(
                "and more findings of this kind, counted and not kept one by one (the harness keeps {KEPT} different ones of each kind per case)"
            )
        } else {
            *distinct += 1;
            message
        };
        let key = (severity, kind, line, message);
        if self.again(&key) {
            return;
        }
        self.index.insert(key.clone(), self.list.len());
        let (severity, kind, line, message) = key;
        self.list.push(Finding {
            severity,
            line,
            kind,
            message,
            times: 1,
            doubt,
        });
    }

    /// Counts a finding seen before once more; whether it was.
    fn again(&mut self, key: &Key) -> bool {
        match self.index.get(key) {
            Some(&same) => {
                self.list[same].times += 1;
                true
            }
            None => false,
        }
    }

    /// The findings, in the order noticed.
    pub fn list(&self) -> &[Finding] {
        &self.list
    }

    /// Whether a finding rests on requirement `requirement`.
    pub fn cites(&self, requirement: Req) -> bool {
        self.list
            .iter()
            .any(|f| f.kind == FindingKind::Rule(requirement))
    }

    /// Whether any finding weighs more than a note.
    pub fn any_judged(&self) -> bool {
        self.list.iter().any(|f| f.severity > Severity::Note)
    }

    /// The findings, for the report.
    pub fn into_list(self) -> Vec<Finding> {
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_finding_counts_again_and_another_is_kept() {
        let mut f = Findings::default();
        f.add(
            Severity::Fail,
            FindingKind::Rule(Req::Rpc04),
            3,
            "dup".into(),
        );
        f.add(
            Severity::Fail,
            FindingKind::Rule(Req::Rpc04),
            3,
            "dup".into(),
        );
        f.add(
            Severity::Fail,
            FindingKind::Rule(Req::Rpc04),
            4,
            "dup".into(),
        );
        f.add(
            Severity::Warn,
            FindingKind::Rule(Req::Rpc04),
            3,
            "dup".into(),
        );
        assert_eq!(f.list().len(), 3);
        assert_eq!(f.list()[0].times, 2);
        assert!(f.cites(Req::Rpc04) && !f.cites(Req::Can05));
        assert!(f.any_judged());
    }

    #[test]
    fn a_flood_of_different_findings_is_bounded_per_kind() {
        let mut f = Findings::default();
        for n in 0..(KEPT + 50) {
            f.add(
                Severity::Fail,
                FindingKind::Rule(Req::Rpc04),
                0,
                format!("id {n}"),
            );
        }
        f.add(Severity::Note, FindingKind::Limit, 0, "a note".into());
        assert_eq!(
            f.list().len(),
            KEPT + 2,
            "the kept ones, the count of the rest, the note"
        );
        let rest = &f.list()[KEPT];
        assert!(rest.message.starts_with("and more findings"));
        assert_eq!(rest.times, 50);
        assert!(!Findings::default().any_judged());
    }
}
