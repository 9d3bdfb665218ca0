//! The size budget the code keeps: a source file of any crate's `src/` stays within
//! [`FILE_LINES`] lines, so a module keeps one job a reader can hold (modules aim for about
//! 400 lines; the budget leaves room for a doc comment and a test or two). The length of a
//! function is clippy's to hold (`too_many_lines`, `clippy.toml`), and CI denies its warnings.

use std::path::{Path, PathBuf};

/// The most lines a source file may have.
const FILE_LINES: usize = 450;

/// The crates whose sources the budget covers.
const CRATES: [&str; 4] = [
    "conformance",
    "reference-server",
    "reference-client",
    "reference-wire",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The files over budget, each with its length.
fn over_budget(root: &Path) -> Vec<String> {
    let mut over = vec![];
    for krate in CRATES {
        let mut files = vec![];
        sources(&root.join(krate).join("src"), &mut files);
        for file in files {
            let lines = std::fs::read_to_string(&file)
                .expect("a readable source")
                .lines()
                .count();
            if lines > FILE_LINES {
                let shown = file.strip_prefix(root).unwrap_or(&file).display();
                over.push(format!("{shown}: {lines} lines"));
            }
        }
    }
    over.sort();
    over
}

#[test]
fn every_source_file_keeps_the_size_budget() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let over = over_budget(&root);
    assert!(
        over.is_empty(),
        "source files over the budget of {FILE_LINES} lines (split a module by job: its doc comment says what the job is):\n{}",
        over.join("\n")
    );
}

#[test]
fn a_file_over_budget_is_named() {
    let root = std::env::temp_dir().join(format!("budget-{}", std::process::id()));
    let src = root.join("conformance/src/deep");
    std::fs::create_dir_all(&src).expect("a scratch folder");
    std::fs::write(src.join("long.rs"), "//\n".repeat(FILE_LINES + 1)).expect("a file");
    std::fs::write(src.join("short.rs"), "//\n".repeat(FILE_LINES)).expect("a file");
    for krate in &CRATES[1..] {
        std::fs::create_dir_all(root.join(krate).join("src")).expect("a scratch folder");
    }
    let over = over_budget(&root);
    std::fs::remove_dir_all(&root).expect("scratch removed");
    assert_eq!(over, ["conformance/src/deep/long.rs: 451 lines"]);
}
