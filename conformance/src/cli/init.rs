//! `conformance init`: the command line around [`conformance::init`]: which server, where the
//! file goes, what the console says as init goes.

use crate::args::InitArgs;
use crate::console::say;
use conformance::case::TransportKind;
use conformance::init::draft::{self, Reach};
use conformance::init::session::{StartHttp, StartStdio};
use conformance::init::{inspect, Ask, InspectError, Inspection, Seen};
use conformance::transport::http::{HttpTarget, PORT};
use conformance::transport::process::Launch;
use conformance::{suite, target_file};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) fn init(args: InitArgs) -> ExitCode {
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Why init wrote no target file; each message is what the command line prints after
/// `error: `.
#[derive(Debug, thiserror::Error)]
enum InitError {
    /// A URL with `{port}` that no started server can fill.
    #[error("`{url}` has `{PORT}`, which only a server init starts can listen on; give its command after `--`, or the port it listens on")]
    PortWithoutCommand {
        /// The URL, as given.
        url: String,
    },
    /// No server given.
    #[error("give the server: its command after `--` (stdio), or --url (Streamable HTTP), or both; e.g. `conformance init -- node server.js`")]
    NoServer,
    /// The output file exists and --force was not given.
    #[error("{} exists; give --force to overwrite it, or -o another path", .0.display())]
    Exists(PathBuf),
    /// The output file was created by someone else while init ran.
    #[error("{} appeared while init ran; give --force to overwrite it", .0.display())]
    Appeared(PathBuf),
    /// The output file cannot be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The harness could not start its async runtime.
    #[error("cannot start a tokio runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The server could not be inspected.
    #[error(transparent)]
    Inspect(#[from] InspectError),
    /// What init wrote does not load: a bug.
    #[error("init wrote a target file that does not load ({0}); this is a bug in conformance, please report it")]
    Unloadable(#[source] target_file::LoadError),
    /// The embedded cases do not parse: a bug.
    #[error("the embedded cases do not parse ({0} error(s)); this is a bug in conformance")]
    BrokenCases(usize),
}

/// The server as the command line gives it.
enum Given {
    Stdio(Launch),
    Http(HttpTarget),
}

fn given(args: &InitArgs) -> Result<Given, InitError> {
    let launch = (!args.argv.is_empty()).then(|| Launch::argv(args.argv.clone()));
    match (&args.url, launch) {
        (Some(url), launch) => {
            if url.contains(PORT) && launch.is_none() {
                return Err(InitError::PortWithoutCommand { url: url.clone() });
            }
            Ok(Given::Http(HttpTarget {
                url: url.clone(),
                launch,
            }))
        }
        (None, Some(launch)) => Ok(Given::Stdio(launch)),
        (None, None) => Err(InitError::NoServer),
    }
}

/// Inspects the server, writes the target file, checks that it loads, and says which cases
/// it unlocks.
fn run(args: &InitArgs) -> Result<(), InitError> {
    let given = given(args)?;
    let shown = args.output.display();
    if args.output.exists() && !args.force {
        return Err(InitError::Exists(args.output.clone()));
    }
    let inspection = inspect_given(&given, args)?;
    for tried in &args.tries {
        let candidate = inspection
            .roles
            .iter()
            .any(|r| r.tried.iter().any(|t| &t.candidate.tool == tried));
        if !candidate {
            say(format_args!(
                "note: --try {tried}: no role's candidate, so init did not call it"
            ));
        }
    }
    let reach = match &given {
        Given::Stdio(launch) => Reach::Stdio(launch),
        Given::Http(target) => Reach::Http(target),
    };
    write(args, &draft::target_file(reach, &inspection))?;
    target_file::load(&args.output).map_err(InitError::Unloadable)?;
    say(format_args!("wrote {shown}"));
    let cases = suite::embedded().map_err(|errors| InitError::BrokenCases(errors.len()))?;
    let transport = match given {
        Given::Stdio(_) => TransportKind::Stdio,
        Given::Http(_) => TransportKind::Http,
    };
    let unlocked = draft::unlocked(
        &cases,
        transport,
        &inspection.fixtures(),
        &inspection.tools,
        inspection.version,
        &inspection.opening,
    );
    for line in draft::unlocked_lines(&unlocked) {
        say(format_args!("{line}"));
    }
    say(format_args!(
        "next: read the notes in {shown}, then `conformance server --target {shown}`"
    ));
    Ok(())
}

/// Starts (or reaches) the server and inspects it, saying what it sees as it goes.
fn inspect_given(given: &Given, args: &InitArgs) -> Result<Inspection, InitError> {
    let ask = Ask {
        tries: args.tries.clone(),
        startup: args.startup_timeout,
        reply: args.reply_timeout,
    };
    let mut print = |seen: Seen<'_>| say_seen(seen, &args.tries);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(InitError::Runtime)?;
    let inspection = match given {
        Given::Stdio(launch) => runtime.block_on(inspect(
            &StartStdio {
                launch,
                patience: args.reply_timeout,
            },
            &ask,
            &mut print,
        )),
        Given::Http(target) => runtime.block_on(inspect(
            &StartHttp {
                target,
                patience: args.reply_timeout,
                startup: args.startup_timeout,
            },
            &ask,
            &mut print,
        )),
    }?;
    Ok(inspection)
}

/// Says what inspection has just seen: the server, its tools, a settled role.
fn say_seen(seen: Seen<'_>, tries: &[String]) {
    match seen {
        Seen::Opened(identity, version) => say(format_args!(
            "server: {}, protocol version {version}",
            identity.map_or_else(
                || "no serverInfo".to_string(),
                |i| format!("{} {}", i.name, i.version)
            )
        )),
        Seen::Tools(tools) => {
            for line in draft::tools_lines(tools, tries) {
                say(format_args!("{line}"));
            }
            say(format_args!("roles:"));
        }
        Seen::Role(role) => {
            for line in draft::role_lines(role) {
                say(format_args!("{line}"));
            }
        }
    }
}

/// Writes the file; without --force, only if it still does not exist.
fn write(args: &InitArgs, text: &str) -> Result<(), InitError> {
    let path = || args.output.clone();
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if args.force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(&args.output).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => InitError::Appeared(path()),
        _ => InitError::Write {
            path: path(),
            source: e,
        },
    })?;
    file.write_all(text.as_bytes())
        .map_err(|source| InitError::Write {
            path: path(),
            source,
        })
}
