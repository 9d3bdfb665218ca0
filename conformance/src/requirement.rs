//! Requirement ids as a type: [`Req`] has one variant per id of `cases/REQUIREMENTS.md`
//! (generated from it when the crate builds), so a finding cannot cite an id the index does not
//! have — a typo does not compile.

include!(concat!(env!("OUT_DIR"), "/requirements.rs"));

impl Req {
    /// The id written as in the index (`CAN-05`), if the index has it.
    pub fn parse(text: &str) -> Option<Req> {
        Req::ALL.iter().copied().find(|r| r.as_str() == text)
    }
}

impl std::fmt::Display for Req {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_reads_back_and_names_a_requirement() {
        assert!(Req::ALL.len() > 100, "the index lists every requirement");
        for req in Req::ALL {
            assert_eq!(Req::parse(req.as_str()), Some(*req));
            assert!(!req.title().is_empty(), "{req} has a title");
        }
        assert_eq!(Req::Can05.as_str(), "CAN-05");
        assert_eq!(Req::Ping01.to_string(), "PING-01");
        assert_eq!(Req::parse("CAN-99"), None);
    }
}
