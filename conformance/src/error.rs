//! The errors the library's public functions return, typed, so a caller can tell why a run
//! could not happen (and print it: each one's `Display` is the message the command line shows).
//! Verdicts are not errors: a target that misbehaves gets a report with findings, never one
//! of these.

use crate::case::CaseError;
use std::fmt;

/// Why a case could not be run at all (not a verdict: the target was never reached).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The target's command could not be run.
    #[error("cannot start target `{target}`: {source}; check the command after `--` (it is run without a shell)")]
    Spawn {
        /// The command, as shown.
        target: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The transport could not be set up: the server's URL is unusable, the server it
    /// started never listened, or the harness could not serve the client; says which.
    #[error("{0}")]
    Transport(String),
    /// The harness could not start its own async runtime.
    #[error("cannot start a tokio runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The thread that keeps a server shared by many cases ended before the server started.
    #[error("the thread of a shared server ended")]
    SharedServerThread,
    /// The worker thread that was to run the case stopped before it did (a bug: it
    /// panicked).
    #[error("the worker running this case stopped")]
    WorkerStopped,
    /// A version probe's task ended abnormally.
    #[error("a version probe failed: {0}")]
    Probe(#[source] tokio::task::JoinError),
}

impl From<String> for StartError {
    fn from(reason: String) -> Self {
        StartError::Transport(reason)
    }
}

/// Cases that do not parse: bugs in the suite, each with its file and line.
#[derive(Debug, thiserror::Error)]
pub struct BrokenCases(pub Vec<CaseError>);

impl fmt::Display for BrokenCases {
    /// One `error: bug in case: …` line per broken case, as the command line prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "error: bug in case: {e}")?;
        }
        Ok(())
    }
}

/// A baseline file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot read the baseline: {source}")]
pub struct BaselineError {
    /// The file, as given.
    pub path: String,
    /// What the operating system said.
    #[source]
    pub source: std::io::Error,
}

/// Blessing was asked for where it is refused.
#[derive(Debug, thiserror::Error)]
#[error("blessing is refused when CI is set: it would accept whatever the target did; bless locally and commit the diff")]
pub struct BlessRefused;
