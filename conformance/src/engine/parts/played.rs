//! What a run plays: the case and the options it is carried out with. Both are fixed for
//! the whole run; the engine only reads them, and what follows from them (how much a broken
//! expectation weighs, the case's time limit, the version asked for) is worked out here.

use crate::case::Case;
use crate::engine::Options;
use crate::era::ProtocolVersion;
use crate::fixtures::Role;
use crate::outcome::Severity;
use std::time::Duration;

/// The case of a run and its options, read-only.
#[derive(Debug, Clone, Copy)]
pub struct Played<'a> {
    case: &'a Case,
    options: &'a Options,
}

impl<'a> Played<'a> {
    /// `case`, carried out with `options`.
    pub fn new(case: &'a Case, options: &'a Options) -> Self {
        Played { case, options }
    }

    /// The case played.
    pub fn case(&self) -> &'a Case {
        self.case
    }

    /// How it is carried out.
    pub fn options(&self) -> &'a Options {
        self.options
    }

    /// Whether the target's tools are known to have nothing that plays fixture role `role`
    /// (a target that implements the fixture profile itself lacks none).
    pub fn lacks_fixture(&self, role: Role) -> bool {
        self.options.fixtures.as_ref().is_some_and(|f| !f.has(role))
    }

    /// How much a broken expectation of the case weighs.
    pub fn severity(&self) -> Severity {
        Severity::of_level(self.case.level)
    }

    /// The case's time limit: its own or `--timeout`.
    pub fn limit(&self) -> Duration {
        self.case.timeout.unwrap_or(self.options.case_timeout)
    }

    /// The version the run uses: the one `agreed`, or else the one asked for.
    pub fn protocol(&self, agreed: Option<&str>) -> Option<ProtocolVersion> {
        match agreed {
            Some(agreed) => ProtocolVersion::parse(agreed),
            None => Some(self.options.protocol_version),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Level;

    fn case(head: &str) -> Case {
        let text = format!("# intent\n@requirement CAN-05\n{head}> {{}}\n");
        crate::case::parse("server/x", "x.mcpt", &text).unwrap()
    }

    #[test]
    fn the_case_sets_its_limit_and_weight_or_the_options_do() {
        let options = Options::default();
        let plain = case("@level must\n");
        let played = Played::new(&plain, &options);
        assert_eq!(played.limit(), options.case_timeout);
        assert_eq!(played.severity(), Severity::of_level(plain.level));
        let own = case("@level should\n@timeout 3s\n");
        let played = Played::new(&own, &options);
        assert_eq!(played.limit(), Duration::from_secs(3));
        assert_eq!(own.level, Level::Should);
        assert_eq!(played.severity(), Severity::Warn);
    }

    #[test]
    fn only_a_mapping_of_the_fixtures_can_lack_one() {
        let plain = case("@level must\n");
        let options = Options::default();
        assert!(!Played::new(&plain, &options).lacks_fixture(Role::Cancellations));
        let mut fixtures = crate::fixtures::Fixtures::default();
        fixtures.roles.insert(Role::Cancellations, None);
        let mapped = Options {
            fixtures: Some(fixtures),
            ..Options::default()
        };
        let played = Played::new(&plain, &mapped);
        assert!(played.lacks_fixture(Role::Cancellations));
        assert!(
            played.lacks_fixture(Role::Sleep),
            "a role not in the map is absent"
        );
    }

    #[test]
    fn the_version_agreed_comes_before_the_one_asked_for() {
        let options = Options::default();
        let plain = case("@level must\n");
        let played = Played::new(&plain, &options);
        assert_eq!(played.protocol(None), ProtocolVersion::parse("2025-11-25"));
        assert_eq!(
            played.protocol(Some("2024-11-05")),
            ProtocolVersion::parse("2024-11-05")
        );
    }
}
