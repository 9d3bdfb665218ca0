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
    let mut files = vec![];
    walk(dir, &mut files);
    files.sort();
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
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string());
        (id, path.display().to_string(), text)
    }))
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
    files: impl Iterator<Item = (String, String, Result<String, String>)>,
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
pub fn bless(case: &Case, replacements: &[(usize, String)]) -> std::io::Result<()> {
    let text = case::rewrite_lines(&case.source, replacements);
    let path = Path::new(&case.path);
    let tmp = path.with_extension("mcpt.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
