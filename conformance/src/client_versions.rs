//! Which protocol versions a client run uses. A client cannot be asked beforehand what it
//! speaks, so each case runs at the versions it covers, as `--protocol-version` chooses:
//! `auto` (the default) the newest, `all` every one, a version only that one. The adapter is
//! told the version (`CONFORMANCE_PROTOCOL_VERSION`), the harness plays a server of it, and
//! a client that turns out not to speak it gets the case skipped with the reason.

use crate::case::Case;
use crate::era::ProtocolVersion;
use crate::versions::{Choice, Unit};

/// The runs of client cases for a choice of versions.
pub fn plan(cases: &[Case], choice: &Choice) -> Vec<Unit> {
    let mut units = vec![];
    for (index, case) in cases.iter().enumerate() {
        match choice {
            Choice::Auto => units.push(Unit {
                case: index,
                version: case.last_version(),
                skip: None,
            }),
            Choice::All => units.extend(case.versions.iter().map(|&version| Unit {
                case: index,
                version,
                skip: None,
            })),
            Choice::Exact(v) if case.versions.contains(v) => units.push(Unit {
                case: index,
                version: *v,
                skip: None,
            }),
            Choice::Exact(v) => units.push(Unit {
                case: index,
                version: *v,
                skip: Some(format!(
                    "the case applies to {}; this run is at {v}",
                    ProtocolVersion::joined(&case.versions)
                )),
            }),
        }
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(versions: &str) -> Case {
        let text = format!(
            "# i\n@requirement A\n@level must\n@versions {versions}\n@actions [{{\"exit\":true}}]\n> {{}}\n"
        );
        crate::case::parse("client/x", "x", &text).unwrap()
    }

    #[test]
    fn each_case_runs_at_the_versions_it_covers() {
        let cases = [case("handshake"), case("stateless")];
        let auto = plan(&cases, &Choice::Auto);
        let versions: Vec<&str> = auto.iter().map(|u| u.version.as_str()).collect();
        assert_eq!(versions, ["2025-11-25", "2026-07-28"]);
        assert_eq!(plan(&cases, &Choice::All).len(), 5);
        let exact = plan(&cases, &Choice::Exact(ProtocolVersion::V2026_07_28));
        assert!(exact[0]
            .skip
            .as_ref()
            .unwrap()
            .contains("applies to 2024-11-05"));
        assert!(exact[1].skip.is_none());
    }
}
