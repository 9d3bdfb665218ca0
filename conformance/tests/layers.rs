//! The house's layers, held: every crate of the workspace is free of import circles between
//! its files, and in `conformance` no module imports one on a floor above its own
//! (docs/architecture.md draws the floors). The imports are read from the sources themselves
//! (`use` items and qualified paths, comments and test modules left out), so a new upward
//! import fails here, naming the file, the line and the module it reached for.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `conformance`'s floors, from the ground up: a module may import its own floor and those
/// below. The binary's modules (`main.rs`) are the top floor with the library's faces.
const FLOORS: &[(&str, &[&str])] = &[
    ("ground", &["load", "time", "pattern", "era", "requirement"]),
    (
        "model",
        &[
            "exchange",
            "case",
            "fixtures",
            "outcome",
            "transcript",
            "trace",
            "facts",
            "case_report",
            "error",
        ],
    ),
    ("rules", &["rules"]),
    ("transport", &["transport", "interrupt"]),
    ("engine", &["engine"]),
    (
        "run",
        &[
            "discovery",
            "versions",
            "target_file",
            "share",
            "spoken",
            "runner",
            "init",
            "from_trace",
            "client_versions",
            "suite",
            "baseline",
            "record",
            "check",
        ],
    ),
    (
        "face",
        &[
            "report", "compare", "harness", "libtest", "lib", "main", "args", "cli", "console",
            "finish", "live",
        ],
    ),
];

/// Rules are pure: besides their own floor they read only the ground and the model.
const RULES_MAY_IMPORT: &[&str] = &["ground", "model", "rules"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One crate's sources: module path (`engine::server::judge`) → file.
struct Crate {
    root: PathBuf,
    modules: BTreeMap<Vec<String>, PathBuf>,
    /// Paths that name this crate besides `crate` (the binary names the library).
    aliases: Vec<&'static str>,
}

impl Crate {
    fn read(dir: &str, aliases: Vec<&'static str>) -> Crate {
        let root = workspace().join(dir).join("src");
        let mut modules = BTreeMap::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("a source folder") {
                let path = entry.expect("a folder entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    modules.insert(module_of(&root, &path), path);
                }
            }
        }
        let tests: Vec<_> = modules
            .iter()
            .flat_map(|(m, p)| test_children(m, &read(p)))
            .collect();
        for t in tests {
            modules.remove(&t);
        }
        Crate {
            root,
            modules,
            aliases,
        }
    }

    /// The module a path names: its longest prefix that is a file of this crate.
    fn resolve(&self, from: &[String], path: &[String]) -> Option<Vec<String>> {
        let mut abs: Vec<String> = match path.first().map(String::as_str) {
            Some("crate") => vec![],
            Some(a) if self.aliases.contains(&a) => vec![],
            Some("super") => {
                let mut base = from.to_vec();
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                return self.longest(base, rest);
            }
            Some("self") => return self.longest(from.to_vec(), &path[1..]),
            _ => return None,
        };
        abs.truncate(0);
        self.longest(abs, &path[1..])
    }

    fn longest(&self, base: Vec<String>, rest: &[String]) -> Option<Vec<String>> {
        let mut best = None;
        let mut m = base;
        if self.modules.contains_key(&m) {
            best = Some(m.clone());
        }
        for seg in rest {
            m.push(seg.clone());
            if self.modules.contains_key(&m) {
                best = Some(m.clone());
            }
        }
        best
    }

    /// Every import edge: (from module, line, to module).
    fn edges(&self) -> Vec<(Vec<String>, usize, Vec<String>)> {
        let mut out = vec![];
        for (module, path) in &self.modules {
            let code = strip(&read(path));
            for (line, p) in paths(&code) {
                if let Some(to) = self.resolve(module, &p) {
                    if &to != module && !to.is_empty() {
                        out.push((module.clone(), line, to));
                    }
                }
            }
        }
        out
    }

    fn show(&self, module: &[String]) -> String {
        let p = &self.modules[module];
        p.strip_prefix(workspace().join(".."))
            .unwrap_or(p)
            .display()
            .to_string()
            .trim_start_matches("main/")
            .to_string()
            .replace(&format!("{}/", self.root.display()), "")
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("a readable source")
}

fn module_of(root: &Path, path: &Path) -> Vec<String> {
    let rel = path.strip_prefix(root).expect("under the root");
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) && parts.len() > 1
    {
        parts.pop();
    } else if parts == ["lib"] || parts == ["main"] {
        // the crate roots stay named, so the layers can place them
    }
    // `foo.rs` beside `foo/` is the module `foo`, already.
    parts
}

/// The modules a file declares as `#[cfg(test)] mod x;`: tests, not rooms of the house.
fn test_children(module: &[String], text: &str) -> Vec<Vec<String>> {
    let mut out = vec![];
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.windows(2) {
        if pair[0].trim() == "#[cfg(test)]" {
            if let Some(name) = pair[1]
                .trim()
                .strip_prefix("mod ")
                .and_then(|r| r.strip_suffix(';'))
            {
                let mut m = module.to_vec();
                if matches!(m.last().map(String::as_str), Some("lib" | "main")) {
                    m.pop();
                }
                m.push(name.to_string());
                out.push(m);
            }
        }
    }
    out
}

/// The code without comments, strings and inline `#[cfg(test)]` modules, line breaks kept.
fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if text[i..].starts_with("//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if text[i..].starts_with("/*") {
            let end = text[i..].find("*/").map_or(b.len(), |e| i + e + 2);
            out.extend(text[i..end].chars().filter(|c| *c == '\n'));
            i = end;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                if b.get(i) == Some(&b'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if text[i..].starts_with("#[cfg(test)]") {
            let open = text[i..].find('{').map(|o| i + o);
            let semi = text[i..].find(';').map(|s| i + s);
            match (open, semi) {
                (Some(o), Some(s)) if o < s => {
                    let mut depth = 0;
                    let mut j = o;
                    while j < b.len() {
                        match b[j] {
                            b'{' => depth += 1,
                            b'}' => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        j += 1;
                    }
                    out.extend(text[i..j.min(b.len())].chars().filter(|c| *c == '\n'));
                    i = j + 1;
                }
                _ => {
                    out.push_str("#[cfg(test)]");
                    i += "#[cfg(test)]".len();
                }
            }
        } else {
            let c = text[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Every path the code names that starts with `crate`, `super`, `self` or a crate alias,
/// with its line: `use` trees expanded (`use crate::{a::b, c}`), qualified paths as they are.
fn paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = vec![];
    let mut rest = code;
    let mut line = 1;
    while let Some(at) = rest.find("use ") {
        let before = &rest[..at];
        qualified(before, line, &mut out);
        line += before.matches('\n').count();
        let after = &rest[at + 4..];
        let boundary = at == 0 || !rest.as_bytes()[at - 1].is_ascii_alphanumeric();
        let end = after.find(';').unwrap_or(after.len());
        if boundary {
            expand(&after[..end], vec![], line, &mut out);
        } else {
            qualified(&after[..end], line, &mut out);
        }
        line += after[..end].matches('\n').count();
        rest = &after[end..];
    }
    qualified(rest, line, &mut out);
    out
}

/// A `use` tree, expanded into its paths.
fn expand(tree: &str, prefix: Vec<String>, line: usize, out: &mut Vec<(usize, Vec<String>)>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let mut base = prefix;
        base.extend(segments(&tree[..open]));
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], base.clone(), line, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], base, line, out);
    } else {
        let mut path = prefix;
        path.extend(segments(tree.split(" as ").next().unwrap_or(tree)));
        if !path.is_empty() {
            out.push((line, path));
        }
    }
}

fn segments(text: &str) -> Vec<String> {
    text.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "*")
        .map(String::from)
        .collect()
}

/// Qualified paths in code: `crate::a::b`, `super::x`, `conformance::y`.
fn qualified(code: &str, first_line: usize, out: &mut Vec<(usize, Vec<String>)>) {
    for (n, text) in code.split('\n').enumerate() {
        for start in ["crate::", "super::", "conformance::", "reference_server::"] {
            let mut from = 0;
            while let Some(at) = text[from..].find(start) {
                let at = from + at;
                from = at + start.len();
                if at > 0 {
                    let prev = text.as_bytes()[at - 1];
                    if prev.is_ascii_alphanumeric() || prev == b'_' || prev == b':' {
                        continue;
                    }
                }
                let tail: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                out.push((first_line + n, segments(&tail)));
            }
        }
    }
}

/// The file-level strongly connected components with more than one file (Tarjan).
fn circles(edges: &[(Vec<String>, usize, Vec<String>)]) -> Vec<Vec<Vec<String>>> {
    let mut graph: BTreeMap<&Vec<String>, BTreeSet<&Vec<String>>> = BTreeMap::new();
    for (a, _, b) in edges {
        graph.entry(a).or_default().insert(b);
        graph.entry(b).or_default();
    }
    let nodes: Vec<_> = graph.keys().copied().collect();
    let index_of: BTreeMap<_, _> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut index = vec![usize::MAX; nodes.len()];
    let mut low = vec![0; nodes.len()];
    let mut on = vec![false; nodes.len()];
    let mut stack = vec![];
    let mut next = 0;
    let mut found = vec![];
    fn visit(
        v: usize,
        nodes: &[&Vec<String>],
        graph: &BTreeMap<&Vec<String>, BTreeSet<&Vec<String>>>,
        index_of: &BTreeMap<&Vec<String>, usize>,
        st: &mut (
            &mut Vec<usize>,
            &mut Vec<usize>,
            &mut Vec<bool>,
            &mut Vec<usize>,
            &mut usize,
        ),
        found: &mut Vec<Vec<Vec<String>>>,
    ) {
        st.0[v] = *st.4;
        st.1[v] = *st.4;
        *st.4 += 1;
        st.3.push(v);
        st.2[v] = true;
        for w in &graph[nodes[v]] {
            let w = index_of[w];
            if st.0[w] == usize::MAX {
                visit(w, nodes, graph, index_of, st, found);
                st.1[v] = st.1[v].min(st.1[w]);
            } else if st.2[w] {
                st.1[v] = st.1[v].min(st.0[w]);
            }
        }
        if st.1[v] == st.0[v] {
            let mut scc = vec![];
            while let Some(w) = st.3.pop() {
                st.2[w] = false;
                scc.push(nodes[w].clone());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                found.push(scc);
            }
        }
    }
    for v in 0..nodes.len() {
        if index[v] == usize::MAX {
            let mut st = (&mut index, &mut low, &mut on, &mut stack, &mut next);
            visit(v, &nodes, &graph, &index_of, &mut st, &mut found);
        }
    }
    found
}

fn assert_no_circles(krate: &Crate) {
    let edges = krate.edges();
    let found = circles(&edges);
    let text: Vec<String> = found
        .iter()
        .map(|scc| {
            let ties: Vec<String> = edges
                .iter()
                .filter(|(a, _, b)| scc.contains(a) && scc.contains(b))
                .map(|(a, line, b)| {
                    format!("    {}:{line} imports {}", krate.show(a), b.join("::"))
                })
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            ties.join("\n")
        })
        .collect();
    assert!(
        found.is_empty(),
        "import circles (files that import each other, through these imports; move what they share into a module both import):\n{}",
        text.join("\n  --\n")
    );
}

#[test]
fn conformance_has_no_import_circle() {
    assert_no_circles(&Crate::read("conformance", vec!["conformance"]));
}

#[test]
fn reference_server_has_no_import_circle() {
    assert_no_circles(&Crate::read("reference-server", vec!["reference_server"]));
}

#[test]
fn reference_client_has_no_import_circle() {
    assert_no_circles(&Crate::read("reference-client", vec!["reference_client"]));
}

#[test]
fn reference_wire_has_no_import_circle() {
    assert_no_circles(&Crate::read("reference-wire", vec!["reference_wire"]));
}

fn floor_of(top: &str) -> Option<(usize, &'static str)> {
    FLOORS
        .iter()
        .enumerate()
        .find(|(_, (_, modules))| modules.contains(&top))
        .map(|(i, (name, _))| (i, *name))
}

#[test]
fn conformance_imports_point_down() {
    let krate = Crate::read("conformance", vec!["conformance"]);
    let mut wrong = BTreeSet::new();
    for module in krate.modules.keys() {
        assert!(
            floor_of(&module[0]).is_some(),
            "{}: the module `{}` is on no floor; give it one in FLOORS (conformance/tests/layers.rs) and in docs/architecture.md",
            krate.show(module),
            module[0]
        );
    }
    for (from, line, to) in krate.edges() {
        let (a, a_name) = floor_of(&from[0]).expect("placed above");
        let (b, b_name) = floor_of(&to[0]).expect("placed above");
        let rules_reach = a_name == "rules" && !RULES_MAY_IMPORT.contains(&b_name);
        if b > a || rules_reach {
            wrong.insert(format!(
                "{}:{line}: `{}` ({a_name}) imports `{}` ({b_name})",
                krate.show(&from),
                from.join("::"),
                to.join("::")
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that run up a floor (docs/architecture.md, \"Floors\"); move the data they share down, or the code up:\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// docs/architecture.md's table of floors is this file's list, floor by floor.
#[test]
fn the_book_draws_these_floors() {
    let page = std::fs::read_to_string(workspace().join("docs/architecture.md"))
        .expect("docs/architecture.md");
    let section = page
        .split("## Floors")
        .nth(1)
        .expect("docs/architecture.md has a section \"Floors\"");
    let drawn: Vec<(String, Vec<String>)> = section
        .lines()
        .skip_while(|l| !l.starts_with("| Floor"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let modules = cells[2]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(String::from)
                .collect();
            (cells[1].to_string(), modules)
        })
        .collect();
    let listed: Vec<(String, Vec<String>)> = FLOORS
        .iter()
        .rev()
        .map(|(name, modules)| {
            let modules = modules.iter().map(|m| m.to_string()).collect();
            (name.to_string(), modules)
        })
        .collect();
    assert_eq!(
        drawn, listed,
        "docs/architecture.md, \"Floors\", draws other floors than FLOORS in conformance/tests/layers.rs"
    );
}

/// The reader must see what it should: a known upward import is found, with its line.
#[test]
fn the_reader_finds_uses_and_paths() {
    let code = strip(
        "use crate::{a::b, c::{d, e as f}};\n// use crate::hidden;\nfn x() { crate::g::h(); let s = \"crate::no\"; }\n#[cfg(test)]\nmod tests { use crate::t; }\n",
    );
    let found: Vec<String> = paths(&code)
        .into_iter()
        .map(|(l, p)| format!("{l}:{}", p.join("::")))
        .collect();
    assert_eq!(
        found,
        [
            "1:crate::a::b",
            "1:crate::c::d",
            "1:crate::c::e",
            "3:crate::g::h"
        ]
    );
}
