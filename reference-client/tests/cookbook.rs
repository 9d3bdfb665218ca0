//! The cookbook program prints exactly the documented lines.

use assert_cmd::Command;
use predicates::prelude::*;

const AFTER_PROGRESS: &str =
    "Client: cancel requested after Started\nClient: call canceled\nServer: still available\n";
const AFTER_DEADLINE: &str = "Client: call canceled\nServer: still available\n";

fn client() -> Command {
    let mut cmd = Command::cargo_bin("reference-client").expect("reference-client binary");
    cmd.timeout(std::time::Duration::from_secs(30));
    cmd
}

#[test]
fn default_run_cancels_after_started_then_pings() {
    client()
        .assert()
        .success()
        .stdout(predicate::eq(AFTER_PROGRESS))
        .stderr(predicate::str::is_empty());
}

#[test]
fn deadline_variation_cancels_at_the_deadline_then_pings() {
    client()
        .args(["--deadline-ms", "100"])
        .assert()
        .success()
        .stdout(predicate::eq(AFTER_DEADLINE))
        .stderr(predicate::str::is_empty());
}

#[test]
fn explicit_server_argv_is_used() {
    let me = assert_cmd::cargo::cargo_bin("reference-client");
    client()
        .arg("--")
        .arg(&me)
        .arg("--serve")
        .assert()
        .success()
        .stdout(predicate::eq(AFTER_PROGRESS));
    client()
        .args(["--deadline-ms", "100", "--"])
        .arg(&me)
        .args(["--serve", "--verbose"])
        .assert()
        .success()
        .stdout(predicate::eq(AFTER_DEADLINE))
        .stderr(predicate::str::contains("cancelled request"));
}

#[test]
fn usage_errors_exit_2() {
    client()
        .args(["--deadline-ms", "soon"])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("--deadline-ms"));
    client().arg("--").assert().code(2);
    client().arg("--bogus").assert().code(2);
}

#[test]
fn missing_server_fails_with_a_clear_message() {
    client()
        .args(["--", "/nonexistent/mcp-server"])
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("cannot start server"));
}
