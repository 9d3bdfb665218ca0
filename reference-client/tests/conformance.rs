//! Every client case of `conformance` against this package's program in adapter mode, one
//! libtest trial per case, every level enforced: the reference client must be clean.
//!
//! The server the client starts is this test binary re-run as the relay, so no other
//! package's binary is needed. Two deliberately broken clients (this binary again, speaking
//! raw JSON) check that the harness catches what it claims to catch.

use conformance::case::{Case, Role};
use conformance::engine::client::run_client_case;
use conformance::engine::{Options, Report};
use conformance::outcome::{Outcome, Severity};
use conformance::transport::process::Launch;
use conformance::transport::relay::{run_if_relay, RELAY_FLAG};
use conformance::{harness, report};
use libtest_mimic::{Arguments, Failed, Trial};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Set in the environment of this binary when it plays a broken client.
const BROKEN: &str = "REFERENCE_CLIENT_TEST_BROKEN";

fn relay() -> Vec<String> {
    let me = std::env::current_exe().expect("the test binary knows its path");
    vec![me.display().to_string(), RELAY_FLAG.into()]
}

fn run(case: &Case, launch: &Launch) -> Result<Report, Failed> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(run_client_case(case, launch, &relay(), &Options::default()))?)
}

fn reference_trial(case: Case, loaded: bool) -> Trial {
    let kind = case.level.as_str();
    let name = if loaded {
        format!("loaded/{}", case.id)
    } else {
        case.id.clone()
    };
    Trial::test(name, move || {
        // Every core busy: the reference client must stay clean on a loaded machine too.
        let _load = loaded.then(harness::saturate_cpus);
        let launch = Launch {
            argv: vec![env!("CARGO_BIN_EXE_reference-client").into()],
            env: vec![],
            cwd: None,
        };
        let report = run(&case, &launch)?;
        let next = format!(
            "run it by hand: cargo run -p conformance -- client --cases cases --dump /tmp/dump {} -- target/debug/reference-client",
            case.id
        );
        Ok(harness::expect_clean(&case, &report, false, &next)?)
    })
    .with_kind(kind)
}

/// A broken client must get a finding on `requirement` of `severity` in `case`.
fn broken_trial(
    mode: &'static str,
    case: Case,
    requirement: &'static str,
    severity: Severity,
) -> Trial {
    broken_trial_saying(mode, case, requirement, severity, "")
}

/// The same, with a finding whose message contains `saying`.
fn broken_trial_saying(
    mode: &'static str,
    case: Case,
    requirement: &'static str,
    severity: Severity,
    saying: &'static str,
) -> Trial {
    Trial::test(format!("broken/{mode}"), move || {
        let me = std::env::current_exe()?;
        let launch = Launch {
            argv: vec![me.display().to_string()],
            env: vec![(BROKEN.into(), mode.into())],
            cwd: None,
        };
        let report = run(&case, &launch)?;
        let caught = report.findings.iter().any(|f| {
            f.severity == severity && f.requirement() == requirement && f.message.contains(saying)
        });
        if report.outcome != Outcome::Pass && caught {
            return Ok(());
        }
        Err(format!(
            "expected a {severity:?} on {requirement}, got {}\n{}",
            report.outcome,
            report::explain(&case, &report, "fix the client engine's standing rules")
        )
        .into())
    })
}

/// A client that speaks raw JSON and gets cancellation wrong on purpose.
fn broken_client(mode: &str) {
    let server: Vec<String> = serde_json::from_str(
        &std::env::var("CONFORMANCE_SERVER").expect("the harness sets CONFORMANCE_SERVER"),
    )
    .expect("CONFORMANCE_SERVER is a JSON array of strings");
    let mut child = Command::new(&server[0])
        .args(&server[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the relay starts");
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut send = |line: &str| {
        let _ = writeln!(stdin, "{line}");
        let _ = stdin.flush();
    };
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"broken","version":"0"}}}"#,
    );
    match mode {
        "cancels-initialize" => {
            send(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"too slow"}}"#,
            );
        }
        "string-request-id" => {
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
            send(
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"p"}}}"#,
            );
            send(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"2"}}"#,
            );
        }
        "cancels-at-once" => {
            // A deadline of 300 ms, cancelled after none.
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
            send(
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{}}}"#,
            );
            send(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#,
            );
        }
        "cancels-after-answer" => {
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
            send(
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"p"}}}"#,
            );
            loop {
                line.clear();
                if stdout.read_line(&mut line).unwrap_or(0) == 0 || line.contains(r#""id":2"#) {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(400));
            send(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#,
            );
        }
        other => panic!("unknown broken mode {other}"),
    }
    std::thread::sleep(Duration::from_millis(300));
    drop(stdin);
    let _ = child.wait();
}

fn main() {
    run_if_relay();
    if let Ok(mode) = std::env::var(BROKEN) {
        broken_client(&mode);
        return;
    }
    let args = Arguments::from_args();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cases");
    let cases = harness::cases(&dir, Role::Client);
    let find = |id: &str| {
        cases
            .iter()
            .find(|c| c.id == id)
            .cloned()
            .unwrap_or_else(|| panic!("case {id} is missing"))
    };
    let mut trials = vec![
        broken_trial(
            "cancels-initialize",
            find("client/cancel-initialize-never-sent"),
            "CAN-04",
            Severity::Fail,
        ),
        broken_trial(
            "string-request-id",
            find("client/client-cancel-after-progress"),
            "CAN-01",
            Severity::Fail,
        ),
        broken_trial_saying(
            "cancels-at-once",
            find("client/client-cancel-on-deadline"),
            "case",
            Severity::Warn,
            "allows 50 to 550 ms",
        ),
        broken_trial(
            "cancels-after-answer",
            find("client/client-progress-tolerance"),
            "CAN-03",
            Severity::Warn,
        ),
    ];
    trials.extend(cases.iter().cloned().map(|c| reference_trial(c, false)));
    trials.extend(cases.iter().cloned().map(|c| reference_trial(c, true)));
    libtest_mimic::run(&args, trials).exit();
}
