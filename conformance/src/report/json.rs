//! `--json PATH`: one document a CI step, a dashboard or `conformance report` can read. Its
//! shape is [`RunReport`], described for other readers by `conformance/report.schema.json`
//! (JSON Schema) and versioned by [`SCHEMA_VERSION`]; every key is camelCase. It carries
//! everything the HTML report draws (every message with its time and channel, the findings
//! with their line, the diff), so a page can be built later from CI artifacts alone.

pub use super::gate::Summary;
use super::timing::{CaseTimings, RunTimings};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The version of the report's shape: raised whenever a key is renamed or removed or its
/// meaning changes (keys may be added within a version; readers ignore those they do not
/// know).
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON report of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    /// [`SCHEMA_VERSION`] of the harness that wrote it.
    pub schema_version: u32,
    /// The harness that ran.
    pub harness: Harness,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// How long the run took.
    pub duration_ms: u64,
    /// `server` (the target is a server) or `client`; `trace` for `conformance check`.
    pub role: String,
    /// What was tested.
    pub target: Target,
    /// `stdio`, `http`, or `stdio+http` for a client run over both.
    pub transport: String,
    /// The protocol version(s) asked for: `auto`, `all` or one version.
    pub protocol_version: String,
    /// The versions the target speaks, as the probes found them (server runs).
    pub target_versions: Vec<String>,
    /// How many cases had each outcome.
    pub summary: Summary,
    /// Timings over every case.
    pub timings: RunTimings,
    /// Every case at every version it ran at.
    pub cases: Vec<CaseReport>,
    /// Why no case was played, when the target could not be tested at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
}

/// Why a run played no case.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunError {
    /// `untestable`: the target answered none of the opening probes.
    pub kind: String,
    /// What each probe saw.
    pub message: String,
}

/// The harness's name and version.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Harness {
    /// `conformance`.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// The target: how it was reached, and what it calls itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// The command (or URL) as the console shows it.
    pub command: String,
    /// Its name, from its opening (`serverInfo` or `clientInfo`), when it gave one.
    pub name: Option<String>,
    /// Its version, from the same place.
    pub version: Option<String>,
}

/// One case at one version.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseReport {
    /// The case id (client cases over HTTP end in `@http`).
    pub id: String,
    /// The case's sentence of intent.
    pub intent: String,
    /// `pass`, `fail`, `warn`, `info` or `skip`.
    pub outcome: String,
    /// `must`, `should` or `info`.
    pub level: String,
    /// The requirement ids it checks.
    pub requirements: Vec<String>,
    /// One line: the main finding, the skip reason, or why the target could not start.
    pub message: String,
    /// Wall time of the case.
    pub duration_ms: u64,
    /// `expected-failure` or `stale` when a baseline lists the case.
    pub baseline: Option<String>,
    /// The outcome of every run of it (`--repeat`).
    pub runs: Vec<String>,
    /// The runs disagreed.
    pub flaky: bool,
    /// The protocol version it ran at.
    pub protocol_version: Option<String>,
    /// `handshake` or `stateless`.
    pub era: Option<String>,
    /// `stdio` or `http`.
    pub transport: String,
    /// Why it was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    /// The target could not be started: nothing else is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the harness found, in the order noticed.
    #[serde(default)]
    pub findings: Vec<FindingReport>,
    /// The unified diff of the expected and the actual transcript, when they differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The target's stderr, as kept.
    #[serde(default)]
    pub stderr: Stderr,
    /// Every message exchanged, as kept (at most 5,000 entries or 2 MiB a case).
    #[serde(default)]
    pub transcript: Vec<TranscriptEntry>,
    /// Timings measured from the transcript.
    #[serde(default)]
    pub timings: CaseTimings,
    /// Server cases that ran: on a target of their own, or on one shared with other cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementReport>,
    /// A case that went on in a session an earlier case opened: the messages that opened it
    /// (the harness's `initialize` or `server/discover`, the target's answer, and
    /// `notifications/initialized`), which its `transcript` does not hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_opening: Vec<serde_json::Value>,
    /// What the case sends on purpose that its session does not allow (`@deviation`): the
    /// one deviation it exists to test; absent when it sends nothing of the kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deviation: Option<String>,
}

/// Where a case ran (see [`crate::share`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementReport {
    /// `alone` (a target started for it), `shared` (one shared with other cases), or
    /// `rerun` (shared first; it did not pass there, so it ran again alone, and the report is
    /// of the lone run).
    pub mode: String,
    /// The shared process it ran on (first): its number in the run, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<u32>,
    /// That process's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// For a rerun: the outcome it had when sharing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_outcome: Option<String>,
}

/// One finding.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingReport {
    /// `note`, `info`, `warn` or `fail`.
    pub severity: String,
    /// The requirement id, or `case`, `adapter`, `limit`, `observed`.
    pub requirement: String,
    /// The case line being carried out when it was noticed (0: before the first).
    pub line: usize,
    /// What happened.
    pub message: String,
    /// How many times.
    pub times: u32,
}

/// The target's stderr.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stderr {
    /// The kept lines, the last ones.
    pub lines: Vec<StderrLine>,
    /// How many lines there were in all.
    pub total: usize,
}

/// One line of stderr (or a note of the harness about the target).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StderrLine {
    /// When, in milliseconds since the target started.
    pub at_ms: f64,
    /// The line.
    pub text: String,
}

/// One entry of the transcript. Keys at their default value are left out.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptEntry {
    /// Milliseconds since the target started, to a tenth.
    pub at_ms: f64,
    /// `sent` (by the harness), `received` (from the target) or `transport` (what the
    /// transport saw: an HTTP status, a stream's end).
    pub direction: String,
    /// `stdio`, `POST n`, `GET n`, `DELETE n`, `stdio of server process n`.
    #[serde(default = "stdio", skip_serializing_if = "is_stdio")]
    pub channel: String,
    /// The session (HTTP cases may open several; 0 is the first).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub session: usize,
    /// The harness added it (handshake, barrier, witness, replies of its own).
    #[serde(default, skip_serializing_if = "is_false")]
    pub internal: bool,
    /// The harness stamped the stateless era's `_meta` onto the case's message.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stamped: bool,
    /// The case line that took this message, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// `cancel`, `proof`, `afterCancel` or `late` (see the schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    /// The message as written (JSON text), or what the transport saw.
    pub text: String,
}

fn stdio() -> String {
    "stdio".into()
}

fn is_stdio(channel: &str) -> bool {
    channel == "stdio"
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Reads a JSON report written by a run, refusing other documents and other schema versions
/// with a message that says what to do.
pub fn read(path: &Path) -> Result<RunReport, ReportError> {
    let shown = || path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: shown(),
        source,
    })?;
    parse(&text).map_err(|reason| ReportError::Invalid {
        path: shown(),
        reason,
    })
}

/// [`read`] for text already read.
pub fn parse(text: &str) -> Result<RunReport, InvalidReport> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(InvalidReport::NotJson)?;
    match value
        .get("schemaVersion")
        .and_then(serde_json::Value::as_u64)
    {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => return Err(InvalidReport::OtherSchema(v)),
        None if value.get("cases").is_some() => return Err(InvalidReport::Unversioned),
        None => return Err(InvalidReport::NotAReport),
    }
    // From the text again, so that an error says where (line and column).
    serde_json::from_str(text).map_err(InvalidReport::Malformed)
}

/// Why a document is no report this harness reads; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum InvalidReport {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// A report of another schema version.
    #[error("a report of schema version {0}; this harness reads version {SCHEMA_VERSION} (rerun the cases with this harness, or render it with the harness that wrote it)")]
    OtherSchema(u64),
    /// A report written before schema versions were.
    #[error("a report from a harness older than schema version 1 (no `schemaVersion`); rerun the cases with this harness to get one")]
    Unversioned,
    /// JSON, but no report.
    #[error("not a conformance JSON report (no `schemaVersion`)")]
    NotAReport,
    /// A report of this schema version that does not follow it (the error says where).
    #[error("not a valid report: {0}")]
    Malformed(#[source] serde_json::Error),
}

/// A JSON report that cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file, as given.
        path: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// It is no report this harness reads (not JSON, another schema version, …): says which.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file, as given.
        path: String,
        /// What is wrong with it, and what to do.
        #[source]
        reason: InvalidReport,
    },
}
