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
