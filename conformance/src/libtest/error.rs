//! Why a `cargo test` run of the cases cannot start: the options given to [`super::Server`]
//! do not fit together, or what they name cannot be loaded. Each message is what the test
//! binary prints after `error: ` before it exits with status 2.

use crate::case::CaseError;
use crate::error::{BaselineError, BlessRefused};
use crate::harness::BLESS_ENV;
use crate::target_file::LoadError;
use crate::transport::http::PORT;
use crate::versions::UnknownVersion;
use std::path::PathBuf;

/// Why [`super::Server::run`] cannot run the cases.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// Blessing was asked for where it is refused.
    #[error(transparent)]
    BlessRefused(#[from] BlessRefused),
    /// Blessing was asked for, but the cases are the embedded ones, which have no files.
    #[error("{BLESS_ENV}=1 rewrites case files: give their folder with .cases(DIR) (the cases built into the harness cannot be rewritten)")]
    BlessEmbedded,
    /// Cases that do not parse: bugs in the suite.
    #[error("{}", bugs(.0))]
    BrokenCases(Vec<CaseError>),
    /// The baseline cannot be read.
    #[error("{0}; create it with `conformance server --write-baseline FILE`, or list the failing case ids in it")]
    Baseline(#[source] BaselineError),
    /// How to reach the server is not clear.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The protocol version asked for is no version the harness knows.
    #[error("{from}: {source}")]
    Version {
        /// Where it was asked for (the environment variable, the option, the target file).
        from: &'static str,
        /// What was asked.
        source: UnknownVersion,
    },
}

/// Why the options do not say how to reach the server.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// `Server::command` with nothing in it.
    #[error("the server's command is empty: give its program and arguments")]
    EmptyCommand,
    /// A URL with `{port}` that no started server can fill.
    #[error("`{url}` has `{PORT}`, which only a server the harness starts can listen on: give its command, Server::command(argv).over_http(url)")]
    PortWithoutCommand {
        /// The URL, as given.
        url: String,
    },
    /// `.over_http(url)` on a target that gives its URL itself.
    #[error(".over_http(url) goes with Server::command(argv): a URL or a target file gives the URL itself")]
    OverHttpWithoutCommand,
    /// `.env` or `.cwd` beside a target file, which sets both itself.
    #[error("{}: a target file gives the command's env and cwd itself; set them there", .0.display())]
    FileSetsEnv(PathBuf),
    /// The target file cannot be used.
    #[error(transparent)]
    File(#[from] LoadError),
}

/// One `bug in case: …` per broken case, joined by `error: ` lines (the first `error: ` is
/// the printer's).
fn bugs(errors: &[CaseError]) -> String {
    let lines: Vec<String> = errors.iter().map(|e| format!("bug in case: {e}")).collect();
    lines.join("\nerror: ")
}
