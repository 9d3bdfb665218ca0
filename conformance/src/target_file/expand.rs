//! `${VAR}` in target files, so that one file works wherever the repository and the installed
//! servers are: `${VAR}` is the environment variable `VAR`, `${VAR:-default}` its value or,
//! when it is unset or empty, the default (which may hold `${…}` in turn), and `$${` a
//! literal `${`. Nothing else is special: a lone `$` stays as it is, and `{port}` is the
//! harness's own placeholder, filled later.

/// A variable an expansion read: its name, and its value (`None` when it was unset or empty,
/// so a default applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Used {
    /// The variable's name.
    pub name: String,
    /// Its value, `None` when unset or empty.
    pub value: Option<String>,
}

/// A `${…}` that cannot be expanded; each message says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// A `${` with no `}` to close it.
    #[error("`{written}` opens `${{` without a closing `}}` (write `$${{` for a literal `${{`)")]
    Unclosed {
        /// The text from the `${` on.
        written: String,
    },
    /// A `${…}` whose name is no variable name.
    #[error("`{written}` names no variable: write `${{NAME}}` or `${{NAME:-default}}`, NAME being letters, digits and `_`")]
    NoName {
        /// The whole `${…}`.
        written: String,
    },
    /// A `${NAME}` without a default whose variable is unset or empty.
    #[error("`${{{name}}}` is not set; set {name}, or give a default: `${{{name}:-…}}`")]
    Unset {
        /// The variable.
        name: String,
    },
}

/// Expands `text`, reading variables through `lookup`. Returns the text and the variables
/// read, in order; an error names the `${…}` that was wrong and what to write instead.
pub fn expand(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, Vec<Used>), ExpandError> {
    let mut out = String::new();
    let mut used = vec![];
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if tail.starts_with("${") {
            let end = closing(tail).ok_or_else(|| ExpandError::Unclosed {
                written: tail.to_string(),
            })?;
            let inner = &tail[2..end];
            let (name, default) = match inner.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (inner, None),
            };
            if !is_name(name) {
                return Err(ExpandError::NoName {
                    written: tail[..=end].to_string(),
                });
            }
            let value = lookup(name).filter(|v| !v.is_empty());
            used.push(Used {
                name: name.to_string(),
                value: value.clone(),
            });
            match (value, default) {
                (Some(value), _) => out.push_str(&value),
                (None, Some(default)) => {
                    let (text, inner_used) = expand(default, lookup)?;
                    out.push_str(&text);
                    used.extend(inner_used);
                }
                (None, None) => {
                    return Err(ExpandError::Unset {
                        name: name.to_string(),
                    })
                }
            }
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok((out, used))
}

/// Whether an element of `command` is a path built on a variable: it starts with `${…}`
/// followed by `/` (such as `${CONFORMANCE_TARGETS_DIR:-.install}/pysdk/venv/bin/python`).
pub fn is_variable_path(text: &str) -> bool {
    text.starts_with("${") && closing(text).is_some_and(|end| text[end + 1..].starts_with('/'))
}

/// The index of the `}` that closes the `${` at the start of `text`, counting nested `${…}`.
fn closing(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 2;
    let bytes = text.as_bytes();
    while i < bytes.len() {
        if text[i..].starts_with("$${") {
            i += 3;
        } else if text[i..].starts_with("${") {
            depth += 1;
            i += 2;
        } else if bytes[i] == b'}' {
            if depth == 0 {
                return Some(i);
            }
            depth -= 1;
            i += 1;
        } else {
            i += 1;
        }
    }
    None
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/me".into()),
            "EMPTY" => Some(String::new()),
            "DIR" => Some("/opt/targets".into()),
            _ => None,
        }
    }

    fn text(input: &str) -> Result<String, String> {
        expand(input, &env)
            .map(|(text, _)| text)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn variables_and_defaults() {
        assert_eq!(text("${HOME}/bin/srv").unwrap(), "/home/me/bin/srv");
        assert_eq!(text("${NOPE:-.install}/srv").unwrap(), ".install/srv");
        assert_eq!(text("${DIR:-.install}/srv").unwrap(), "/opt/targets/srv");
        // Empty counts as unset, as `:-` does in a shell.
        assert_eq!(text("${EMPTY:-x}").unwrap(), "x");
        // A default may itself use a variable.
        assert_eq!(text("${NOPE:-${HOME}/t}/srv").unwrap(), "/home/me/t/srv");
        assert_eq!(text("${NOPE:-}").unwrap(), "");
        assert_eq!(text("a${HOME}b${DIR}c").unwrap(), "a/home/meb/opt/targetsc");
    }

    #[test]
    fn what_is_not_a_variable_stays() {
        assert_eq!(text("PORT={port}").unwrap(), "PORT={port}");
        assert_eq!(text("cost $5 and $HOME").unwrap(), "cost $5 and $HOME");
        assert_eq!(text("$${HOME}").unwrap(), "${HOME}");
        assert_eq!(text("${NOPE:-$${x}}").unwrap(), "${x}");
        assert_eq!(text("end $").unwrap(), "end $");
    }

    #[test]
    fn records_what_it_read() {
        let (_, used) = expand("${NOPE:-${HOME}}/${DIR}", &env).unwrap();
        let names: Vec<(&str, bool)> = used
            .iter()
            .map(|u| (u.name.as_str(), u.value.is_some()))
            .collect();
        assert_eq!(names, [("NOPE", false), ("HOME", true), ("DIR", true)]);
    }

    #[test]
    fn errors_say_what_to_write() {
        let unset = text("${NOPE}/srv").unwrap_err();
        assert!(unset.contains("`${NOPE}` is not set"), "{unset}");
        assert!(unset.contains("${NOPE:-…}"), "{unset}");
        let open = text("${HOME/srv").unwrap_err();
        assert!(open.contains("without a closing"), "{open}");
        let bad = text("${1X}").unwrap_err();
        assert!(bad.contains("`${1X}` names no variable"), "{bad}");
        assert!(text("${}").unwrap_err().contains("names no variable"));
    }

    #[test]
    fn variable_paths() {
        assert!(is_variable_path("${CONFORMANCE_TARGETS_DIR:-.install}/x"));
        assert!(is_variable_path("${A:-${B}}/x"));
        assert!(!is_variable_path("${A}x"));
        assert!(!is_variable_path("--token=${A}"));
        assert!(!is_variable_path("/abs/${A}/x"));
    }
}
