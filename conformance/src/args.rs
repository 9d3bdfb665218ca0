//! What the command line offers: subcommands and options, with their help texts.

use clap::{Parser, Subcommand};
use conformance::case::parse_duration;
use std::path::PathBuf;
use std::time::Duration;

const EXIT_CODES: &str = "\
Exit codes:
  0  every case passed, or failed as its baseline expected (warnings allowed unless --strict)
  1  a case failed (or warned, with --strict), or a baseline entry is stale
  2  usage error, a broken case or target file, or a target that could not be started";

const CHECK_EXIT_CODES: &str = "\
Exit codes:
  0  neither side broke a MUST (warnings allowed unless --strict)
  1  a side broke a MUST (or a SHOULD, with --strict)
  2  the trace could not be read (the error names the file and line), or a report could not be written";

/// Replays scripted MCP cancellation cases against a target and judges the transcript.
#[derive(Parser, Debug)]
#[command(name = "conformance", version, after_help = EXIT_CODES)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the server cases against a server over stdio or Streamable HTTP (the bundled
    /// reference server over stdio if none is given).
    #[command(after_help = EXIT_CODES)]
    Server(ServerArgs),
    /// Draft a target file for a server as it ships: list its tools, propose which play the
    /// fixture roles, check each proposal by calling it (read-only tools only, unless named
    /// with --try), and write what held.
    Init(InitArgs),
    /// Work on case files: `case from-trace` drafts a server case from a recorded session.
    #[command(subcommand)]
    Case(CaseCommand),
    /// List the cases with their level, requirements and intent.
    List {
        /// Read cases from this folder instead of the embedded copy.
        #[arg(long, value_name = "DIR")]
        cases: Option<PathBuf>,
        /// Only cases whose id contains this text.
        filter: Option<String>,
    },
    /// Serve MCP as the bundled reference server (its own arguments follow).
    #[cfg(feature = "bundled-reference")]
    #[command(hide = true)]
    ReferenceServer {
        /// The reference server's own arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run the client cases against a client adapter: the harness plays the server (README:
    /// Testing a client).
    #[command(after_help = EXIT_CODES)]
    Client(ClientArgs),
    /// Build one HTML page from JSON reports of earlier runs (`--json`): several targets,
    /// versions and transports side by side, e.g. from CI artifacts.
    Report {
        /// JSON reports written by `server` or `client` runs with `--json`.
        #[arg(required = true, value_name = "REPORT.json")]
        reports: Vec<PathBuf>,
        /// Where to write the page.
        #[arg(short, long, value_name = "FILE.html")]
        output: PathBuf,
    },
    /// Record a real session between an MCP client and server to a trace (docs/record.md):
    /// over stdio, the client starts `conformance record -o DIR -- <server argv>` in place of
    /// the server; over Streamable HTTP, `--listen ADDR --to URL` is a reverse proxy.
    Record(RecordArgs),
    /// Judge a recorded session (a trace `conformance record` wrote) with the rules the live
    /// cases use: what the server and what the client did wrong, each at its trace line.
    #[command(after_help = CHECK_EXIT_CODES)]
    Check(CheckArgs),
    /// Compare targets: from JSON reports of their runs (one per target file or client
    /// adapter), write the comparison as data (--json), as one HTML page (--html), and as the
    /// Markdown tables between generated markers (--markdown), each failure and warning with
    /// its written evidence (targets/README.md: the comparison).
    Compare(CompareArgs),
    /// The server a client under test starts: relays its stdio to the harness at ADDR,
    /// presenting TOKEN first.
    #[command(hide = true)]
    Relay {
        /// The harness's loopback address.
        addr: String,
        /// The case's token, which the harness asks of every connection.
        token: Option<String>,
    },
}

/// What both `server` and `client` runs take.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Only cases whose id contains this text.
    pub filter: Option<String>,
    /// Read cases from this folder instead of the embedded copy.
    #[arg(long, value_name = "DIR")]
    pub cases: Option<PathBuf>,
    /// The protocol versions to run at: `auto` (per case the newest version the case covers
    /// and, for a server, the server speaks), `all` (every such version, a result each) or
    /// one version (that one only; a server that does not speak it has every case skipped,
    /// and the run exits 1). Client runs tell the adapter the version and play a server of
    /// it [default: a server's target file's, else auto].
    #[arg(long, value_name = "VERSION")]
    pub protocol_version: Option<String>,
    /// Case ids known to fail (one a line, `#` comments). Listed failures do not fail the run;
    /// a listed case that passes fails it as stale.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write today's failing case ids to FILE (the run then exits 0 unless it could not run).
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Write a JSON report to PATH.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write an HTML report to FILE: one page with the matrix, every transcript as a
    /// sequence diagram, and the cancellation timings (no network needed to open it).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write a JUnit XML report to PATH.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Time limit for one case, a hang becomes a failure with the transcript so far
    /// [default: 10s for servers, 30s for client adapters].
    #[arg(long, value_name = "DURATION", value_parser = duration, allow_hyphen_values = true)]
    pub timeout: Option<Duration>,
    /// How long to wait for an expected message or an answer.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration, allow_hyphen_values = true)]
    pub reply_timeout: Duration,
    /// How long a server may take to answer `initialize` (interpreters and package runners
    /// start slowly, more so with cases in parallel).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = duration, allow_hyphen_values = true)]
    pub startup_timeout: Duration,
    /// Warnings (broken SHOULDs) fail the run.
    #[arg(long)]
    pub strict: bool,
    /// Rewrite the expected lines that differ from what the target sent (needs --cases;
    /// refused when CI is set). Also enabled by CONFORMANCE_BLESS=1.
    #[arg(long)]
    pub bless: bool,
    /// Write the actual transcript of every case to DIR/<case id>.mcpt.
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
    /// How many cases run at once [default: four times the CPUs, at least 8, for servers the
    /// harness starts; one for a running HTTP server; the CPUs for client
    /// adapters].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// Run every case N times: a case whose outcome differs between runs is reported as
    /// flaky, and its worst outcome counts.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// List every case, skipped ones too, each with its reason (by default skips are counted
    /// by reason at the end).
    #[arg(short, long)]
    pub verbose: bool,
    /// The target's command, run without a shell.
    #[arg(last = true, value_name = "ARGV")]
    pub argv: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct ServerArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Test a server over Streamable HTTP at this MCP endpoint. With a command after `--`
    /// the harness also starts the server, once per case; `{port}` in the URL and the
    /// command becomes a free loopback port, and the harness waits (within
    /// --startup-timeout) until it accepts connections.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// A target file (JSON): the server's command and which of its tools play the fixture
    /// roles. See the README.
    #[arg(long, value_name = "FILE")]
    pub target: Option<PathBuf>,
    /// Start the target for every case alone. By default, against a target whose start
    /// takes over 100 ms (as the version probe measured it), the cases that may share a
    /// server process do (over stdio taking turns on its session, over Streamable HTTP each
    /// in a session of its own), and a case that does not pass there is run again alone.
    #[arg(long, conflicts_with = "share")]
    pub isolate: bool,
    /// Let the cases that may share a server process share one, however cheap a start.
    #[arg(long)]
    pub share: bool,
}

#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// Where to write the target file.
    #[arg(short, long, value_name = "FILE", default_value = "target.json")]
    pub output: PathBuf,
    /// Overwrite FILE if it exists.
    #[arg(long)]
    pub force: bool,
    /// Let init call TOOL although it is not annotated read-only (`readOnlyHint`); give it
    /// once per tool. Name only tools you know change nothing: init calls them as the cases
    /// would.
    #[arg(long = "try", value_name = "TOOL")]
    pub tries: Vec<String>,
    /// The server's MCP endpoint over Streamable HTTP (with a command after `--`, init starts
    /// the server; `{port}` becomes a free loopback port, as for `server`).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// How long the server may take to answer `initialize`.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = duration, allow_hyphen_values = true)]
    pub startup_timeout: Duration,
    /// How long a check waits for an answer or progress, beyond the time it asked for.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration, allow_hyphen_values = true)]
    pub reply_timeout: Duration,
    /// The server's command, run without a shell.
    #[arg(last = true, value_name = "ARGV")]
    pub argv: Vec<String>,
}

/// What `conformance case` does.
#[derive(Subcommand, Debug)]
pub enum CaseCommand {
    /// Draft a server case from a trace (`conformance record`): the client's messages become
    /// the steps, the server's answers the expectations (with what varies between runs as
    /// patterns), each cancel where the client sent it. Replay it with `conformance server
    /// --cases DIR -- <server>`.
    FromTrace(FromTraceArgs),
}

#[derive(clap::Args, Debug)]
pub struct FromTraceArgs {
    /// The trace file a recording wrote (docs/traces.md).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Where to write the case (`*.mcpt`, e.g. cases/server/my-bug.mcpt: its id is its path
    /// below the cases folder).
    #[arg(short, long, value_name = "CASE.mcpt")]
    pub output: PathBuf,
    /// Overwrite the case file if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// The folder the trace goes to (made if missing); each session writes a new
    /// `trace-<UTC time>-<pid>.jsonl` there.
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// Keep a secret out of the trace: a JSON pointer into every message
    /// (`/params/arguments/token`) or a header (`header:x-api-key`). Give it once per
    /// secret. `Authorization`, cookies and `Proxy-Authorization` are always kept out.
    #[arg(long, value_name = "POINTER|header:NAME")]
    pub redact: Vec<String>,
    /// Streamable HTTP: serve the client on this address (`127.0.0.1:8001`), as a reverse
    /// proxy to --to.
    #[arg(long, value_name = "ADDR", requires = "to")]
    pub listen: Option<String>,
    /// Streamable HTTP: the server's MCP endpoint (`http://127.0.0.1:8000/mcp`); the client
    /// is pointed at the same path on --listen.
    #[arg(long, value_name = "URL", requires = "listen")]
    pub to: Option<String>,
    /// stdio: when the session ends, draft a server case from its trace into this file
    /// (overwritten each session), as `conformance case from-trace` would.
    #[arg(long, value_name = "CASE.mcpt")]
    pub case: Option<PathBuf>,
    /// stdio: say nothing of the recorder's own on stderr (by default one line says where
    /// the trace goes). Over HTTP the line saying where to point the client is always
    /// printed.
    #[arg(short, long)]
    pub quiet: bool,
    /// The server's command, run without a shell, with its stdio passed through.
    #[arg(last = true, value_name = "ARGV")]
    pub argv: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The trace to judge (JSON lines, docs/traces.md).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Write a JSON report to PATH.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write an HTML report to FILE: the recorded session as a sequence diagram, each
    /// finding beside its message.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write a JUnit XML report to PATH.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Warnings (broken SHOULDs) fail the check.
    #[arg(long)]
    pub strict: bool,
}

#[derive(clap::Args, Debug)]
pub struct ClientArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// The transport to meet the client over: `stdio` (the client starts the harness's
    /// relay as its server) or `http` (the client talks to the harness's Streamable HTTP
    /// server; case ids get `@http`). Give it twice, or leave it out, for both.
    #[arg(long, value_name = "stdio|http", value_parser = ["stdio", "http"])]
    pub transport: Vec<String>,
}

pub fn duration(text: &str) -> Result<Duration, String> {
    if text.trim_start().starts_with('-') {
        return Err(format!(
            "`{text}` is negative; a duration is zero or more, e.g. 500ms or 5s"
        ));
    }
    parse_duration(text)
        .ok_or_else(|| format!("`{text}` is not a duration; write e.g. 500ms or 5s"))
}

/// `conformance compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// JSON reports, each named after its target file (`rmcp-http.json`) or `client-` and
    /// the adapter (`client-rmcp-client.json`).
    #[arg(value_name = "REPORT.json", required_unless_present = "from")]
    pub reports: Vec<PathBuf>,
    /// Read an earlier comparison (its --json) instead of reports, to rewrite the tables.
    #[arg(long, value_name = "FILE.json", conflicts_with = "reports")]
    pub from: Option<PathBuf>,
    /// An earlier comparison of other runs (the committed one, before it is rewritten): the
    /// tables show a latency median only where it held between that run and this one.
    #[arg(long, value_name = "FILE.json", conflicts_with = "from")]
    pub previous: Option<PathBuf>,
    /// Where the target files are: a report's SDK is the `sdk` of the target file of its
    /// name, or of its adapter in `clients.json` there.
    #[arg(long, value_name = "DIR", default_value = "targets")]
    pub targets: PathBuf,
    /// The written evidence of each finding.
    #[arg(long, value_name = "FILE.md", default_value = "targets/evidence.md")]
    pub evidence: PathBuf,
    /// Write the comparison as data.
    #[arg(long, value_name = "FILE.json")]
    pub json: Option<PathBuf>,
    /// Write one HTML page of every report (needs reports).
    #[arg(long, value_name = "FILE.html", conflicts_with = "from")]
    pub html: Option<PathBuf>,
    /// Rewrite the generated tables in this Markdown file (repeatable).
    #[arg(long, value_name = "FILE.md")]
    pub markdown: Vec<PathBuf>,
    /// Change no file: exit 1 when a --markdown file's tables differ from the comparison.
    #[arg(long)]
    pub check: bool,
}
