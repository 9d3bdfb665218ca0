//! The expected side of a case's diff: the case's lines as carried out (each `>` the harness
//! sent, each `<` it expected, with variables filled in), and the replacements that blessing
//! writes back for expected lines that did not match. The transcript is the other side.

/// The expected side of one run's diff.
#[derive(Debug, Default)]
pub struct Diff {
    /// The lines, in the order carried out.
    lines: Vec<String>,
    /// Replacements for blessing: (case line, new text).
    bless: Vec<(usize, String)>,
}

impl Diff {
    /// Adds a line; returns its index, to replace it once more is known.
    pub fn push(&mut self, line: String) -> usize {
        self.lines.push(line);
        self.lines.len() - 1
    }

    /// The index of the last line added, if any.
    pub fn last(&self) -> Option<usize> {
        self.lines.len().checked_sub(1)
    }

    /// Replaces the line at `at` (a line added earlier, now shown as it turned out).
    pub fn replace(&mut self, at: usize, line: String) {
        if let Some(old) = self.lines.get_mut(at) {
            *old = line;
        }
    }

    /// Replaces the last line added.
    pub fn replace_last(&mut self, line: String) {
        if let Some(at) = self.last() {
            self.replace(at, line);
        }
    }

    /// Case line `line` should read `text` (when the case is blessed).
    pub fn bless(&mut self, line: usize, text: String) {
        self.bless.push((line, text));
    }

    /// The lines and the replacements, for the report.
    pub fn into_parts(self) -> (Vec<String>, Vec<(usize, String)>) {
        (self.lines, self.bless)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_order_and_can_be_replaced_by_index() {
        let mut diff = Diff::default();
        assert_eq!(diff.last(), None);
        diff.replace_last("nothing to replace".into());
        let first = diff.push("> a".into());
        let second = diff.push("< b".into());
        assert_eq!((first, second, diff.last()), (0, 1, Some(1)));
        diff.replace(first, "> A".into());
        diff.replace_last("< B".into());
        diff.replace(7, "out of range: ignored".into());
        diff.bless(3, "< {\"x\":1}".into());
        let (lines, bless) = diff.into_parts();
        assert_eq!(lines, ["> A", "< B"]);
        assert_eq!(bless, [(3, "< {\"x\":1}".to_string())]);
    }
}
