//! The stdio recorder: a client starts `conformance record -o DIR -- <server argv>` in place
//! of the server. It starts the server with the same argv, environment and working folder,
//! passes the client's stdin to it and its stdout and stderr back, byte for byte as they
//! arrive, passes on the signals it receives, and ends as the server ended. Each line is
//! written to the trace before it is passed on: a client's line reached the server no earlier
//! than its stamp, a server's left it no later, and whatever either side saw is in the trace
//! however the recorder ends.
//!
//! The one thing that differs: the server runs in a process group of its own, so a signal
//! sent to the recorder's group (Ctrl-C in a terminal) reaches the server once, passed on.
//! If the recorder is killed outright, the server's stdin closes, as when a client dies.

use super::{os, Recording, MAX_RECORDED};
use crate::trace::{Event, Party, Recorded, Transport};
use bytes::BytesMut;
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
use signal_hook::iterator::Signals;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder};

/// The signals passed on to the server.
const PASSED: [i32; 6] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2];
/// After the server ended, how long the recorder waits for its stdout and stderr to end (a
/// process the server left behind may hold them open).
const DRAIN: Duration = Duration::from_secs(2);

/// What a stdio recording needs.
#[derive(Debug)]
pub struct Options {
    /// The server's command, run without a shell.
    pub argv: Vec<String>,
    /// The folder the trace goes to.
    pub dir: PathBuf,
    /// What to keep out of the trace.
    pub redaction: super::redact::Redaction,
    /// Say nothing of our own on stderr (not even where the trace goes).
    pub quiet: bool,
    /// `--case`: when the session ends, draft a server case from its trace into this file.
    pub case: Option<PathBuf>,
}

/// How the recorder should end: as the server did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Exit with this code.
    Code(i32),
    /// End by this signal.
    Signal(i32),
}

impl Ending {
    /// Ends the process this way.
    pub fn exit(self) -> ! {
        match self {
            Ending::Code(code) => std::process::exit(code),
            Ending::Signal(signal) => os::die_by(signal),
        }
    }
}

/// Records one session: starts the server, passes everything through until it ends, and
/// returns how it ended. Before the server starts, a trace that cannot be made ends the
/// recorder with 2; a server that cannot be started, with 127 (not found) or 126, as a shell
/// would.
#[must_use]
pub fn record(options: Options) -> Ending {
    let server = Recorded {
        argv: Some(options.argv.clone()),
        ..Recorded::default()
    };
    let recording =
        match Recording::create(&options.dir, Transport::Stdio, server, options.redaction) {
            Ok(recording) => Arc::new(recording),
            Err(e) => {
                eprintln!("conformance record: {e}; the server was not started");
                return Ending::Code(2);
            }
        };
    if !options.quiet {
        eprintln!(
            "conformance record: recording to {}",
            recording.path().display()
        );
    }
    // Watched before the server starts: a signal that comes while it starts is passed on
    // once it runs, rather than ending the recorder alone.
    let signals = watch_signals(&recording);
    let mut child = match Command::new(&options.argv[0])
        .args(&options.argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return not_started(&recording, &options.argv[0], &e),
    };
    let pid = child.id();
    let ended = Arc::new(Mutex::new(false));
    if let Some(signals) = signals {
        pass_signals(signals, pid, Arc::clone(&ended), Arc::clone(&recording));
    }
    let (done, drained) = mpsc::channel();
    if let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    {
        let r = Arc::clone(&recording);
        std::thread::spawn(move || client_to_server(&r, stdin));
        pump(&recording, stdout, Flow::Stdout, done.clone());
        pump(&recording, stderr, Flow::Stderr, done);
    }
    if let Err(e) = os::wait_ended(pid) {
        recording.note(&format!("the recorder could not wait for the server ({e})"));
    }
    *ended
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
    let status = child.wait();
    wait_drained(&recording, &drained);
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            recording.note(&format!("the server's end could not be read ({e})"));
            return Ending::Code(1);
        }
    };
    recording.event(&Event::Exit {
        code: status.code(),
        signal: status.signal(),
    });
    if let Some(case) = &options.case {
        draft_case(recording.path(), case, options.quiet);
    }
    match (status.code(), status.signal()) {
        (_, Some(signal)) => Ending::Signal(signal),
        (code, None) => Ending::Code(code.unwrap_or(1)),
    }
}

/// `--case`: the session's trace drafted into a server case (`from_trace`), said on stderr;
/// a trace that cannot become one leaves the recorder's ending as the server's.
fn draft_case(trace: &std::path::Path, case: &std::path::Path, quiet: bool) {
    match crate::from_trace::draft_file(trace, case, true) {
        Ok(_) if quiet => {}
        Ok(_) => eprintln!(
            "conformance record: drafted the case {} from {}",
            case.display(),
            trace.display()
        ),
        Err(e) => eprintln!("conformance record: no case drafted: {e}"),
    }
}

fn not_started(recording: &Recording, program: &str, e: &std::io::Error) -> Ending {
    let text = format!("cannot start the server `{program}`: {e}");
    recording.note(&text);
    eprintln!("conformance record: {text}");
    Ending::Code(if e.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// Catches the signals of [`PASSED`] from now on (`None`, said on stderr and in the trace,
/// when they cannot be caught).
fn watch_signals(recording: &Recording) -> Option<Signals> {
    match Signals::new(PASSED) {
        Ok(signals) => Some(signals),
        Err(e) => {
            recording.note(&format!("signals cannot be passed on to the server ({e})"));
            eprintln!("conformance record: signals cannot be passed on to the server ({e})");
            None
        }
    }
}

/// Passes every signal of [`PASSED`] the recorder receives on to the server while it runs.
fn pass_signals(
    mut signals: Signals,
    pid: u32,
    ended: Arc<Mutex<bool>>,
    recording: Arc<Recording>,
) {
    std::thread::spawn(move || {
        for signal in signals.forever() {
            let ended = ended
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *ended {
                continue;
            }
            recording.note(&format!(
                "the recorder received {} and passed it on to the server",
                signal_hook::low_level::signal_name(signal).unwrap_or("a signal")
            ));
            os::signal(pid, signal);
        }
    });
}

/// Waits for the server's stdout and stderr to end, at most [`DRAIN`] after it ended.
fn wait_drained(recording: &Recording, drained: &mpsc::Receiver<()>) {
    let until = Instant::now() + DRAIN;
    for _ in 0..2 {
        let left = until.saturating_duration_since(Instant::now());
        if drained.recv_timeout(left).is_err() {
            recording.note(&format!(
                "the server ended, but its stdout or stderr stayed open {} s later (held by a process it started); the recorder stopped waiting",
                DRAIN.as_secs()
            ));
            return;
        }
    }
}

/// Splits what passes into lines for the trace; what passes is never changed.
struct Lines {
    codec: AnyDelimiterCodec,
    buffer: BytesMut,
}

impl Lines {
    fn new() -> Lines {
        Lines {
            codec: AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), vec![], MAX_RECORDED),
            buffer: BytesMut::new(),
        }
    }

    /// Feeds a chunk; `line` gets each complete line (`None` for one over the limit).
    fn feed(&mut self, chunk: &[u8], mut line: impl FnMut(Option<&[u8]>)) {
        self.buffer.extend_from_slice(chunk);
        loop {
            match self.codec.decode(&mut self.buffer) {
                Ok(Some(l)) => line(Some(&l[..])),
                Ok(None) | Err(AnyDelimiterCodecError::Io(_)) => return,
                Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => line(None),
            }
        }
    }

    /// What came after the last newline, at the end of the input.
    fn rest(self) -> Option<BytesMut> {
        Some(self.buffer).filter(|b| !b.is_empty())
    }
}

fn overlong(recording: &Recording, from: Party) {
    recording.note(&format!(
        "a line from the {} over {MAX_RECORDED} bytes was passed on but not recorded",
        super::side(from)
    ));
}

/// Passes `from` to `to` as it arrives, each complete line given to `record` before the chunk
/// that completes it is passed. Returns what followed the last newline when `from` ended, or
/// `Err` when `to` could not be written.
fn pass(
    recording: &Recording,
    from: &mut impl Read,
    to: &mut impl Write,
    party: Party,
    record: impl Fn(&[u8]),
) -> Result<Option<BytesMut>, ()> {
    let mut lines = Lines::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return Ok(lines.rest()),
            Ok(n) => n,
        };
        lines.feed(&buf[..n], |line| match line {
            Some(line) => record(line),
            None => overlong(recording, party),
        });
        to.write_all(&buf[..n])
            .and_then(|()| to.flush())
            .map_err(drop)?;
    }
}

/// The client's stdin to the server's.
fn client_to_server(recording: &Recording, mut to_server: std::process::ChildStdin) {
    let mut stdin = std::io::stdin().lock();
    let record = |line: &[u8]| recording.message(Party::Client, line, None, None);
    let Ok(rest) = pass(recording, &mut stdin, &mut to_server, Party::Client, record) else {
        recording.note(
            "the server's stdin is closed: what the client wrote from here on did not reach it",
        );
        os::detach(0);
        return;
    };
    if let Some(rest) = rest {
        record(&rest);
    }
    recording.event(&Event::Closed {
        from: Party::Client,
    });
    drop(to_server);
}

/// Which of the server's outputs a pump passes on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    Stdout,
    Stderr,
}

/// Passes one of the server's outputs on as it arrives, each line recorded before it is
/// passed (so whatever the client saw is in the trace, however the recorder ends); says on
/// `done` when the output ended.
fn pump(
    recording: &Arc<Recording>,
    from: impl Read + Send + 'static,
    flow: Flow,
    done: mpsc::Sender<()>,
) {
    let recording = Arc::clone(recording);
    std::thread::spawn(move || {
        pass_output(&recording, from, flow);
        let _ = done.send(());
    });
}

fn pass_output(recording: &Recording, mut from: impl Read, flow: Flow) {
    let mut out: Box<dyn Write> = match flow {
        Flow::Stdout => Box::new(std::io::stdout().lock()),
        Flow::Stderr => Box::new(std::io::stderr().lock()),
    };
    let record = |line: &[u8]| match flow {
        Flow::Stdout => recording.message(Party::Server, line, None, None),
        Flow::Stderr => recording.event(&Event::Stderr {
            text: String::from_utf8_lossy(line).into_owned(),
        }),
    };
    let Ok(rest) = pass(recording, &mut from, &mut out, Party::Server, record) else {
        recording.note(&format!(
            "the client closed its end of the server's {}; the recorder stopped reading it, so the server's next write there fails as it would have",
            if flow == Flow::Stdout { "stdout" } else { "stderr" }
        ));
        return;
    };
    if let Some(rest) = rest {
        record(&rest);
    }
    if flow == Flow::Stdout {
        recording.event(&Event::Closed {
            from: Party::Server,
        });
        drop(out);
        os::detach(1);
    }
}
