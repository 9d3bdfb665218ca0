//! `conformance::libtest` as a server's repository uses it: this binary is, by its first
//! argument, the user's test file (`--runner`, the few lines of docs/cargo-test.md), a
//! sloppy server (`--sloppy-server`), or, without one, the trials that run the first against
//! the reference server or the second with libtest's arguments and check what it says and
//! how it exits.

use assert_cmd::Command;
use libtest_mimic::{Arguments, Failed, Trial};
use std::io::{BufRead, Write};
use std::path::PathBuf;

const RUNNER: &str = "--runner";
const SLOPPY: &str = "--sloppy-server";

fn main() -> std::process::ExitCode {
    let mut argv = std::env::args().skip(1);
    match argv.next().as_deref() {
        Some(RUNNER) => runner(),
        Some(SLOPPY) => sloppy_server(),
        _ => libtest_mimic::run(&Arguments::from_args(), trials()).exit_code(),
    }
}

/// The user's test file: the server from `SERVER` (words), over HTTP at `URL` if set, a
/// baseline from `BASELINE`.
fn runner() -> std::process::ExitCode {
    // What follows `--runner` is libtest's.
    let args = Arguments::from_iter(std::env::args().skip(1));
    let server: Vec<String> = std::env::var("SERVER")
        .unwrap()
        .split(' ')
        .map(str::to_string)
        .collect();
    let mut server = conformance::libtest::Server::command(server);
    if let Ok(url) = std::env::var("URL") {
        server = server.over_http(url);
    }
    if let Ok(path) = std::env::var("BASELINE") {
        server = server.baseline(path);
    }
    server.run_with(args)
}

/// A server that opens sessions correctly and answers every other request with an empty
/// result: it fails `unknown-method` (a result, not an error), and speaks 2025-11-25 only.
fn sloppy_server() -> std::process::ExitCode {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id") else {
            continue;
        };
        let result = if message["method"] == "initialize" {
            serde_json::json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "sloppy", "version": "0"}
            })
        } else {
            serde_json::json!({})
        };
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
    }
    std::process::ExitCode::SUCCESS
}

fn reference() -> String {
    format!("{} reference-server", env!("CARGO_BIN_EXE_conformance"))
}

fn sloppy() -> String {
    format!("{} {SLOPPY}", std::env::current_exe().unwrap().display())
}

/// The user's test binary against `server`, with libtest's `args`.
fn user(server: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.arg(RUNNER)
        .args(args)
        .env("SERVER", server)
        .env_remove("BASELINE")
        .env_remove("URL")
        .env_remove("CONFORMANCE_PROTOCOL_VERSION")
        .env_remove("CONFORMANCE_BLESS");
    cmd
}

/// A baseline file listing `ids`, kept for the life of the trial.
struct Listed(PathBuf);

impl Listed {
    fn new(name: &str, ids: &[&str]) -> Listed {
        let path = std::env::temp_dir().join(format!(
            "conformance-libtest-{name}-{}.txt",
            std::process::id()
        ));
        std::fs::write(&path, format!("# known\n{}\n", ids.join("\n"))).unwrap();
        Listed(path)
    }
}

impl Drop for Listed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

type Check = fn() -> Result<(), Failed>;

fn output(cmd: &mut Command) -> (Option<i32>, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn expect(what: bool, said: &str, stdout: &str, stderr: &str) -> Result<(), Failed> {
    if what {
        Ok(())
    } else {
        Err(format!("{said}\n--- stdout\n{stdout}\n--- stderr\n{stderr}").into())
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "one arm per scenario of the cargo test wrapper, read as a table"
)]
fn trials() -> Vec<Trial> {
    let checks: [(&str, Check); 9] = [
        ("list_names_cases_and_starts_nothing", || {
            let (code, out, err) = output(&mut user("/nonexistent/server", &["--list"]));
            expect(
                code == Some(0)
                    && out.contains("[must] server/cancel-unknown-id: test")
                    && out.contains("[should] server/malformed-input: test")
                    && !out.contains("cannot"),
                "--list lists every case by id and level without starting the server",
                &out,
                &err,
            )
        }),
        ("a_filter_runs_its_cases", || {
            let (code, out, err) = output(&mut user(&reference(), &["server/cancel-unknown-id"]));
            expect(
                code == Some(0)
                    && out.contains("test [must] server/cancel-unknown-id ... ok")
                    && out.contains("1 passed; 0 failed")
                    && out.contains("conformance: 1 of 1 tests ran a case against"),
                "one case runs against the reference server and passes",
                &out,
                &err,
            )
        }),
        ("a_server_over_http", || {
            let server = format!("{} --http 127.0.0.1:{{port}}", reference());
            let (code, out, err) = output(
                user(&server, &["http-version-header"]).env("URL", "http://127.0.0.1:{port}/mcp"),
            );
            expect(
                code == Some(0)
                    && out.contains("test [must] server/http-version-header ... ok")
                    && out.contains("against http://127.0.0.1:{port}/mcp"),
                "the reference server over Streamable HTTP, a fresh port per case",
                &out,
                &err,
            )
        }),
        ("a_failure_fails_its_test_with_the_diff", || {
            let (code, out, err) =
                output(&mut user(&sloppy(), &["server/unknown-method", "--exact"]));
            expect(
                code == Some(101)
                    && out.contains("test [must] server/unknown-method ... FAILED")
                    && out.contains("fail at 2025-11-25")
                    && out.contains("first difference at /error")
                    && out.contains("cargo test --test libtest -- server/unknown-method"),
                "the sloppy server fails unknown-method, with the explanation and how to rerun it",
                &out,
                &err,
            )
        }),
        (
            "a_known_failure_is_ignored_and_checked_with_ignored",
            || {
                let listed = Listed::new("known", &["server/unknown-method"]);
                let run = |args: &[&str]| output(user(&sloppy(), args).env("BASELINE", &listed.0));
                let (code, out, err) = run(&["server/unknown-method", "--exact"]);
                expect(
                    code == Some(0) && out.contains("server/unknown-method ... ignored"),
                    "a listed failure is an ignored test",
                    &out,
                    &err,
                )?;
                let (code, out, err) = run(&["server/unknown-method", "--exact", "--ignored"]);
                expect(
                    code == Some(0)
                        && out.contains("server/unknown-method ... ok")
                        && out.contains("1 baseline case(s) still fail, as the baseline expects"),
                    "--ignored runs it, and it still fails as listed",
                    &out,
                    &err,
                )
            },
        ),
        ("a_stale_baseline_entry_fails_with_ignored", || {
            let listed = Listed::new("stale", &["server/cancel-unknown-id"]);
            let (code, out, err) = output(
                user(&reference(), &["server/cancel-unknown-id", "--ignored"])
                    .env("BASELINE", &listed.0),
            );
            expect(
                code == Some(101)
                    && out.contains("server/cancel-unknown-id ... FAILED")
                    && out.contains(":2: stale baseline entry: server/cancel-unknown-id passes now; delete that line"),
                "a listed case that passes fails, naming the line to delete",
                &out,
                &err,
            )
        }),
        ("the_version_comes_from_the_environment", || {
            let (code, out, err) = output(
                user("/nonexistent/server", &["--list"]).env("CONFORMANCE_PROTOCOL_VERSION", "all"),
            );
            expect(
                code == Some(0)
                    && out.contains("server/cancel-unknown-id [2025-11-25]: test")
                    && out.contains("server/cancel-unknown-id [2024-11-05]: test"),
                "with all, a test per case and version",
                &out,
                &err,
            )?;
            let (code, out, err) = output(
                user("/nonexistent/server", &["--list"])
                    .env("CONFORMANCE_PROTOCOL_VERSION", "banana"),
            );
            expect(
                code == Some(2)
                    && err
                        .contains("CONFORMANCE_PROTOCOL_VERSION: `banana` is no protocol version"),
                "a bad version is a usage error naming the variable",
                &out,
                &err,
            )
        }),
        ("an_unspoken_version_verifies_nothing_and_fails", || {
            let (code, out, err) = output(
                user(&sloppy(), &["server/unknown-method", "--exact"])
                    .env("CONFORMANCE_PROTOCOL_VERSION", "2026-07-28"),
            );
            expect(
                code == Some(1)
                    && out.contains(
                        "server/unknown-method ... ignored (the target does not speak 2026-07-28",
                    )
                    && err.contains("nothing was verified at 2026-07-28"),
                "every case skipped at a version asked for by name fails the run",
                &out,
                &err,
            )
        }),
        (
            "blessing_needs_a_cases_folder_and_a_server_that_starts",
            || {
                let (code, out, err) = output(
                    user(&reference(), &["server/cancel-unknown-id"])
                        .env("CONFORMANCE_BLESS", "1")
                        .env_remove("CI"),
                );
                expect(
                    code == Some(2) && err.contains("give their folder with .cases(DIR)"),
                    "blessing the built-in cases is refused",
                    &out,
                    &err,
                )?;
                let (code, out, err) = output(&mut user(
                    "/nonexistent/server",
                    &["server/cancel-unknown-id"],
                ));
                expect(
                    code == Some(101)
                        && out.contains("cannot ask the server which versions it speaks"),
                    "a server that cannot start fails its tests",
                    &out,
                    &err,
                )
            },
        ),
    ];
    checks
        .into_iter()
        .map(|(name, check)| Trial::test(name, check))
        .collect()
}
