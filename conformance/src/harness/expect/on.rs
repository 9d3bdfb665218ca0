//! What a finding a table row names rests on: a requirement of the index, typed ([`Req`]), or
//! one of the kinds of finding that cite none. A row names it as a value, not as text, so a
//! typo does not compile — in [`without`](super::Expect::without), where a misspelt id would
//! match nothing and let every run through, as much as in [`fails`](super::Expect::fails).

use crate::outcome::FindingKind;
use crate::requirement::Req;
use std::fmt;

/// What a finding rests on, as a row of a table names it (`Req::Can05`, or `On::Case`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum On {
    /// A requirement of the index.
    Rule(Req),
    /// The case's own expectations: a mismatch, something that did not happen, a case bug
    /// (reports say `case`).
    Case,
    /// A client adapter's contract (`adapter`).
    Adapter,
    /// A limit of the harness the target went past (`limit`).
    Limit,
    /// What an info case saw the target do (`observed`).
    Observed,
}

impl On {
    /// Whether a finding of `kind` rests on this.
    pub fn holds_for(self, kind: FindingKind) -> bool {
        match self {
            On::Rule(req) => kind == FindingKind::Rule(req),
            On::Case => kind.is_expectation(),
            On::Adapter => kind == FindingKind::Adapter,
            On::Limit => kind == FindingKind::Limit,
            On::Observed => kind == FindingKind::Observed,
        }
    }
}

impl From<Req> for On {
    fn from(req: Req) -> On {
        On::Rule(req)
    }
}

/// As reports write it ([`FindingKind::label`]): `CAN-05`, `case`, `limit`…
impl fmt::Display for On {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            On::Rule(req) => req.as_str(),
            On::Case => "case",
            On::Adapter => "adapter",
            On::Limit => "limit",
            On::Observed => "observed",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_names_the_findings_reports_label_so() {
        let kinds = [
            FindingKind::Rule(Req::Can05),
            FindingKind::Rule(Req::Std01),
            FindingKind::Mismatch,
            FindingKind::Unmet,
            FindingKind::CaseBug,
            FindingKind::Adapter,
            FindingKind::Limit,
            FindingKind::Observed,
        ];
        let ons = [
            On::Rule(Req::Can05),
            On::Rule(Req::Std01),
            On::Case,
            On::Adapter,
            On::Limit,
            On::Observed,
        ];
        for on in ons {
            for kind in kinds {
                assert_eq!(
                    on.holds_for(kind),
                    on.to_string() == kind.label(),
                    "{on} against {kind:?}"
                );
            }
        }
        assert!(!On::Rule(Req::Can05).holds_for(FindingKind::Rule(Req::Can04)));
    }
}
