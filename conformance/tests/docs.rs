//! The documentation cannot go stale silently: the README and the book (`docs/`) are read as a
//! newcomer would use them.
//!
//! - Every command line in a shell block that runs the harness (`conformance …`,
//!   `cargo run -p conformance -- …`) parses with the harness's own command-line definition
//!   (`src/args.rs`, included here), so a renamed flag or subcommand fails here, not in a
//!   user's terminal. Nothing is run.
//! - Every `cargo` line names packages, tests and benches that exist.
//! - Every relative link points at a file that exists (and a heading that exists); the book's
//!   pages link only inside the book, so the rendered book has no dead links.
//! - Every JSON block is JSON.
//! - The table of what each server case needs (`docs/case-needs.md`) and its summary in the
//!   README are generated from `cases/server/*.mcpt`; `UPDATE_DOCS=1 cargo test -p
//!   conformance --test docs` rewrites them.

#[allow(dead_code)]
#[path = "../src/args.rs"]
mod args;

use clap::Parser;
use conformance::case::{Case, Role, TransportKind};
use conformance::era::ProtocolVersion;
use conformance::fixtures;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The README and every page of the book, as (path relative to the root, text).
fn documents() -> Vec<(PathBuf, String)> {
    let root = root();
    let mut paths = vec![PathBuf::from("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| p.strip_prefix(&root).expect("below the root").to_path_buf())
        .collect();
    pages.sort();
    paths.extend(pages);
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(root.join(&p)).expect("readable");
            (p, text)
        })
        .collect()
}

/// A fenced code block: its info string, the line its first line is on, and its lines.
struct Block {
    lang: String,
    line: usize,
    lines: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = vec![];
    let mut open: Option<(String, usize, Vec<String>)> = None;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some((info.trim().to_string(), n + 2, vec![]));
                }
            }
            Some((lang, start, mut lines)) => {
                if trimmed.starts_with("```") {
                    out.push(Block {
                        lang,
                        line: start,
                        lines,
                    });
                } else {
                    lines.push(line.to_string());
                    open = Some((lang, start, lines));
                }
            }
        }
    }
    out
}

/// Splits a shell line into words: quotes group, a `#` after blank space starts a comment.
fn words(line: &str) -> Vec<String> {
    let mut words = vec![];
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None if c == '#' && !in_word => break,
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The command lines of a block: lines of a shell block, or `$ ` lines of a console block,
/// with backslash continuations joined and leading `VAR=value` words dropped.
fn command_lines(block: &Block) -> Vec<(usize, Vec<String>)> {
    if block.lang == "yaml" || block.lang == "yml" {
        // A workflow's one-line `run:` steps, with `${{ … }}` expressions made one word.
        return block
            .lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                let run = l
                    .trim_start()
                    .trim_start_matches("- ")
                    .trim_start()
                    .strip_prefix("run:")?;
                let mut line = run.trim().to_string();
                while let (Some(a), Some(b)) = (line.find("${{"), line.find("}}")) {
                    if b < a {
                        break;
                    }
                    line.replace_range(a..b + 2, "X");
                }
                Some((block.line + i, words(&line))).filter(|(_, w)| !w.is_empty())
            })
            .collect();
    }
    let console = block.lang == "console" || block.lines.iter().any(|l| l.starts_with("$ "));
    let shell = matches!(
        block.lang.as_str(),
        "" | "sh" | "shell" | "bash" | "console"
    );
    if !shell {
        return vec![];
    }
    let mut out = vec![];
    let mut pending = String::new();
    let mut start = 0;
    for (i, line) in block.lines.iter().enumerate() {
        let line = if console {
            match line.strip_prefix("$ ") {
                Some(l) => l,
                None if !pending.is_empty() => line.as_str(),
                None => continue,
            }
        } else {
            line.as_str()
        };
        if pending.is_empty() {
            start = block.line + i;
        }
        if let Some(head) = line.trim_end().strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        let mut argv = words(&pending);
        pending.clear();
        while argv.first().is_some_and(|w| {
            w.split_once('=').is_some_and(|(k, _)| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            })
        }) {
            argv.remove(0);
        }
        if !argv.is_empty() {
            out.push((start, argv));
        }
    }
    out
}

/// The harness's own argv in a command line, if it runs the harness.
fn harness_argv(argv: &[String]) -> Option<Vec<String>> {
    let program = argv.first()?;
    if program == "conformance" || program.ends_with("/conformance") {
        return Some(argv.to_vec());
    }
    let runs_harness = program == "cargo"
        && argv.get(1).is_some_and(|w| w == "run")
        && argv
            .windows(2)
            .any(|w| w[0] == "-p" && w[1] == "conformance");
    if runs_harness {
        let rest = argv
            .iter()
            .position(|w| w == "--")
            .map_or(&argv[argv.len()..], |at| &argv[at + 1..]);
        let mut out = vec!["conformance".to_string()];
        out.extend(rest.iter().cloned());
        return Some(out);
    }
    None
}

#[test]
fn every_documented_command_line_of_the_harness_parses() {
    let mut checked = 0;
    let mut problems = vec![];
    for (path, text) in documents() {
        for block in blocks(&text) {
            for (line, argv) in command_lines(&block) {
                let Some(argv) = harness_argv(&argv) else {
                    continue;
                };
                checked += 1;
                let place = format!("{}:{line}: `{}`", path.display(), argv.join(" "));
                match args::Args::try_parse_from(&argv) {
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            clap::error::ErrorKind::DisplayHelp
                                | clap::error::ErrorKind::DisplayVersion
                        ) => {}
                    Err(e) => {
                        let first = e.to_string();
                        let first = first.lines().next().unwrap_or("").to_string();
                        problems.push(format!("{place}: {first}"));
                    }
                }
            }
        }
    }
    assert!(
        checked >= 20,
        "only {checked} command lines found: is the extraction broken?"
    );
    assert!(
        problems.is_empty(),
        "documented command lines that the harness does not accept:\n{}",
        problems.join("\n")
    );
    eprintln!("{checked} command lines parse");
}

/// The workspace's packages, with their test and bench targets.
fn workspace_targets() -> BTreeMap<String, (Vec<String>, Vec<String>)> {
    let root = root();
    let mut out = BTreeMap::new();
    for package in [
        "conformance",
        "reference-server",
        "reference-client",
        "reference-wire",
    ] {
        let dir = root.join(package);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("a manifest");
        let stems = |folder: &str| -> Vec<String> {
            std::fs::read_dir(dir.join(folder))
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .filter_map(|e| {
                            let p = e.path();
                            (p.extension()? == "rs")
                                .then(|| p.file_stem()?.to_str().map(str::to_string))?
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut tests = stems("tests");
        let mut benches = stems("benches");
        // Targets named in the manifest (`[[test]] name = "…"`).
        let mut section = "";
        for line in manifest.lines() {
            let line = line.trim();
            if line.starts_with("[[") {
                section = line;
            } else if let Some(name) = line.strip_prefix("name = ") {
                let name = name.trim_matches('"').to_string();
                match section {
                    "[[test]]" => tests.push(name),
                    "[[bench]]" => benches.push(name),
                    _ => {}
                }
            }
        }
        out.insert(package.to_string(), (tests, benches));
    }
    out
}

#[test]
fn every_documented_cargo_line_names_packages_and_targets_that_exist() {
    let targets = workspace_targets();
    let mut problems = vec![];
    let mut checked = 0;
    for (path, text) in documents() {
        for block in blocks(&text) {
            for (line, argv) in command_lines(&block) {
                if argv.first().map(String::as_str) != Some("cargo") {
                    continue;
                }
                // Only this workspace's own commands: the book also shows commands run in an
                // SDK's repository, which name that repository's tests.
                let ours = argv.windows(2).any(|w| w[0] == "-p" || w[0] == "--package");
                if !ours || argv.iter().any(|w| w == "--manifest-path") {
                    continue;
                }
                checked += 1;
                let place = format!("{}:{line}: `{}`", path.display(), argv.join(" "));
                let until = argv.iter().position(|w| w == "--").unwrap_or(argv.len());
                let argv = &argv[..until];
                let packages: Vec<&String> = argv
                    .windows(2)
                    .filter(|w| w[0] == "-p" || w[0] == "--package")
                    .map(|w| &w[1])
                    .collect();
                for p in &packages {
                    if !targets.contains_key(p.as_str()) {
                        problems.push(format!("{place}: no package `{p}` in the workspace"));
                    }
                }
                for w in argv.windows(2) {
                    let (kind, index) = match w[0].as_str() {
                        "--test" => ("test", 0),
                        "--bench" => ("bench", 1),
                        _ => continue,
                    };
                    for p in &packages {
                        let Some(t) = targets.get(p.as_str()) else {
                            continue;
                        };
                        let names = if index == 0 { &t.0 } else { &t.1 };
                        if !names.contains(&w[1]) {
                            problems
                                .push(format!("{place}: `{p}` has no {kind} target `{}`", w[1]));
                        }
                    }
                }
            }
        }
    }
    assert!(
        checked >= 5,
        "only {checked} cargo lines found: is the extraction broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A heading's anchor, as mdBook and GitHub make it (for ASCII headings).
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '_' => Some(c),
            ' ' => Some('-'),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of inline links and images outside code.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = vec![];
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans may hold `](` in examples: drop them.
        let mut plain = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_resolves_and_the_book_links_only_inside_itself() {
    let root = root();
    let mut problems = vec![];
    for (path, text) in documents() {
        let in_book = path.starts_with("docs");
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let place = format!("{}:{line}: ({target})", path.display());
            let (file, fragment) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let resolved = if file.is_empty() {
                root.join(&path)
            } else {
                root.join(path.parent().unwrap_or(Path::new(""))).join(file)
            };
            let Ok(resolved) = resolved.canonicalize() else {
                problems.push(format!("{place}: no such file"));
                continue;
            };
            if in_book && !resolved.starts_with(root.join("docs").canonicalize().expect("docs/")) {
                problems.push(format!(
                    "{place}: a book page links outside docs/, which the rendered book does not carry; name the file as `code` instead"
                ));
            }
            if let Some(fragment) = fragment {
                let is_md = resolved.extension().is_some_and(|x| x == "md");
                if is_md {
                    let target_text = std::fs::read_to_string(&resolved).unwrap_or_default();
                    if !anchors(&target_text).iter().any(|a| a == fragment) {
                        problems.push(format!("{place}: no heading `#{fragment}` there"));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_json_block_is_json() {
    let mut problems = vec![];
    for (path, text) in documents() {
        for block in blocks(&text) {
            if block.lang != "json" {
                continue;
            }
            let body = block.lines.join("\n");
            // Elided examples (`…`) and one message a line are read line by line, or skipped.
            if body.contains('…') {
                continue;
            }
            let Err(whole) = serde_json::from_str::<serde_json::Value>(&body) else {
                continue;
            };
            let each_line = block
                .lines
                .iter()
                .filter(|l| !l.trim().is_empty())
                .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok());
            if !each_line {
                problems.push(format!(
                    "{}:{}: not JSON: {whole}",
                    path.display(),
                    block.line
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---- The table of what each server case needs ----

fn server_cases() -> Vec<Case> {
    let mut cases: Vec<Case> = conformance::suite::from_dir(&root().join("cases"))
        .unwrap_or_else(|e| panic!("the cases parse: {e:?}"))
        .into_iter()
        .filter(|c| c.role == Role::Server)
        .collect();
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    cases
}

fn versions(case: &Case) -> String {
    let has = |v: &ProtocolVersion| case.versions.contains(v);
    let all_handshake = ProtocolVersion::ALL
        .iter()
        .filter(|v| v.has_handshake())
        .all(has);
    let stateless = has(&ProtocolVersion::V2026_07_28);
    match (all_handshake, stateless, case.versions.len()) {
        (true, true, 5) => "all".into(),
        (true, false, 4) => "2024-11-05 … 2025-11-25".into(),
        (false, true, 1) => ProtocolVersion::V2026_07_28.to_string(),
        _ => ProtocolVersion::joined(&case.versions),
    }
}

fn transports(case: &Case) -> &'static str {
    let stdio = case.transports.contains(&TransportKind::Stdio);
    let http = case.transports.contains(&TransportKind::Http);
    match (stdio, http) {
        (true, true) => "both",
        (true, false) => "stdio",
        (false, true) => "HTTP",
        (false, false) => "none",
    }
}

fn needs(case: &Case) -> String {
    if case.fixtures.is_empty() {
        return "none".into();
    }
    case.fixtures
        .iter()
        .map(|need| {
            let mut said = format!("`{}`", need.role);
            if need.progress {
                said.push_str(" with progress");
            }
            match need.task {
                Some(fixtures::TaskUse::Task) => said.push_str(" as a task"),
                Some(fixtures::TaskUse::NoTask) => said.push_str(" that does not run as a task"),
                None if need.role == fixtures::Role::Cancellations => said.push_str(" (optional)"),
                None => {}
            }
            said
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn notes(case: &Case) -> String {
    let mut notes = vec![];
    let over_stateless_http = case.transports.contains(&TransportKind::Http)
        && case.versions.iter().any(|v| v.is_stateless());
    if case.cancels_by_message() && over_stateless_http {
        notes.push("skipped at 2026-07-28 over HTTP: it sends its own `notifications/cancelled`");
    }
    if !case.handshake {
        notes.push("opens the session itself");
    }
    for need in &case.needs {
        notes.push(match need {
            conformance::case::Need::Tasks => "needs a server that declares tasks",
            conformance::case::Need::NoTasks => "needs a server that declares no tasks",
            conformance::case::Need::Subscriptions => {
                "needs a server that declares something to subscribe to"
            }
            conformance::case::Need::TaskCancel => "needs a server that declares `tasks.cancel`",
        });
    }
    notes.join("; ")
}

fn case_table() -> String {
    let mut out = String::from(
        "| Case | Level | Tools it calls, by role | Transports | Versions | Notes |\n|---|---|---|---|---|---|\n",
    );
    for case in server_cases() {
        let id = case.id.trim_start_matches("server/");
        out.push_str(&format!(
            "| `{id}` | {} | {} | {} | {} | {} |\n",
            case.level.as_str(),
            needs(&case),
            transports(&case),
            versions(&case),
            notes(&case)
        ));
    }
    out
}

/// The README's short version: per role, how many cases call it.
fn role_summary() -> String {
    let cases = server_cases();
    let none = cases.iter().filter(|c| c.fixtures.is_empty()).count();
    let mut out = format!(
        "| Your server offers | Server cases |\n|---|---|\n| nothing beyond the protocol | {none} of {} need nothing more |\n",
        cases.len()
    );
    for role in fixtures::Role::PROFILE
        .into_iter()
        .chain(fixtures::Role::TASK)
    {
        let calling = cases
            .iter()
            .filter(|c| c.fixtures.iter().any(|f| f.role == role))
            .count();
        let what = if role == fixtures::Role::Cancellations {
            format!("the `{role}` witness | makes {calling} cases' `! witness` steps verdicts, not notes |")
        } else {
            format!("a tool playing `{role}` | {calling} call it |")
        };
        out.push_str(&format!("| {what}\n"));
    }
    out
}

/// Replaces the text between `<!-- begin NAME -->` and `<!-- end NAME -->` in `path` with
/// `body`, or checks that it is there. Returns a problem, if any.
fn generated(path: &str, name: &str, body: &str) -> Option<String> {
    let file = root().join(path);
    let text = std::fs::read_to_string(&file).expect("readable");
    let begin = format!("<!-- begin {name}: generated from cases/server by conformance/tests/docs.rs; UPDATE_DOCS=1 rewrites it -->\n");
    let end = format!("<!-- end {name} -->");
    let (Some(b), Some(e)) = (text.find(&begin), text.find(&end)) else {
        return Some(format!(
            "{path}: the markers of `{name}` are missing:\n{begin}{end}"
        ));
    };
    let current = &text[b + begin.len()..e];
    if current == body {
        return None;
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let updated = format!("{}{body}{}", &text[..b + begin.len()], &text[e..]);
        std::fs::write(&file, updated).expect("writable");
        return None;
    }
    Some(format!(
        "{path}: `{name}` does not match cases/server; run `UPDATE_DOCS=1 cargo test -p conformance --test docs` and commit the result"
    ))
}

#[test]
fn the_tables_of_what_server_cases_need_match_the_cases() {
    let problems: Vec<String> = [
        generated("docs/case-needs.md", "case-needs", &case_table()),
        generated("README.md", "role-summary", &role_summary()),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_helpers_read_shell_lines_as_a_shell_would() {
    assert_eq!(
        words(r#"conformance server --url 'http://x/{port}' -- "a b" c # comment"#),
        [
            "conformance",
            "server",
            "--url",
            "http://x/{port}",
            "--",
            "a b",
            "c"
        ]
    );
    let block = Block {
        lang: "console".into(),
        line: 1,
        lines: vec![
            "$ CI=1 conformance list \\".into(),
            "  cancel".into(),
            "output".into(),
        ],
    };
    assert_eq!(
        command_lines(&block),
        [(
            1,
            vec!["conformance".into(), "list".into(), "cancel".into()]
        )]
    );
    assert_eq!(
        harness_argv(&words("cargo run -p conformance -- server -v")),
        Some(vec!["conformance".into(), "server".into(), "-v".into()])
    );
    assert_eq!(
        anchor("The stateless era (2026-07-28)"),
        "the-stateless-era-2026-07-28"
    );
    assert_eq!(
        anchor("Drafting one: `conformance init`"),
        "drafting-one-conformance-init"
    );
    // A stale flag is caught.
    assert!(args::Args::try_parse_from(["conformance", "server", "--no-such-flag"]).is_err());
}

/// The README opens with the two commands a newcomer runs: one runs the harness, one runs the
/// tests; and CI (`.ci/run`) runs that same test command, so the README cannot name one that
/// CI does not run.
#[test]
fn the_readme_opens_with_the_two_commands_and_ci_runs_its_test_command() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let first = blocks(&readme)
        .into_iter()
        .next()
        .expect("a code block in the README");
    assert!(
        first.line <= 5,
        "the README's first code block starts on line {}, not at the top",
        first.line
    );
    let lines = command_lines(&first);
    assert_eq!(
        lines.len(),
        2,
        "the README's first block holds the two commands, not {lines:?}"
    );
    assert!(
        harness_argv(&lines[0].1).is_some(),
        "the README's first command runs the harness: {:?}",
        lines[0].1
    );
    let test = &lines[1].1;
    assert_eq!(
        test[..2],
        ["cargo", "test"],
        "the README's second command runs the tests: {test:?}"
    );
    let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    let runs_it = ci.lines().map(words).any(|line| {
        line.len() >= 2 && line[..2] == ["cargo", "test"] && test.iter().all(|w| line.contains(w))
    });
    assert!(
        runs_it,
        ".ci/run runs no `{}` (it may add flags such as --locked)",
        test.join(" ")
    );
}
