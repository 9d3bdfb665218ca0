//! Finding cases: the folder given with `--cases`, or the copy embedded in the binary.

use crate::case::{self, Case, CaseError};
use std::path::{Path, PathBuf};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_cases.rs"));
}

/// Where the cases came from; blessing needs real files.
#[derive(Debug, Clone)]
pub enum Source {
    /// Built into the binary.
    Embedded,
    /// A folder on disk.
    Dir(PathBuf),
}

/// Parses every embedded case.
pub fn embedded() -> Result<Vec<Case>, Vec<CaseError>> {
    gather(embedded::CASES.iter().map(|(id, text)| {
        (
            id.to_string(),
            format!("cases/{id}.mcpt"),
            Ok(text.to_string()),
        )
    }))
}

/// Parses every `*.mcpt` file below `dir`. Ids are paths below `dir` without the extension.
pub fn from_dir(dir: &Path) -> Result<Vec<Case>, Vec<CaseError>> {
    let files = case_files(dir);
    if files.is_empty() {
        return Err(vec![CaseError {
            path: dir.display().to_string(),
            line: 0,
            message: "no `*.mcpt` case files here; point --cases at a cases folder".into(),
        }]);
    }
    gather(files.into_iter().map(|path| {
        let id = path.strip_prefix(dir).unwrap_or(&path).with_extension("");
        let id = id.to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(&path);
        (id, path.display().to_string(), text)
    }))
}

/// The `*.mcpt` files below `dir`, sorted.
pub fn case_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![];
    walk(dir, &mut files);
    files.sort();
    files
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "mcpt") {
            out.push(path);
        }
    }
}

fn gather(
    files: impl Iterator<Item = (String, String, std::io::Result<String>)>,
) -> Result<Vec<Case>, Vec<CaseError>> {
    let mut cases = vec![];
    let mut errors = vec![];
    for (id, path, text) in files {
        match text {
            Ok(text) => match case::parse(&id, &path, &text) {
                Ok(case) => cases.push(case),
                Err(e) => errors.push(e),
            },
            Err(e) => errors.push(CaseError {
                path,
                line: 0,
                message: format!("cannot read: {e}"),
            }),
        }
    }
    if errors.is_empty() {
        Ok(cases)
    } else {
        Err(errors)
    }
}

/// Keeps the cases whose id contains `filter` (all when it is empty).
pub fn select(cases: Vec<Case>, filter: &str) -> Vec<Case> {
    cases
        .into_iter()
        .filter(|c| c.id.contains(filter))
        .collect()
}

/// Rewrites the `<` lines of a case file that a run replaced, atomically (a temporary file in
/// the same folder, then a rename). Nothing else in the file changes.
///
/// A case may be blessed by several runs of one invocation (one per protocol version, or
/// parallel test trials), so the file is read again under a process-wide lock and each line
/// is rewritten only where it still holds what the case was loaded with, or already holds the
/// new text. A line that an earlier run rewrote to something else is a conflict: the runs
/// disagree about what the line should say, and nothing is written (make the line a pattern
/// that covers both, or give the versions cases of their own).
pub fn bless(case: &Case, replacements: &[(usize, String)]) -> std::io::Result<()> {
    static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    let path = Path::new(&case.path);
    let current = std::fs::read_to_string(path)?;
    let original: Vec<&str> = case.source.split_inclusive('\n').collect();
    let now: Vec<&str> = current.split_inclusive('\n').collect();
    let line_text = |l: &str| l.trim_end_matches(['\n', '\r']).to_string();
    let mut wanted = vec![];
    for (line, text) in replacements {
        let index = line.wrapping_sub(1);
        let (Some(was), Some(is)) = (original.get(index), now.get(index)) else {
            return Err(conflict(case, *line, "the file no longer has that line"));
        };
        if line_text(is) == *text {
            continue;
        }
        if line_text(is) != line_text(was) {
            return Err(conflict(
                case,
                *line,
                &format!("another run already rewrote it to `{}`", line_text(is)),
            ));
        }
        wanted.push((*line, text.clone()));
    }
    if wanted.is_empty() {
        return Ok(());
    }
    let text = case::rewrite_lines(&current, &wanted);
    let tmp = path.with_extension(format!("mcpt.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

fn conflict(case: &Case, line: usize, why: &str) -> std::io::Error {
    std::io::Error::other(format!(
        "{}:{line} cannot be blessed: {why}; the runs (protocol versions) disagree about this line, so make it a pattern that covers them all",
        case.path
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case_in(dir: &Path, text: &str) -> Case {
        let path = dir.join("blessed.mcpt");
        std::fs::write(&path, text).unwrap();
        let mut case = case::parse("server/blessed", path.to_str().unwrap(), text).unwrap();
        case.path = path.to_string_lossy().into_owned();
        case
    }

    #[test]
    fn blessing_twice_agrees_and_a_disagreement_writes_nothing() {
        let dir = std::env::temp_dir().join(format!("conformance-bless-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = "# i\n@requirement A\n@level must\n> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n< {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1}}\n";
        let case = case_in(&dir, text);
        let new = r#"< {"jsonrpc":"2.0","id":1,"result":{}}"#.to_string();
        bless(&case, &[(5, new.clone())]).unwrap();
        // A second run of the same case (another version) that wants the same line: fine.
        bless(&case, &[(5, new.clone())]).unwrap();
        let blessed = std::fs::read_to_string(&case.path).unwrap();
        assert!(blessed.ends_with(&format!("{new}\n")), "{blessed}");
        // A run that wants something else for the line another run rewrote: refused.
        let other = r#"< {"jsonrpc":"2.0","id":1,"result":{"b":2}}"#.to_string();
        let err = bless(&case, &[(5, other)]).unwrap_err().to_string();
        assert!(err.contains("blessed.mcpt:5 cannot be blessed"), "{err}");
        assert_eq!(std::fs::read_to_string(&case.path).unwrap(), blessed);
        assert!(bless(&case, &[(0, new)]).is_err(), "line 0 is no line");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
