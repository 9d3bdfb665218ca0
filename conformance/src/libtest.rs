//! `cargo test` in a server's own repository: every case against the server as one libtest
//! test per case, with a test file of a few lines (`[[test]] harness = false`):
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     conformance::libtest::Server::command(["target/debug/my-server", "--stdio"])
//!         .baseline("conformance-baseline.txt")
//!         .run()
//! }
//! ```
//!
//! It decides as the command line does (the same engine, version plan and gate):
//!
//! - a test is named after its case (`server/cancel-unknown-id`; with `protocol_version("all")`
//!   one test per version, `server/cancel-unknown-id [2025-11-25]`), so libtest's filters,
//!   `--exact`, `--skip` and `--list` work on case ids; its kind is the case's level;
//! - a failure fails the test with the explanation (the diff, the transcript, the target's
//!   stderr); a warning (a broken SHOULD) passes unless [`Server::strict`], and is listed
//!   after the run; a case that does not apply to the server is ignored with the reason;
//! - the cases a baseline lists are known failures, marked ignored:
//!   `cargo test -- --ignored` runs them, and one that passes now fails as a stale entry
//!   (delete its line);
//! - `CONFORMANCE_PROTOCOL_VERSION` overrides [`Server::protocol_version`] (`auto`, `all` or
//!   a version), and `CONFORMANCE_BLESS=1` rewrites the expected lines of the cases in
//!   [`Server::cases`] that differ (refused when `CI` is set);
//! - nothing is started before a test runs: `--list` and a filter that matches nothing never
//!   start the server. The first test asks which versions the server speaks, once.

mod error;
mod play;

use crate::baseline::Baseline;
use crate::case::{Case, Role};
use crate::engine::server::Connect;
use crate::engine::Options;
use crate::era::ProtocolVersion;
use crate::fixtures::Fixtures;
use crate::transport::http::{HttpTarget, PORT};
use crate::transport::process::Launch;
use crate::transport::reap;
use crate::versions::Choice;
use crate::{harness, interrupt, suite, target_file};
pub use error::{ConnectError, SetupError};
use libtest_mimic::{Arguments, Trial};
use play::Shared;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The environment variable that chooses the protocol versions for one run (`auto`, `all` or
/// a version), over [`Server::protocol_version`].
pub const VERSION_ENV: &str = "CONFORMANCE_PROTOCOL_VERSION";

/// A server to test, and how; [`Server::run`] runs the cases as tests.
#[derive(Debug, Clone)]
pub struct Server {
    target: Target,
    over_http: Option<String>,
    env: Vec<(String, String)>,
    cwd: Option<PathBuf>,
    baseline: Option<PathBuf>,
    protocol_version: Option<String>,
    cases: Option<PathBuf>,
    strict: bool,
    dump: Option<PathBuf>,
    timeout: Duration,
    reply_timeout: Duration,
    startup_timeout: Duration,
}

#[derive(Debug, Clone)]
enum Target {
    /// A stdio server started by this argv, once per case.
    Command(Vec<String>),
    /// A server over Streamable HTTP that is already running, at this URL.
    Url(String),
    /// A target file.
    File(PathBuf),
}

impl Server {
    fn new(target: Target) -> Server {
        let defaults = Options::default();
        Server {
            target,
            over_http: None,
            env: vec![],
            cwd: None,
            baseline: None,
            protocol_version: None,
            cases: None,
            strict: false,
            dump: None,
            timeout: defaults.case_timeout,
            reply_timeout: defaults.reply_timeout,
            startup_timeout: defaults.startup_timeout,
        }
    }

    /// A server over stdio, started by `argv` (run without a shell) for every case. In the
    /// server's own package, `env!("CARGO_BIN_EXE_<name>")` is its freshly built binary.
    pub fn command<I, S>(argv: I) -> Server
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Server::new(Target::Command(argv.into_iter().map(Into::into).collect()))
    }

    /// A server over Streamable HTTP that is already running, at this MCP endpoint. Its cases
    /// run one at a time, since they share the server.
    pub fn url(url: impl Into<String>) -> Server {
        Server::new(Target::Url(url.into()))
    }

    /// A target file (`conformance server --target FILE`): the command, the URL, and which of
    /// the server's tools play the fixture roles.
    pub fn target_file(path: impl Into<PathBuf>) -> Server {
        Server::new(Target::File(path.into()))
    }

    /// Speaks to the server that [`Server::command`] starts over Streamable HTTP at `url`
    /// rather than over its stdio: `{port}` in the URL and the command becomes a free
    /// loopback port, a fresh one per case.
    pub fn over_http(mut self, url: impl Into<String>) -> Server {
        self.over_http = Some(url.into());
        self
    }

    /// An environment variable for the server's command.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Server {
        self.env.push((name.into(), value.into()));
        self
    }

    /// The folder the server's command runs in.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Server {
        self.cwd = Some(dir.into());
        self
    }

    /// A baseline file: the case ids known to fail, one a line (`#` comments), as
    /// `--baseline`; they become ignored tests.
    pub fn baseline(mut self, path: impl Into<PathBuf>) -> Server {
        self.baseline = Some(path.into());
        self
    }

    /// The protocol versions to run at, as `--protocol-version`: `auto` (the default; per
    /// case, the newest version the case covers and the server speaks), `all` (each such
    /// version, a test each) or one version.
    pub fn protocol_version(mut self, version: impl Into<String>) -> Server {
        self.protocol_version = Some(version.into());
        self
    }

    /// Reads the cases from this folder instead of the copy built into the harness (needed
    /// for blessing, which rewrites them).
    pub fn cases(mut self, dir: impl Into<PathBuf>) -> Server {
        self.cases = Some(dir.into());
        self
    }

    /// Warnings (broken SHOULDs) fail their tests.
    pub fn strict(mut self) -> Server {
        self.strict = true;
        self
    }

    /// Writes every case's transcript to `DIR/<case id>.mcpt`, as `--dump`.
    pub fn dump(mut self, dir: impl Into<PathBuf>) -> Server {
        self.dump = Some(dir.into());
        self
    }

    /// The time limit of one case (10 s by default).
    pub fn timeout(mut self, limit: Duration) -> Server {
        self.timeout = limit;
        self
    }

    /// How long to wait for an expected message or an answer (2 s by default).
    pub fn reply_timeout(mut self, limit: Duration) -> Server {
        self.reply_timeout = limit;
        self
    }

    /// How long the server may take to answer its opening (15 s by default).
    pub fn startup_timeout(mut self, limit: Duration) -> Server {
        self.startup_timeout = limit;
        self
    }

    /// Runs the cases as tests, with the test binary's own arguments.
    pub fn run(self) -> ExitCode {
        self.run_with(Arguments::from_args())
    }

    /// Runs the cases as tests, with these libtest arguments.
    pub fn run_with(self, args: Arguments) -> ExitCode {
        let shared = match self.prepare() {
            Ok(shared) => Arc::new(shared),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let args = crate::harness::with_test_threads(args, shared.jobs());
        let trials = trials(&shared, !args.list);
        if args.list {
            return libtest_mimic::run(&args, trials).exit_code();
        }
        interrupt::guard();
        let conclusion = libtest_mimic::run(&args, trials);
        let verified = shared.summarize();
        reap::kill_everything();
        interrupt::hold_if_interrupted();
        if !verified {
            return ExitCode::from(1);
        }
        conclusion.exit_code()
    }

    /// Checks the options and loads what the run needs: the cases, the baseline, the target.
    fn prepare(self) -> Result<Shared, SetupError> {
        let bless = harness::bless_requested()?;
        if bless && self.cases.is_none() {
            return Err(SetupError::BlessEmbedded);
        }
        let loaded = match &self.cases {
            Some(dir) => suite::from_dir(dir),
            None => suite::embedded(),
        };
        let cases: Vec<Case> = loaded
            .map_err(SetupError::BrokenCases)?
            .into_iter()
            .filter(|c| c.role == Role::Server)
            .collect();
        let baseline = match &self.baseline {
            Some(path) => Some(Baseline::load(path).map_err(SetupError::Baseline)?),
            None => None,
        };
        let (connect, fixtures, file_version) = self.connect()?;
        let (asked, from) = match std::env::var(VERSION_ENV) {
            Ok(v) if !v.is_empty() => (v, VERSION_ENV),
            _ => match (self.protocol_version, file_version) {
                (Some(v), _) => (v, ".protocol_version()"),
                (None, Some(v)) => (v, "the target file's protocolVersion"),
                (None, None) => ("auto".into(), "the default"),
            },
        };
        let choice =
            Choice::parse(&asked).map_err(|source| SetupError::Version { from, source })?;
        // Each test sets the version its unit plays.
        let options = Options {
            case_timeout: self.timeout,
            reply_timeout: self.reply_timeout,
            startup_timeout: self.startup_timeout,
            fixtures,
            ..Options::default()
        };
        Ok(Shared::new(
            cases,
            baseline,
            connect,
            choice,
            options,
            play::Wishes {
                strict: self.strict,
                bless,
                dump: self.dump,
            },
        ))
    }

    /// How to reach the server, its fixture mapping, and the version its target file asks for.
    fn connect(&self) -> Result<(Connect, Option<Fixtures>, Option<String>), ConnectError> {
        let launch = |argv: &Vec<String>| -> Result<Launch, ConnectError> {
            if argv.is_empty() {
                return Err(ConnectError::EmptyCommand);
            }
            Ok(Launch {
                argv: argv.clone(),
                env: self.env.clone(),
                cwd: self.cwd.clone(),
            })
        };
        let http = |url: &str, launch: Option<Launch>| {
            Connect::Http(HttpTarget {
                url: url.to_string(),
                launch,
            })
        };
        match (&self.target, &self.over_http) {
            (Target::Command(argv), None) => Ok((Connect::Stdio(launch(argv)?), None, None)),
            (Target::Command(argv), Some(url)) => Ok((http(url, Some(launch(argv)?)), None, None)),
            (Target::Url(url), None) => {
                if url.contains(PORT) {
                    return Err(ConnectError::PortWithoutCommand { url: url.clone() });
                }
                Ok((http(url, None), None, None))
            }
            (_, Some(_)) => Err(ConnectError::OverHttpWithoutCommand),
            (Target::File(path), None) => {
                if !self.env.is_empty() || self.cwd.is_some() {
                    return Err(ConnectError::FileSetsEnv(path.clone()));
                }
                let file = target_file::load(path)?;
                Ok((file.connect(), file.fixtures.clone(), file.protocol_version))
            }
        }
    }
}

/// One test per case (per case and version with `all`), in the order the cases are; when
/// they are to run, the cases that wait longest first, as the command line orders them.
fn trials(shared: &Arc<Shared>, running: bool) -> Vec<Trial> {
    let mut order: Vec<usize> = (0..shared.cases.len()).collect();
    if running {
        order.sort_by_key(|&i| std::cmp::Reverse(shared.scripted_wait(i)));
    }
    let mut trials = vec![];
    for index in order {
        let case = &shared.cases[index];
        let versions: Vec<Option<ProtocolVersion>> = match shared.choice {
            Choice::All => case.versions.iter().copied().map(Some).collect(),
            _ => vec![None],
        };
        for version in versions {
            let name = match &version {
                Some(v) => format!("{} [{v}]", case.id),
                None => case.id.clone(),
            };
            let listed = shared
                .baseline
                .as_ref()
                .is_some_and(|b| b.line_of(&case.id).is_some());
            let shared = Arc::clone(shared);
            trials.push(
                Trial::ignorable_test(name, move || shared.play(index, version))
                    .with_kind(case.level.as_str())
                    .with_ignored_flag(listed),
            );
        }
    }
    trials
}
