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

/// What the reference server run with `--verbose` says when a task is cancelled, and
/// nothing else: a `notifications/cancelled` for the `tools/call` or for the pending
/// `tasks/result` would add a line of its own ("ignored cancellation of request …",
/// "cancelled request …").
const ONE_TASK_CANCEL: &str =
    r#"^reference-server: cancelled task "[0-9a-f]{32}" \(tasks/cancel\)\n$"#;

fn verbose_server(cmd: &mut Command) -> &mut Command {
    let me = assert_cmd::cargo::cargo_bin("reference-client");
    cmd.arg("--").arg(me).args(["--serve", "--verbose"])
}

#[test]
fn task_variant_cancels_the_task_with_tasks_cancel_after_started() {
    let mut cmd = client();
    cmd.arg("--task");
    verbose_server(&mut cmd)
        .assert()
        .success()
        .stdout(predicate::eq(AFTER_PROGRESS))
        .stderr(predicate::str::is_match(ONE_TASK_CANCEL).unwrap());
}

#[test]
fn task_variant_cancels_the_task_at_the_deadline_in_both_eras() {
    for version in ["2025-11-25", "2026-07-28"] {
        let mut cmd = client();
        cmd.args([
            "--task",
            "--deadline-ms",
            "100",
            "--protocol-version",
            version,
        ]);
        verbose_server(&mut cmd)
            .assert()
            .success()
            .stdout(predicate::eq(AFTER_DEADLINE))
            .stderr(predicate::str::is_match(ONE_TASK_CANCEL).unwrap());
    }
}

#[test]
fn task_variant_refuses_where_work_would_not_be_a_cancellable_task() {
    // Before 2025-11-25 there are no tasks: a plain cancel must not pass for a task's.
    client()
        .args([
            "--task",
            "--deadline-ms",
            "100",
            "--protocol-version",
            "2025-06-18",
        ])
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(
            "`work` cannot run as a task in 2025-06-18; run without --task",
        ));
    // A 2026-07-28 task has no progress, so "Started" never comes: a deadline is needed.
    client()
        .args(["--task", "--protocol-version", "2026-07-28"])
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("add --deadline-ms N"));
    client()
        .args(["--task", "--protocol-version", "2099-01-01"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--protocol-version needs one of"));
}

/// The reference server over Streamable HTTP (`--serve --http`, verbose), killed when
/// dropped; its stderr lines after the first come through `lines`.
struct HttpServer {
    child: std::process::Child,
    url: String,
    lines: std::sync::mpsc::Receiver<String>,
}

impl HttpServer {
    fn start() -> Self {
        use std::io::BufRead;
        let mut child =
            std::process::Command::new(assert_cmd::cargo::cargo_bin("reference-client"))
                .args(["--serve", "--http", "127.0.0.1:0", "--verbose"])
                .env_remove("CONFORMANCE_ACTIONS")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start the reference server over HTTP");
        let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        let (tx, lines) = std::sync::mpsc::channel();
        let first = stderr.next().expect("a line").expect("readable");
        std::thread::spawn(move || {
            for line in stderr.map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let url = first
            .rsplit(' ')
            .next()
            .expect("listening on URL")
            .to_owned();
        assert!(url.starts_with("http://"), "{first}");
        Self { child, url, lines }
    }
}

impl HttpServer {
    /// The server's stderr lines up to the first that contains `needle`, which must come
    /// within 10 s.
    fn lines_until(&self, needle: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(std::time::Duration::from_secs(10)) {
                Ok(line) if line.contains(needle) => {
                    seen.push(line);
                    return seen;
                }
                Ok(line) => seen.push(line),
                Err(e) => panic!("no line with {needle:?} ({e}); the server said {seen:?}"),
            }
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn task_variant_over_http_cancels_the_task_at_the_deadline_in_both_eras() {
    let server = HttpServer::start();
    for version in ["2025-11-25", "2026-07-28"] {
        client()
            .args([
                "--task",
                "--deadline-ms",
                "100",
                "--protocol-version",
                version,
            ])
            .args(["--url", &server.url])
            .assert()
            .success()
            .stdout(predicate::eq(AFTER_DEADLINE))
            .stderr(predicate::str::is_empty());
        let logged = server.lines_until("(tasks/cancel)");
        assert!(
            !logged.iter().any(|line| line.contains("cancelled request")),
            "{version}: a request was cancelled, not only the task: {logged:?}"
        );
    }
    // Over HTTP a 2025-11-25 task's "Started" may come before any stream can carry it.
    client()
        .args(["--task", "--url", &server.url])
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("add --deadline-ms N"));
}
