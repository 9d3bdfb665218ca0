//! Expected-failure baselines, for projects that gate every change on the harness while some
//! cases still fail: listed failures do not fail the run, and a listed case that passes again
//! fails the run as stale, so the list only ever shrinks.

use crate::error::BaselineError;
use std::path::Path;

/// A baseline file: case ids, one a line, `#` comments and blank lines allowed.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    /// The file, for messages.
    pub path: String,
    /// (line, case id)
    pub entries: Vec<(usize, String)>,
}

impl Baseline {
    /// Reads a baseline file.
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|source| BaselineError {
            path: path.display().to_string(),
            source,
        })?;
        Ok(Baseline::parse(&path.display().to_string(), &text))
    }

    /// Parses baseline text.
    pub fn parse(path: &str, text: &str) -> Baseline {
        let entries = text
            .lines()
            .enumerate()
            .filter_map(|(i, line)| {
                let id = line.split('#').next().unwrap_or("").trim();
                (!id.is_empty()).then(|| (i + 1, id.to_string()))
            })
            .collect();
        Baseline {
            path: path.to_string(),
            entries,
        }
    }

    /// The line that lists `id`, if any.
    pub fn line_of(&self, id: &str) -> Option<usize> {
        self.entries
            .iter()
            .find(|(_, e)| e == id)
            .map(|(line, _)| *line)
    }
}

/// The text of a baseline listing `failing` case ids.
pub fn render(failing: &[&str], target: &str) -> String {
    let mut out = format!(
        "# Cases known to fail against {target}.\n# Listed failures do not fail the run; delete a line once its case passes.\n"
    );
    for id in failing {
        out.push_str(id);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_blanks_are_skipped() {
        let b = Baseline::parse("b.txt", "# head\n\nserver/a  # flaky\n  server/b\n");
        assert_eq!(
            b.entries,
            [(3, "server/a".to_string()), (4, "server/b".to_string())]
        );
        assert_eq!(b.line_of("server/b"), Some(4));
        assert_eq!(b.line_of("server/c"), None);
    }

    #[test]
    fn render_round_trips() {
        let text = render(&["server/x", "server/y"], "srv");
        let ids: Vec<_> = Baseline::parse("b", &text)
            .entries
            .into_iter()
            .map(|(_, id)| id)
            .collect();
        assert_eq!(ids, ["server/x", "server/y"]);
    }
}
