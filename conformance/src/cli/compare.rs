//! `conformance compare`: reads the reports (or an earlier comparison), the target files'
//! `sdk` and the evidence file, and writes what is asked. The comparison itself is
//! [`conformance::compare`]'s pure functions; this is only files in and files out.

use crate::args::CompareArgs;
use crate::console::say;
use conformance::compare::evidence::{self, Evidence};
use conformance::compare::tables::{self, findings_of};
use conformance::compare::{summarize, Comparison, Input, Sdk};
use conformance::report::{html, json};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

/// Runs `conformance compare`.
pub fn compare(args: &CompareArgs) -> ExitCode {
    match run(args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &CompareArgs) -> Result<ExitCode, String> {
    let evidence = read_evidence(&args.evidence)?;
    let (mut comparison, reports) = match &args.from {
        Some(path) => (read_comparison(path)?, vec![]),
        None => from_reports(args)?,
    };
    if let Some(path) = &args.previous {
        comparison = conformance::compare::after(comparison, &read_comparison(path)?);
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&comparison).map_err(|e| e.to_string())?;
        write(path, &(text + "\n"))?;
    }
    if let Some(path) = &args.html {
        let page = html::render(reports).map_err(|e| e.to_string())?;
        write(path, &page)?;
    }
    let mut stale = vec![];
    for path in &args.markdown {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let link = relative(&args.evidence, path);
        let new = tables::rewrite(&text, &comparison, &evidence, &link)
            .map_err(|e| format!("{}:{e}", path.display()))?;
        if new != text {
            if args.check {
                stale.push(path.display().to_string());
            } else {
                write(path, &new)?;
            }
        }
    }
    tell(&comparison, &evidence);
    if stale.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "error: the generated tables of {} differ from the comparison; run `conformance compare --from {} --markdown …` without --check to rewrite them",
            stale.join(", "),
            args.from.as_ref().map_or("targets/comparison.json".into(), |p| p.display().to_string())
        );
        Ok(ExitCode::from(1))
    }
}

/// One line of what was compared, and every finding that has no written evidence yet.
fn tell(comparison: &Comparison, evidence: &Evidence) {
    let mut findings = 0;
    let mut pending = vec![];
    for t in &comparison.targets {
        for (case, cell, _) in findings_of(t) {
            findings += 1;
            let key = format!("{} {case}", t.target);
            if evidence
                .find(&t.target, case, cell.requirement.as_deref())
                .is_none()
                && !pending.contains(&key)
            {
                pending.push(key);
            }
        }
    }
    for p in &pending {
        eprintln!("warning: no evidence for {p}: add a section to the evidence file (`## {}`, then `Targets:`)", p.split(' ').nth(1).unwrap_or_default());
    }
    say(format_args!(
        "conformance compare: {} targets, {findings} failures and warnings ({} without evidence)",
        comparison.targets.len(),
        pending.len()
    ));
}

fn from_reports(
    args: &CompareArgs,
) -> Result<(Comparison, Vec<(String, json::RunReport)>), String> {
    let mut reports = vec![];
    let mut names = vec![];
    for path in &args.reports {
        let report = json::read(path).map_err(|e| e.to_string())?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sdk = sdk_of(&args.targets, &name, path)?;
        names.push((name.clone(), sdk));
        reports.push((format!("{name}.json"), report));
    }
    let inputs: Vec<Input> = names
        .into_iter()
        .zip(&reports)
        .map(|((target, sdk), (_, report))| Input {
            target,
            sdk,
            report,
        })
        .collect();
    Ok((summarize(&inputs), reports))
}

/// The SDK of the report named `name`: the `sdk` of `DIR/name.json`, or for `client-X` that
/// of `X` in `DIR/clients.json`.
fn sdk_of(dir: &Path, name: &str, report: &Path) -> Result<Sdk, String> {
    let (file, key) = match name.strip_prefix("client-") {
        Some(adapter) => (dir.join("clients.json"), Some(adapter)),
        None => (dir.join(format!("{name}.json")), None),
    };
    let text = std::fs::read_to_string(&file).map_err(|e| {
        format!(
            "{}: cannot read {} to learn which SDK it tested ({e}); name a report after its target file (`rmcp-http.json` for targets/rmcp-http.json) or `client-ADAPTER.json` for an adapter listed in clients.json, and give --targets the folder",
            report.display(),
            file.display()
        )
    })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}:{}: not JSON: {e}", file.display(), e.line()))?;
    let entry = match key {
        Some(key) => value.get(key).ok_or_else(|| {
            format!("{}: no adapter `{key}` (for {}); add `\"{key}\": {{\"sdk\": {{\"name\": …, \"version\": …}}}}`", file.display(), report.display())
        })?,
        None => &value,
    };
    entry
        .get("sdk")
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .ok_or_else(|| {
            format!(
                "{}: no `sdk` {{\"name\": package, \"version\": exact version}}{}: the comparison needs to say which SDK {} tested",
                file.display(),
                key.map(|k| format!(" under `{k}`")).unwrap_or_default(),
                report.display()
            )
        })
}

fn read_evidence(path: &Path) -> Result<Evidence, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read the evidence file {}: {e} (give it with --evidence)",
            path.display()
        )
    })?;
    evidence::parse(&text).map_err(|e| format!("{}:{}: {}", path.display(), e.line, e.message))
}

fn read_comparison(path: &Path) -> Result<Comparison, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}:{}: not a comparison (the --json of `conformance compare`): {e}",
            path.display(),
            e.line()
        )
    })
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `target` as a link from the folder of `from` (both as given, relative to the same folder);
/// empty when it lies outside that folder: a page of the book links only inside the book.
fn relative(target: &Path, from: &Path) -> String {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let target = absolute(target);
    let base: PathBuf = absolute(from)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let t: Vec<Component> = target.components().collect();
    let b: Vec<Component> = base.components().collect();
    let common = t.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common < b.len() {
        return String::new();
    }
    let mut parts: Vec<String> = vec![];
    parts.extend(
        t[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}
