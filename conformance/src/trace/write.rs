//! Writing a trace as it happens: one line per event, flushed before `write` returns, so a
//! crash of either side (or of the recorder) loses nothing already exchanged. The recorder's
//! tasks (stdin, stdout, stderr, each HTTP exchange) share one writer; the stamp is taken
//! under the writer's lock, so the file's order is the order of `at`.

use super::{Event, Header, FORMAT, VERSION};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

/// A trace file being written; `Send + Sync`, shared by reference or `Arc`.
#[derive(Debug)]
pub struct TraceWriter {
    began: Instant,
    file: Mutex<File>,
}

impl TraceWriter {
    /// Creates the file (failing if it exists: a trace is never overwritten) and writes the
    /// header line.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(path: &Path, header: &Header) -> io::Result<TraceWriter> {
        let mut file = File::options().write(true).create_new(true).open(path)?;
        let mut first = serde_json::to_value(header).map_err(io::Error::other)?;
        if let Value::Object(fields) = &mut first {
            fields.insert("trace".into(), json!(FORMAT));
            fields.insert("version".into(), json!(VERSION));
        }
        write_line(&mut file, &first)?;
        Ok(TraceWriter {
            began: crate::time::now(),
            file: Mutex::new(file),
        })
    }

    /// Stamps `event` with the time since the recording began and writes it as one flushed
    /// line.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&self, event: &Event) -> io::Result<()> {
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let at = u64::try_from(crate::time::since(self.began).as_micros()).unwrap_or(u64::MAX);
        let mut line = serde_json::to_value(event).map_err(io::Error::other)?;
        if let Value::Object(fields) = &mut line {
            fields.insert("at".into(), json!(at));
        }
        write_line(&mut file, &line)
    }
}

/// One line, written with a single `write_all` so that a crash can cut only the last line.
fn write_line(file: &mut File, value: &Value) -> io::Result<()> {
    let mut text = serde_json::to_string(value).map_err(io::Error::other)?;
    text.push('\n');
    file.write_all(text.as_bytes())?;
    file.flush()
}
