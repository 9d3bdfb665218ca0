//! Embeds the cases into the binary, so an installed `conformance` needs no files.
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
    if servers == 0 || clients == 0 {
        panic!(
            "found {servers} server and {clients} client cases in {}: it must hold the cases \
             (cases/server/*.mcpt and cases/client/*.mcpt); in the workspace it is a link to the \
             top-level cases/ folder, so check that the link exists and git checked it out as a link",
            root.display()
        );
    }
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
