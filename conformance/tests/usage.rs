//! Usage errors: each is refused before anything runs, with exit 2 and a sentence that names
//! what was wrong and what to write instead, however the option is spelled.

use assert_cmd::Command;
use std::time::Duration;

fn refused(args: &[&str], says: &str) {
    let output = Command::cargo_bin("conformance")
        .expect("built")
        .env_remove("CI")
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(says),
        "{args:?} should say `{says}`: {stderr}"
    );
    assert!(output.stdout.is_empty(), "{args:?} ran something");
}

#[test]
fn zero_jobs_are_refused() {
    refused(&["server", "--jobs", "0"], "0 is not in 1..=1024");
    refused(
        &["client", "--jobs", "0", "--", "true"],
        "0 is not in 1..=1024",
    );
}

#[test]
fn a_negative_duration_is_explained_whatever_the_spelling() {
    for args in [
        ["server", "--timeout", "-5"],
        ["server", "--timeout=-5", "--"],
        ["server", "--reply-timeout", "-1s"],
        ["server", "--startup-timeout", "-500ms"],
    ] {
        let args: Vec<&str> = args.into_iter().filter(|a| *a != "--").collect();
        refused(&args, "is negative; a duration is zero or more");
    }
    refused(&["server", "--timeout", "soon"], "`soon` is not a duration");
}

#[test]
fn a_cases_folder_without_cases_is_said_plainly() {
    let dir = std::env::temp_dir().join(format!("conformance-usage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let shown = dir.display().to_string();
    refused(
        &["server", "--cases", &shown],
        "no `*.mcpt` case files in this folder",
    );
    let output = Command::cargo_bin("conformance")
        .expect("built")
        .args(["list", "--cases", &shown])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("bug in case"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
    let missing = format!("{shown}-missing");
    refused(&["server", "--cases", &missing], "no such folder");
}

/// What every unknown `--protocol-version` is refused with, wherever the choice came from.
const UNKNOWN_VERSION: &str = "error: --protocol-version: `1999-01-01` is no protocol version the harness knows; give auto, all or one of 2024-11-05 2025-03-26 2025-06-18 2025-11-25 2026-07-28\n";

/// A scratch folder of this test binary, named `name`.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("conformance-usage-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn an_unknown_protocol_version_is_refused_from_the_command_line_and_a_target_file() {
    for args in [
        vec!["server", "--protocol-version", "1999-01-01"],
        vec!["client", "--protocol-version", "1999-01-01", "--", "true"],
    ] {
        refused(&args, UNKNOWN_VERSION);
    }
    let dir = scratch("target");
    let file = dir.join("target.json");
    std::fs::write(
        &file,
        r#"{"command": ["true"], "protocolVersion": "1999-01-01"}"#,
    )
    .expect("a target file");
    refused(
        &["server", "--target", &file.display().to_string()],
        UNKNOWN_VERSION,
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_case_header_with_an_unknown_or_no_version_is_refused_at_its_line() {
    let dir = scratch("versions");
    std::fs::create_dir_all(dir.join("server")).expect("a cases folder");
    let path = dir.join("server").join("x.mcpt");
    let shown = dir.display().to_string();
    for (versions, says) in [
        (
            " 2025-11-25 1999-01-01",
            "unknown protocol version `1999-01-01`; known: 2024-11-05 2025-03-26 2025-06-18 2025-11-25 2026-07-28, or an era: handshake, stateless",
        ),
        (
            "",
            "`@versions` names at least one protocol version or era (handshake, stateless)",
        ),
    ] {
        let text = format!("# i\n@requirement CAN-05\n@level must\n@versions{versions}\n> {{}}\n");
        std::fs::write(&path, text).expect("a case");
        let at = format!("{}:4: {says}", path.display());
        refused(&["server", "--cases", &shown], &at);
    }
    std::fs::remove_dir_all(&dir).ok();
}
