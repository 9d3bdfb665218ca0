//! Reading a trace: the header checked (format and version, refusing a version this build
//! does not know), every event parsed with its line number, and a last line cut short by a
//! crash reported rather than fatal. Every error names `path:line` and what to do.

use super::{Event, Header, Stamped, Trace, FORMAT, VERSION};
use serde_json::{Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a trace could not be read: where, and what was wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// The file.
    pub path: PathBuf,
    /// The line, from 1; 0 when the file itself could not be read.
    pub line: usize,
    /// What was wrong, and what to do.
    pub what: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.what)
        } else {
            write!(f, "{}:{}: {}", self.path.display(), self.line, self.what)
        }
    }
}

impl std::error::Error for TraceError {}

impl Trace {
    /// Reads and parses the trace at `path`.
    ///
    /// # Errors
    /// The file cannot be read or is not a trace this build reads (see [`Trace::parse`]).
    pub fn read(path: &Path) -> Result<Trace, TraceError> {
        let bytes = std::fs::read(path).map_err(|e| TraceError {
            path: path.to_path_buf(),
            line: 0,
            what: format!("cannot read the trace: {e}"),
        })?;
        Trace::parse(path, &String::from_utf8_lossy(&bytes))
    }

    /// Parses a trace's text; `path` is only named in errors.
    ///
    /// # Errors
    /// The header is missing, of another format or an unknown version; a line is not an event
    /// of docs/traces.md; or an event's `at` is earlier than the one before it.
    pub fn parse(path: &Path, text: &str) -> Result<Trace, TraceError> {
        let fail = |line: usize, what: String| TraceError {
            path: path.to_path_buf(),
            line,
            what,
        };
        let mut lines = numbered(text);
        let Some((first, _)) = lines.next() else {
            return Err(fail(1, "empty file: a trace starts with a header line (docs/traces.md); was the recording started?".into()));
        };
        let header = header(first.1).map_err(|what| fail(first.0, what))?;
        let (mut events, mut cut) = (Vec::new(), None);
        let mut last = Duration::ZERO;
        while let Some(((line, text), ended)) = lines.next() {
            match event(text) {
                Ok((at, _)) if at < last => {
                    return Err(fail(line, format!("`at` {} µs is before the previous event's {} µs; events are written in the order recorded", at.as_micros(), last.as_micros())));
                }
                Ok((at, event)) => {
                    last = at;
                    events.push(Stamped { at, line, event });
                }
                // A crash while the line was written: no newline, and nothing after it.
                Err(_) if !ended && lines.peek().is_none() => cut = Some(line),
                Err(what) => return Err(fail(line, what)),
            }
        }
        Ok(Trace {
            path: path.to_path_buf(),
            header,
            events,
            cut,
        })
    }
}

/// Non-blank lines with their 1-based numbers and whether each ended with a newline.
fn numbered(text: &str) -> std::iter::Peekable<impl Iterator<Item = ((usize, &str), bool)>> {
    text.split_inclusive('\n')
        .enumerate()
        .map(|(i, raw)| {
            let ended = raw.ends_with('\n');
            let line = raw.trim_end_matches(['\n', '\r']);
            ((i + 1, line), ended)
        })
        .filter(|((_, line), _)| !line.trim().is_empty())
        .peekable()
}

fn header(text: &str) -> Result<Header, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!("the header is not JSON ({e}); a trace's first line is its header (docs/traces.md)")
    })?;
    let format = value.get("trace").and_then(Value::as_str);
    if format != Some(super::FORMAT) {
        return Err(format!(
            "not a trace: the header's `trace` is {}, expected \"{FORMAT}\"",
            value
                .get("trace")
                .map_or("missing".into(), Value::to_string)
        ));
    }
    match value.get("version").and_then(Value::as_u64) {
        Some(VERSION) => {}
        Some(other) => {
            return Err(format!("trace format version {other} is not one this build reads (it reads version {VERSION}); use the conformance release that recorded it"));
        }
        None => return Err("the header has no numeric `version`".into()),
    }
    serde_json::from_value(value).map_err(|e| format!("bad header: {e}"))
}

fn event(text: &str) -> Result<(Duration, Event), String> {
    let mut fields: Map<String, Value> = serde_json::from_str(text)
        .map_err(|e| format!("not a JSON object ({e}); each line after the header is one event"))?;
    let at = fields
        .remove("at")
        .and_then(|at| at.as_u64())
        .ok_or("the event has no `at` (microseconds since the recording began, a whole number)")?;
    let kind = fields.get("event").map(Value::to_string);
    let event = serde_json::from_value(Value::Object(fields)).map_err(|e| match kind {
        Some(kind) => format!("bad {kind} event: {e} (docs/traces.md lists each event's fields)"),
        None => "the line has no `event` field naming its kind".into(),
    })?;
    Ok((Duration::from_micros(at), event))
}
