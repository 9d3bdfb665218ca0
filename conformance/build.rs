//! Embeds the cases into the binary, so an installed `conformance` needs no files, and makes
//! the requirement ids of `cases/REQUIREMENTS.md` a type (`Req`), so that a requirement the
//! code cites must exist there, or the crate does not compile.
//!
//! The cases live in the workspace's top-level `cases/`; `conformance/cases` is a link to it,
//! so a packaged crate (`cargo package`, `cargo install`) carries every case as plain files.
//! Finding no case is an error: a harness that embeds nothing would pass every target.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, root: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "mcpt") {
            let id = path.strip_prefix(root).unwrap().with_extension("");
            out.push((id.to_string_lossy().replace('\\', "/"), path));
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("cases");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut cases = vec![];
    collect(&root, &root, &mut cases);
    cases.sort();
    let servers = cases
        .iter()
        .filter(|(id, _)| id.starts_with("server/"))
        .count();
    let clients = cases
        .iter()
        .filter(|(id, _)| id.starts_with("client/"))
        .count();
    assert!(
        !(servers == 0 || clients == 0),
        "found {servers} server and {clients} client cases in {}: it must hold the cases \
         (cases/server/*.mcpt and cases/client/*.mcpt); in the workspace it is a link to the \
         top-level cases/ folder, so check that the link exists and git checked it out as a link",
        root.display()
    );
    let mut code = String::from("/// Every case file, as (id, text), sorted by id.\npub static CASES: &[(&str, &str)] = &[\n");
    for (id, path) in cases {
        let path = path.canonicalize().unwrap();
        writeln!(
            code,
            "    ({id:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("embedded_cases.rs"), code).unwrap();
    std::fs::write(out.join("requirements.rs"), requirements(&root)).unwrap();
}

/// `Req`: one variant per id in the index (`| RPC-02 ✓ | title | …` rows), with its text.
/// A generated match has one arm per requirement: its length is the index's, not a
/// function's that a person wrote.
const GENERATED_MATCH: &str =
    "    #[allow(clippy::too_many_lines, reason = \"one arm per requirement of the index\")]\n";

fn requirements(root: &Path) -> String {
    let index = root.join("REQUIREMENTS.md");
    let text = std::fs::read_to_string(&index)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", index.display()));
    let mut ids: Vec<(String, String)> = vec![];
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(first) = cells.get(1) else { continue };
        let id = first.trim_end_matches('✓').trim();
        let (family, number) = id.split_once('-').unwrap_or(("", ""));
        let valid = !family.is_empty()
            && family.bytes().all(|b| b.is_ascii_uppercase())
            && number.len() == 2
            && number.bytes().all(|b| b.is_ascii_digit());
        if !valid {
            continue;
        }
        assert!(
            !ids.iter().any(|(known, _)| known == id),
            "{}: requirement {id} is listed twice",
            index.display()
        );
        ids.push((id.to_string(), cells.get(2).unwrap_or(&"").to_string()));
    }
    assert!(
        !ids.is_empty(),
        "{}: no requirement ids found",
        index.display()
    );
    let variant = |id: &str| {
        let (family, number) = id.split_once('-').unwrap();
        let mut name = family[..1].to_string();
        name.push_str(&family[1..].to_ascii_lowercase());
        name.push_str(number);
        name
    };
    let mut code = String::from(
        "/// A requirement id of `cases/REQUIREMENTS.md` (generated from it by `build.rs`).\n\
         #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\n\
         pub enum Req {\n",
    );
    for (id, title) in &ids {
        writeln!(code, "    /// {id}: {}", title.replace('`', "'")).unwrap();
        writeln!(code, "    {},", variant(id)).unwrap();
    }
    code.push_str("}\n\nimpl Req {\n    /// Every id, in the index's order.\n    pub const ALL: &[Req] = &[\n");
    for (id, _) in &ids {
        writeln!(code, "        Req::{},", variant(id)).unwrap();
    }
    code.push_str("    ];\n\n    /// The id as the index writes it (`CAN-05`).\n");
    code.push_str(GENERATED_MATCH);
    code.push_str("    pub fn as_str(self) -> &'static str {\n        match self {\n");
    for (id, _) in &ids {
        writeln!(code, "            Req::{} => {id:?},", variant(id)).unwrap();
    }
    code.push_str("        }\n    }\n\n    /// What the requirement asks, in the index's words.\n");
    code.push_str(GENERATED_MATCH);
    code.push_str("    pub fn title(self) -> &'static str {\n        match self {\n");
    for (id, title) in &ids {
        writeln!(code, "            Req::{} => {title:?},", variant(id)).unwrap();
    }
    code.push_str("        }\n    }\n}\n");
    code
}
