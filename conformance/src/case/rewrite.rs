//! Blessing rewrites single lines of a case file and keeps every other byte as it was.

/// Replaces the text of some lines, keeping every other byte of the file as it was.
/// `replacements` holds (1-based line, new text without the newline).
pub fn rewrite_lines(source: &str, replacements: &[(usize, String)]) -> String {
    let mut out = String::with_capacity(source.len());
    for (index, raw) in source.split_inclusive('\n').enumerate() {
        match replacements
            .iter()
            .rev()
            .find(|(line, _)| *line == index + 1)
        {
            Some((_, text)) => {
                out.push_str(text);
                if raw.ends_with("\r\n") {
                    out.push_str("\r\n");
                } else if raw.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(raw),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrite_is_lossless() {
        let text = "# a\r\n< {\"x\":1}\n\n< {}";
        assert_eq!(rewrite_lines(text, &[]), text);
        assert_eq!(
            rewrite_lines(text, &[(2, "< {\"x\":2}".into()), (4, "< []".into())]),
            "# a\r\n< {\"x\":2}\n\n< []"
        );
    }
}
