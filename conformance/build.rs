//! Embeds the cases folder into the binary, so an installed `conformance` needs no files.

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
    let root = manifest.join("../cases");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut cases = vec![];
    collect(&root, &root, &mut cases);
    cases.sort();
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
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embedded_cases.rs");
    std::fs::write(out, code).unwrap();
}
