//! The cancellation cookbook as a program.
//!
//! Starts a server, calls `work`, cancels it (after its "Started" progress,
//! or at a deadline with `--deadline-ms`), then calls `ping` on the same
//! server to show that cancelling one request leaves the server running.
//! With `--task` the work runs as a task and is cancelled the way tasks are,
//! with `tasks/cancel`; the output is the same.

mod task;

use crate::{CallError, Client, ClientOptions, ConnectError, Progress, RequestOptions};
use serde_json::json;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Hidden flag: run the reference server in this process instead.
pub const SERVE_FLAG: &str = "--serve";

const USAGE: &str = "usage: reference-client [--task] [--deadline-ms N] [--timeout-ms N] [--protocol-version V] [--url URL | -- <server argv...>]";

struct Args {
    deadline: Option<Duration>,
    /// The deadline of each request (the library's `request_timeout`).
    timeout: Option<Duration>,
    /// A Streamable HTTP endpoint to use instead of starting a server.
    url: Option<String>,
    server: Vec<OsString>,
    /// Run `work` as a task, cancelled with `tasks/cancel`.
    task: bool,
    /// The protocol version to speak (the library's `protocol_version`).
    version: Option<String>,
}

fn millis(name: &str, value: Option<OsString>) -> Result<Duration, String> {
    let value = value.ok_or_else(|| format!("{name} needs a number of milliseconds"))?;
    value
        .to_str()
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{name}: {value:?} is not a whole number of milliseconds"))
}

fn parse_args(mut args: impl Iterator<Item = OsString>) -> Result<Args, String> {
    let mut deadline = None;
    let mut timeout = None;
    let mut url = None;
    let mut server = Vec::new();
    let mut task = false;
    let mut version = None;
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--") => {
                server.extend(args.by_ref());
                if server.is_empty() {
                    return Err("nothing follows --; give the server's argv after it".into());
                }
            }
            Some("--deadline-ms") => deadline = Some(millis("--deadline-ms", args.next())?),
            Some("--timeout-ms") => timeout = Some(millis("--timeout-ms", args.next())?),
            Some("--task") => task = true,
            Some("--protocol-version") => {
                let value = args.next().and_then(|v| v.into_string().ok());
                match value {
                    Some(v) if crate::era::is_known(&v) => version = Some(v),
                    _ => {
                        return Err(format!(
                            "--protocol-version needs one of {}",
                            crate::KNOWN_VERSIONS.join(", ")
                        ))
                    }
                }
            }
            Some("--url") => {
                let value = args
                    .next()
                    .ok_or("--url needs the server's MCP endpoint URL")?;
                let value = value
                    .into_string()
                    .map_err(|v| format!("--url: {v:?} is not valid text"))?;
                url = Some(value);
            }
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    if url.is_some() && !server.is_empty() {
        return Err("give either --url or a server argv after --, not both".into());
    }
    Ok(Args {
        deadline,
        timeout,
        url,
        server,
        task,
        version,
    })
}

/// The server to start when none is given: the `reference-server` binary
/// next to this executable, or else this executable re-run with
/// [`SERVE_FLAG`] (which `cargo run -p reference-client` relies on, since
/// building one package does not build another package's binary).
fn default_server() -> Result<Vec<OsString>, String> {
    let me = std::env::current_exe()
        .map_err(|e| format!("cannot locate this executable ({e}); pass the server after --"))?;
    let sibling: Option<PathBuf> = me
        .parent()
        .map(|dir| dir.join(format!("reference-server{}", std::env::consts::EXE_SUFFIX)));
    Ok(match sibling {
        Some(path) if path.is_file() => vec![path.into()],
        _ => vec![me.into(), SERVE_FLAG.into()],
    })
}

/// The whole client program.
pub fn main_entry() -> ExitCode {
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().is_some_and(|a| a == SERVE_FLAG) {
        return reference_server::main_entry();
    }
    if args.peek().is_some_and(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let mut args = match parse_args(args) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("reference-client: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if args.server.is_empty() && args.url.is_none() {
        match default_server() {
            Ok(server) => args.server = server,
            Err(e) => {
                eprintln!("reference-client: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!(
                "reference-client: cannot start the async runtime: {e}; check process limits"
            );
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reference-client: {e}");
            ExitCode::FAILURE
        }
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

async fn run(args: Args) -> Result<(), String> {
    let mut options = ClientOptions::default();
    if let Some(timeout) = args.timeout {
        options.request_timeout = timeout;
    }
    // Tasks carry progress in 2025-11-25 only (PRG-10; in 2026-07-28 they have none, PRG-11),
    // so the task variant cancels after "Started" in that version unless told another.
    options.protocol_version = match (&args.version, args.task) {
        (Some(version), _) => Some(version.clone()),
        (None, true) => Some(crate::PROTOCOL_VERSION.into()),
        (None, false) => None,
    };
    let connected = match &args.url {
        Some(url) => Client::connect_http(url, options).await,
        None => Client::spawn(&args.server, options).await,
    };
    let client = connected.map_err(|e| match (e, &args.url) {
        (ConnectError::Spawn(e), _) => e.to_string(),
        (e, Some(url)) => format!("cannot connect to {url}: {e}"),
        (e, None) => format!("cannot connect to {:?}: {e}", args.server[0]),
    })?;
    let outcome = match args.task {
        true => task::cookbook(&client, args.deadline, args.url.is_some()).await,
        false => cookbook(&client, args.deadline).await,
    };
    let closed = client.close().await;
    outcome?;
    match closed {
        Ok(Some(status)) if !status.success() => Err(format!(
            "server exited with {status} after stdin was closed"
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("cannot shut the server down: {e}")),
    }
}

async fn cookbook(client: &Client, deadline: Option<Duration>) -> Result<(), String> {
    let cancellation = CancellationToken::new();
    let call = match deadline {
        None => {
            let canceller = cancellation.clone();
            let mut on_progress = move |update: &Progress| {
                let message = update.message.as_deref().unwrap_or_default();
                say(&format!("Client: cancel requested after {message}"));
                canceller.cancel();
            };
            let options = RequestOptions::default()
                .progress(&mut on_progress)
                .cancel(cancellation);
            client.call_tool("work", json!({}), options).await
        }
        Some(deadline) => {
            let canceller = cancellation.clone();
            let timer = tokio::spawn(async move {
                tokio::time::sleep(deadline).await;
                canceller.cancel();
            });
            let options = RequestOptions::default().cancel(cancellation);
            let call = client.call_tool("work", json!({}), options).await;
            timer.abort();
            call
        }
    };
    match call {
        Err(CallError::Cancelled) => say("Client: call canceled"),
        Ok(result) => {
            return Err(format!(
                "work returned instead of being cancelled: {result:?}"
            ))
        }
        Err(CallError::TimedOut(after)) => {
            return Err(format!(
                "the server sent neither progress nor an answer for `work` within {after:?}, so the call was cancelled and the connection closed; the server may be hung or stopped (SIGSTOP), or it sends no progress (progress is optional, and impossible over HTTP with JSON answers); --deadline-ms N cancels at a deadline instead, --timeout-ms N sets how long to wait"
            ))
        }
        Err(e) => return Err(format!("work failed: {e}")),
    }
    still_available(client).await
}

/// Calls the `ping` tool after the cancel and prints what it says.
async fn still_available(client: &Client) -> Result<(), String> {
    let ping = client
        .call_tool("ping", json!({}), RequestOptions::default())
        .await
        .map_err(|e| match e {
            CallError::TimedOut(after) => format!(
                "the server did not answer `ping` within {after:?} after `work` was cancelled, so the connection closed; cancelling one request may have hung the server; --timeout-ms N sets how long to wait"
            ),
            e => format!("ping after the cancellation failed: {e}"),
        })?;
    say(&ping.text());
    Ok(())
}
