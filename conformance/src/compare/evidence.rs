//! The written evidence behind each finding (`targets/evidence.md`): why a failure or warning
//! is the target's fault, from its transcript and its SDK's source. A finding without evidence
//! is a claim nobody checked, so the comparison's test fails on one; this reads the file into
//! sections keyed by case and target.
//!
//! A section is a `## ` heading that opens with the case ids it explains (separated by `, `,
//! ended by `:`), then a line `Targets: `a`, `b`` naming the targets it covers (target file
//! names, `.json` optional), optionally a line `Requirement: CAN-05` when the section explains
//! only the findings of that requirement, then one line that says the finding and its cause
//! (the tables show it), then anything. One cause often shows in several cases and targets; it is
//! written once.

use std::fmt;

/// One section of the evidence file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The cases it explains (their ids without `server/` or `client/`).
    pub cases: Vec<String>,
    /// The targets it covers.
    pub targets: Vec<String>,
    /// The requirement of the findings it explains, when only those of one.
    pub requirement: Option<String>,
    /// The one line the tables show.
    pub summary: String,
    /// The heading's anchor (as GitHub and mdBook make it).
    pub anchor: String,
    /// The heading's line (from 1).
    pub line: usize,
}

/// The evidence file, read.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// Its sections, in order.
    pub sections: Vec<Section>,
}

impl Evidence {
    /// The section that explains a finding of `requirement` in `case` on `target`, if one
    /// does.
    pub fn find(&self, target: &str, case: &str, requirement: Option<&str>) -> Option<&Section> {
        self.sections.iter().find(|s| {
            s.cases.iter().any(|c| c == case)
                && s.targets.iter().any(|t| t == target)
                && (s.requirement.is_none() || s.requirement.as_deref() == requirement)
        })
    }
}

/// A line of the evidence file that does not follow its format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceError {
    /// The line (from 1).
    pub line: usize,
    /// What is wrong, and what to write.
    pub message: String,
}

impl fmt::Display for EvidenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Reads the evidence file's text.
pub fn parse(text: &str) -> Result<Evidence, EvidenceError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut sections = vec![];
    for (index, line) in lines.iter().enumerate() {
        if let Some(heading) = line.strip_prefix("## ") {
            sections.push(section(heading, index, &lines)?);
        }
    }
    Ok(Evidence { sections })
}

fn section(heading: &str, index: usize, lines: &[&str]) -> Result<Section, EvidenceError> {
    let cases: Vec<String> = heading
        .split(':')
        .next()
        .unwrap_or_default()
        .split(", ")
        .map(|c| c.trim().to_string())
        .collect();
    let mut rest = lines
        .iter()
        .enumerate()
        .skip(index + 1)
        .filter(|(_, l)| !l.trim().is_empty());
    let error = |line: usize, message: String| EvidenceError {
        line: line + 1,
        message,
    };
    let (at, targets_line) = rest.next().ok_or_else(|| {
        error(
            index,
            format!("`## {heading}` has no `Targets:` line under it"),
        )
    })?;
    let targets = targets_line
        .strip_prefix("Targets:")
        .map(|list| {
            list.split('`')
                .skip(1)
                .step_by(2)
                .map(|t| t.trim_end_matches(".json").to_string())
                .collect::<Vec<_>>()
        })
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            error(
                at,
                "the line after a `## case` heading must be `Targets: `file.json`, …` (the target files it explains)".into(),
            )
        })?;
    let mut next = rest.next();
    let requirement = next
        .and_then(|(_, l)| l.strip_prefix("Requirement:"))
        .map(|r| r.trim().to_string());
    if requirement.is_some() {
        next = rest.next();
    }
    let (at, summary) = next.ok_or_else(|| {
        error(
            at,
            "a section needs one line under `Targets:` saying the finding and its cause".into(),
        )
    })?;
    if summary.starts_with('#') {
        return Err(error(at, "a section needs one line under `Targets:` saying the finding and its cause, before the next heading".into()));
    }
    Ok(Section {
        cases,
        targets,
        requirement,
        summary: summary.trim().to_string(),
        anchor: anchor(heading),
        line: index + 1,
    })
}

/// A heading's anchor: lower case, spaces as `-`, only letters, digits, `-` and `_` kept.
pub fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}
