//! The GitHub Action (`action.yml` at the repository root) against the command line it drives:
//! every input maps to an option that `conformance server --help` or `client --help` offers,
//! and its bash steps, run here as the runner runs them (`bash -eo pipefail`, inputs and step
//! outputs substituted), install-key, run the harness, summarize and fail as they say.

use assert_cmd::Command;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use yaml_rust2::{Yaml, YamlLoader};

/// Each input that becomes an option (or argument) of the harness, with the subcommands that
/// take it and the text their `--help` shows for it.
const OPTIONS: [(&str, &[&str], &str); 8] = [
    ("command", &["server", "client"], "[ARGV]..."),
    ("url", &["server"], "--url <URL>"),
    ("target-file", &["server"], "--target <FILE>"),
    (
        "protocol-version",
        &["server", "client"],
        "--protocol-version <VERSION>",
    ),
    ("baseline", &["server", "client"], "--baseline <FILE>"),
    ("strict", &["server", "client"], "--strict"),
    ("filter", &["server", "client"], "[FILTER]"),
    ("transport", &["client"], "--transport <stdio|http>"),
];

/// Inputs of the action itself: the subcommand, options passed through, where the reports go.
const ACTION_ONLY: [&str; 4] = ["role", "args", "report-dir", "artifact-name"];

/// Options the action always passes, to write its reports.
const REPORTS: [&str; 4] = [
    "--json <PATH>",
    "--junit <PATH>",
    "--html <FILE>",
    "--dump <DIR>",
];

/// Report options another branch is adding: absent from `--help` until it is merged, and
/// checked like the others from then on. Delete an entry once `--help` shows it.
const PENDING: [&str; 1] = ["--html <FILE>"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn action() -> Yaml {
    let text = std::fs::read_to_string(repo().join("action.yml")).expect("action.yml");
    YamlLoader::load_from_str(&text)
        .expect("action.yml is YAML")
        .remove(0)
}

fn help(subcommand: &str) -> String {
    let out = Command::cargo_bin("conformance")
        .unwrap()
        .args([subcommand, "--help"])
        .output()
        .unwrap();
    assert!(out.status.success(), "conformance {subcommand} --help");
    String::from_utf8(out.stdout).unwrap()
}

fn inputs(action: &Yaml) -> Vec<String> {
    action["inputs"]
        .as_hash()
        .expect("inputs")
        .keys()
        .map(|k| k.as_str().unwrap().to_string())
        .collect()
}

/// The step with this `id` or `name`.
fn step<'a>(action: &'a Yaml, which: &str) -> &'a Yaml {
    action["runs"]["steps"]
        .as_vec()
        .expect("steps")
        .iter()
        .find(|s| s["id"].as_str() == Some(which) || s["name"].as_str() == Some(which))
        .unwrap_or_else(|| panic!("no step {which}"))
}

#[test]
fn every_input_is_an_option_of_the_harness() {
    let action = action();
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    let helps: HashMap<&str, String> = [("server", help("server")), ("client", help("client"))]
        .into_iter()
        .collect();
    let pending = |option: &str, shown: &str| PENDING.contains(&option) && !shown.contains(option);
    let run = step(&action, "run");
    let script = run["run"].as_str().unwrap();
    let env: Vec<&str> = run["env"]
        .as_hash()
        .unwrap()
        .values()
        .map(|v| v.as_str().unwrap())
        .collect();
    for input in inputs(&action) {
        if ACTION_ONLY.contains(&input.as_str()) {
            continue;
        }
        let (_, subcommands, option) = OPTIONS
            .iter()
            .find(|(name, _, _)| *name == input)
            .unwrap_or_else(|| panic!("input `{input}` maps to no option of the harness: add it to OPTIONS or ACTION_ONLY"));
        for subcommand in *subcommands {
            assert!(
                helps[subcommand].contains(option),
                "input `{input}`: `conformance {subcommand} --help` has no `{option}`"
            );
        }
        // The run step reads the input and passes the option.
        assert!(
            env.iter()
                .any(|v| *v == format!("${{{{ inputs.{input} }}}}")),
            "the run step does not read input `{input}`"
        );
        if let Some(flag) = option.strip_prefix("--") {
            let flag = flag.split(' ').next().unwrap();
            assert!(
                script.contains(&format!("--{flag}")),
                "the run step never passes --{flag}"
            );
        }
    }
    for (name, _, _) in OPTIONS {
        assert!(
            inputs(&action).iter().any(|i| i == name),
            "OPTIONS names `{name}`, which action.yml no longer has"
        );
    }
    for name in ACTION_ONLY {
        assert!(
            inputs(&action).iter().any(|i| i == name),
            "no input `{name}`"
        );
    }
    for option in REPORTS {
        let flag = option.split(' ').next().unwrap();
        assert!(script.contains(flag), "the run step does not write {flag}");
        for (subcommand, shown) in &helps {
            if pending(option, shown) {
                eprintln!(
                    "note: `conformance {subcommand} --help` has no `{option}` yet (PENDING)"
                );
                continue;
            }
            assert!(
                shown.contains(option),
                "`conformance {subcommand} --help` has no `{option}`"
            );
        }
    }
    let steps = format!("{:?}", action["runs"]["steps"]);
    assert!(
        steps.contains("actions/upload-artifact@"),
        "uploads the reports"
    );
    assert!(steps.contains("actions/cache@"), "caches the harness");
    let install = step(&action, "Install the harness")["run"]
        .as_str()
        .unwrap();
    assert!(install.contains(r#"cargo install --locked --path "$GITHUB_ACTION_PATH/conformance""#));
}

/// A scratch folder, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("conformance-action-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a step did: its exit code, what it printed, its outputs and the job summary.
struct Ran {
    code: i32,
    stdout: String,
    outputs: HashMap<String, String>,
    summary: String,
}

/// Runs step `which` as the runner does, with `${{ … }}` from `values` (an expression not in
/// them fails the test: the step uses something this test does not know).
fn run_step(which: &str, values: &HashMap<String, String>, scratch: &Path) -> Ran {
    let action = action();
    let step = step(&action, which);
    assert_eq!(step["shell"].as_str(), Some("bash"), "{which} runs in bash");
    let output = scratch.join("output");
    let summary = scratch.join("summary");
    std::fs::write(&output, "").unwrap();
    let mut cmd = std::process::Command::new("bash");
    cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
        .arg(step["run"].as_str().unwrap())
        .current_dir(scratch)
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_ACTION_PATH", repo())
        .env("RUNNER_OS", "Linux")
        .env("RUNNER_ARCH", "X64")
        .env("RUNNER_TEMP", scratch)
        .env_remove("CI");
    if let Some(env) = step["env"].as_hash() {
        for (k, v) in env {
            cmd.env(k.as_str().unwrap(), substitute(v.as_str().unwrap(), values));
        }
    }
    let out = cmd.output().unwrap();
    let outputs = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr),
        outputs,
        summary: std::fs::read_to_string(&summary).unwrap_or_default(),
    }
}

fn substitute(text: &str, values: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${{") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("}}").expect("closed expression") + at;
        let expression = rest[at + 3..end].trim();
        let value = values.get(expression).unwrap_or_else(|| {
            panic!("the step uses `{expression}`, which this test does not set")
        });
        out.push_str(value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The inputs at their defaults, and `changes`.
fn with_inputs(changes: &[(&str, &str)]) -> HashMap<String, String> {
    let action = action();
    let mut values = HashMap::new();
    for (name, spec) in action["inputs"].as_hash().unwrap() {
        let default = spec["default"].as_str().unwrap_or("");
        values.insert(
            format!("inputs.{}", name.as_str().unwrap()),
            default.to_string(),
        );
    }
    for (name, value) in changes {
        values.insert(name.to_string(), value.to_string());
    }
    values
}

/// `ROOT/bin/conformance` for the run step: the harness built for this test (wrapped to drop
/// the options still PENDING while its `--help` lacks them).
fn installed(scratch: &Path) -> String {
    let root = scratch.join("harness");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    let exe = assert_cmd::cargo::cargo_bin("conformance");
    let shown = help("server");
    let dropped: Vec<&str> = PENDING
        .iter()
        .filter(|o| !shown.contains(*o))
        .map(|o| o.split(' ').next().unwrap())
        .collect();
    let mut script =
        "#!/usr/bin/env bash\nargs=()\nwhile [ $# -gt 0 ]; do\n  case \"$1\" in\n".to_string();
    for flag in dropped {
        script.push_str(&format!("    {flag}) shift 2; continue ;;\n"));
    }
    script.push_str(&format!(
        "  esac\n  args+=(\"$1\"); shift\ndone\nexec {} \"${{args[@]}}\"\n",
        exe.display()
    ));
    let bin = root.join("bin/conformance");
    std::fs::write(&bin, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    root.display().to_string()
}

#[test]
fn the_cache_key_follows_the_ref_and_the_sources() {
    let scratch = Scratch::new("key");
    let values = with_inputs(&[("github.action_ref", "v1.2.3")]);
    let first = run_step("key", &values, &scratch.0);
    assert_eq!(first.code, 0, "{}", first.stdout);
    let key = &first.outputs["key"];
    let hash = key
        .strip_prefix("conformance-Linux-X64-v1.2.3-")
        .expect(key);
    assert!(
        hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{key}"
    );
    assert_eq!(
        run_step("key", &values, &scratch.0).outputs["key"],
        *key,
        "the same sources, the same key"
    );
    let local = run_step(
        "key",
        &with_inputs(&[("github.action_ref", "")]),
        &scratch.0,
    );
    assert!(local.outputs["key"].starts_with("conformance-Linux-X64-local-"));
    assert_eq!(
        first.outputs["root"],
        scratch.0.join("conformance-harness").display().to_string()
    );
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one run, then every report it wrote, read in turn"
)]
fn a_run_writes_the_reports_the_summary_and_the_verdict() {
    let scratch = Scratch::new("run");
    let root = installed(&scratch.0);
    let server = format!(
        "{} reference-server",
        assert_cmd::cargo::cargo_bin("conformance").display()
    );
    let mut values = with_inputs(&[
        ("inputs.command", &server),
        ("inputs.filter", "server/cancel-unknown-id"),
        ("inputs.protocol-version", "2025-11-25"),
        ("steps.key.outputs.root", &root),
    ]);
    let ran = run_step("run", &values, &scratch.0);
    assert_eq!(
        ran.outputs.get("exit-code").map(String::as_str),
        Some("0"),
        "{}",
        ran.stdout
    );
    let reports = scratch.0.join("conformance-report");
    for file in [
        "report.json",
        "junit.xml",
        "transcripts/server/cancel-unknown-id.mcpt",
    ] {
        assert!(reports.join(file).exists(), "no {file}: {}", ran.stdout);
    }
    values.insert("steps.run.outputs.exit-code".into(), "0".into());
    let summary = run_step("summary", &values, &scratch.0);
    assert_eq!(summary.code, 0, "{}", summary.stdout);
    if which("jq") {
        assert!(
            summary
                .summary
                .contains("### MCP conformance (server): passed"),
            "{}",
            summary.summary
        );
        assert!(
            summary.summary.contains("| 1 | 0 | 0 | 0 | 0 |"),
            "{}",
            summary.summary
        );
        assert_eq!(summary.outputs["pass"], "1");
        assert_eq!(summary.outputs["fail"], "0");
    } else {
        assert!(
            summary.summary.contains("install jq"),
            "{}",
            summary.summary
        );
    }
    assert_eq!(run_step("Verdict", &values, &scratch.0).code, 0);

    // A stale baseline entry fails the run: exit code 1, the case in the summary's table.
    std::fs::write(scratch.0.join("baseline.txt"), "server/cancel-unknown-id\n").unwrap();
    values.insert("inputs.baseline".into(), "baseline.txt".into());
    let ran = run_step("run", &values, &scratch.0);
    assert_eq!(
        ran.outputs.get("exit-code").map(String::as_str),
        Some("1"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("conformance server --baseline baseline.txt")
            || ran.stdout.contains("--baseline baseline.txt"),
        "{}",
        ran.stdout
    );
    values.insert("steps.run.outputs.exit-code".into(), "1".into());
    let summary = run_step("summary", &values, &scratch.0);
    if which("jq") {
        assert!(
            summary
                .summary
                .contains("### MCP conformance (server): failed"),
            "{}",
            summary.summary
        );
        assert!(
            summary
                .summary
                .contains("| `server/cancel-unknown-id` | 2025-11-25 | pass (stale) | "),
            "{}",
            summary.summary
        );
    }
    let verdict = run_step("Verdict", &values, &scratch.0);
    assert_eq!(verdict.code, 1);
    assert!(verdict
        .stdout
        .contains("::error title=MCP conformance::a case failed"));
}

#[test]
fn inputs_of_the_wrong_role_are_refused() {
    let scratch = Scratch::new("refused");
    let root = installed(&scratch.0);
    for (changes, said) in [
        (
            vec![
                ("inputs.role", "client"),
                ("inputs.url", "http://127.0.0.1:1/mcp"),
            ],
            "url and target-file are for servers",
        ),
        (
            vec![("inputs.transport", "http")],
            "transport is for clients",
        ),
        (
            vec![("inputs.role", "proxy")],
            "role must be server or client, not 'proxy'",
        ),
    ] {
        let mut values = with_inputs(&changes);
        values.insert("steps.key.outputs.root".into(), root.clone());
        let ran = run_step("run", &values, &scratch.0);
        assert_eq!(
            ran.code, 0,
            "the step leaves failing to the verdict: {}",
            ran.stdout
        );
        assert_eq!(ran.outputs.get("exit-code").map(String::as_str), Some("2"));
        assert!(
            ran.stdout
                .contains(&format!("::error title=MCP conformance::{said}")),
            "{}",
            ran.stdout
        );
        values.insert("steps.run.outputs.exit-code".into(), "2".into());
        assert_eq!(run_step("Verdict", &values, &scratch.0).code, 2);
    }
}

fn which(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}
