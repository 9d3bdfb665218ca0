//! What the recorder's tests share: starting a command with or without `conformance record`
//! in front of it, a client that speaks one line at a time, and the trace a run wrote.
//!
//! Declared `pub mod record` by each test binary that uses it (record, record_http).

use conformance::trace::{Event, Party, Trace};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The `conformance` binary cargo built for this test run.
pub const CONFORMANCE: &str = env!("CARGO_BIN_EXE_conformance");

/// `argv` started directly, or through `conformance record -o dir --quiet --` when `dir` is
/// given, with `extra` recorder options; stdio piped.
pub fn start(argv: &[&str], dir: Option<&Path>, extra: &[&str]) -> Child {
    let mut cmd = match dir {
        Some(dir) => {
            let mut cmd = Command::new(CONFORMANCE);
            cmd.arg("record").arg("-o").arg(dir).args(extra).arg("--");
            cmd.args(argv);
            cmd
        }
        None => {
            let mut cmd = Command::new(argv[0]);
            cmd.args(&argv[1..]);
            cmd
        }
    };
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts")
}

/// The bundled reference server's argv.
pub fn reference() -> Vec<&'static str> {
    vec![CONFORMANCE, "reference-server"]
}

/// A client that writes one line and, for a request, reads one answer line.
pub struct Client {
    /// The process spoken to.
    pub child: Child,
    out: BufReader<ChildStdout>,
    /// Every byte read from the process's stdout, in order.
    pub seen: Vec<u8>,
}

impl Client {
    /// Speaks to `child` (its stdin and stdout piped).
    pub fn new(mut child: Child) -> Client {
        let out = BufReader::new(child.stdout.take().expect("piped"));
        Client {
            child,
            out,
            seen: vec![],
        }
    }

    /// Writes `line` and a newline; for a request (a line with an `id`), reads one line back.
    pub fn say(&mut self, line: &str) -> String {
        let stdin = self.child.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("written");
        stdin.flush().expect("flushed");
        if !line.contains("\"id\"") {
            return String::new();
        }
        self.line()
    }

    /// Reads one line of the process's stdout.
    pub fn line(&mut self) -> String {
        let mut answer = String::new();
        self.out.read_line(&mut answer).expect("an answer line");
        self.seen.extend_from_slice(answer.as_bytes());
        answer
    }

    /// Closes stdin, reads stdout to its end and waits (at most 20 s) for the exit; returns
    /// every byte seen on stdout, all of stderr and the status.
    pub fn finish(mut self) -> (Vec<u8>, Vec<u8>, std::process::ExitStatus) {
        drop(self.child.stdin.take());
        self.out.read_to_end(&mut self.seen).expect("stdout read");
        let mut err = vec![];
        if let Some(mut stderr) = self.child.stderr.take() {
            stderr.read_to_end(&mut err).expect("stderr read");
        }
        let status = wait(&mut self.child, Duration::from_secs(20)).expect("the process ends");
        (self.seen, err, status)
    }
}

/// Waits up to `limit` for `child` to end; kills it and returns `None` past that.
pub fn wait(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// The one trace in `dir`, read (a cut last line fails the test).
pub fn trace_in(dir: &Path) -> Trace {
    let traces: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the trace folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(
        traces.len(),
        1,
        "one trace in {}: {traces:?}",
        dir.display()
    );
    let trace = Trace::read(&traces[0]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(trace.cut, None, "no line cut short");
    trace
}

/// The texts of the trace's messages from `from`, in order.
pub fn messages(trace: &Trace, from: Party) -> Vec<String> {
    trace
        .events
        .iter()
        .filter_map(|s| match &s.event {
            Event::Message { from: f, text, .. } if *f == from => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The trace's events without their stamps.
pub fn events(trace: &Trace) -> Vec<Event> {
    trace.events.iter().map(|s| s.event.clone()).collect()
}

/// A measurement's summary line: `what: N rounds, median …, p90 …, p99 …, mean …`.
pub fn summary(what: &str, mut times: Vec<Duration>) -> String {
    times.sort();
    let n = times.len().max(1);
    let mean = times.iter().sum::<Duration>() / u32::try_from(n).unwrap_or(u32::MAX);
    format!(
        "{what}: {n} rounds, median {:?}, p90 {:?}, p99 {:?}, mean {mean:?}",
        times[n / 2],
        times[n * 9 / 10],
        times[n * 99 / 100]
    )
}
