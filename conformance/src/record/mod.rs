//! `conformance record`: the recorder that sits between a real MCP client and a real server
//! and writes everything they say to a trace (docs/traces.md), changing nothing of what
//! passes. Over stdio the client starts the recorder in place of the server ([`stdio`]); over
//! Streamable HTTP it is a reverse proxy ([`http`]). Both write through one [`Recording`],
//! which redacts secrets ([`redact`]) and keeps going, passing everything on, if the trace
//! cannot be written.

pub mod http;
mod os;
pub mod redact;
pub mod stdio;

use crate::trace::{Event, Header, Party, Recorded, TraceWriter, Transport};
use redact::Redaction;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// A longer line (or HTTP body) is passed on but not written to the trace: a note says so.
pub const MAX_RECORDED: usize = 16 * 1024 * 1024;

/// One trace being written, shared by the recorder's threads and tasks.
#[derive(Debug)]
pub struct Recording {
    writer: TraceWriter,
    path: PathBuf,
    redaction: Redaction,
    /// Set once a write failed: said once on stderr, then the session goes on unrecorded.
    broken: AtomicBool,
}

impl Recording {
    /// Creates a trace in `dir` (made if missing), named `trace-<UTC time>-<pid>.jsonl`, and
    /// writes its header.
    ///
    /// # Errors
    /// The folder or the file cannot be made, as a sentence naming the path.
    pub fn create(
        dir: &Path,
        transport: Transport,
        server: Recorded,
        redaction: Redaction,
    ) -> Result<Recording, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot make the trace folder {}: {e}", dir.display()))?;
        let now = std::time::SystemTime::now();
        let header = Header {
            transport,
            started: humantime::format_rfc3339_millis(now).to_string(),
            recorder: format!("conformance {}", env!("CARGO_PKG_VERSION")),
            server,
            redacted: redaction.listed(),
        };
        let stamp: String = header
            .started
            .chars()
            .filter(|c| !matches!(c, '-' | ':'))
            .collect();
        let pid = std::process::id();
        for n in 1..100 {
            let suffix = if n == 1 {
                String::new()
            } else {
                format!("-{n}")
            };
            let path = dir.join(format!("trace-{stamp}-{pid}{suffix}.jsonl"));
            match TraceWriter::create(&path, &header) {
                Ok(writer) => {
                    return Ok(Recording {
                        writer,
                        path,
                        redaction,
                        broken: AtomicBool::new(false),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(format!("cannot write the trace {}: {e}", path.display())),
            }
        }
        Err(format!(
            "cannot name a new trace in {}: every name tried exists",
            dir.display()
        ))
    }

    /// Where the trace is written.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The secrets this recording keeps out of the trace.
    #[must_use]
    pub fn redaction(&self) -> &Redaction {
        &self.redaction
    }

    /// Writes one event. A failure is said once on stderr; the recorder goes on passing
    /// everything through, unrecorded, since the session matters more than its trace.
    pub fn event(&self, event: &Event) {
        if self.broken.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = self.writer.write(event) {
            if !self.broken.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "conformance record: the trace {} cannot be written ({e}); the session goes on, unrecorded from here",
                    self.path.display()
                );
            }
        }
    }

    /// Writes one message: its text decoded (lossily, and then marked, if it is not UTF-8),
    /// with the `--redact` pointers applied.
    pub fn message(&self, from: Party, bytes: &[u8], exchange: Option<u64>, sse_id: Option<&str>) {
        if bytes.len() > MAX_RECORDED {
            self.note(&format!(
                "a message of {} bytes from the {} was passed on but not recorded (over {MAX_RECORDED} bytes)",
                bytes.len(),
                side(from)
            ));
            return;
        }
        let decoded = String::from_utf8_lossy(bytes);
        let lossy = matches!(decoded, std::borrow::Cow::Owned(_));
        let text = self.redaction.message(&decoded);
        self.event(&Event::Message {
            from,
            text,
            exchange,
            sse_id: sse_id.map(str::to_string),
            lossy,
        });
    }

    /// Writes a whole HTTP body as messages: a JSON array one message per element (each
    /// written anew as compact JSON), anything else, JSON or not, one message; an empty body
    /// none.
    pub fn body(&self, from: Party, exchange: u64, body: &[u8]) {
        if body.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        if let Ok(serde_json::Value::Array(batch)) = serde_json::from_slice(body) {
            for element in batch {
                self.message(from, element.to_string().as_bytes(), Some(exchange), None);
            }
            return;
        }
        self.message(from, body, Some(exchange), None);
    }

    /// Writes a note: something the recorder itself says.
    pub fn note(&self, text: &str) {
        self.event(&Event::Note { text: text.into() });
    }
}

/// A party as a noun for notes.
fn side(party: Party) -> &'static str {
    match party {
        Party::Client => "client",
        Party::Server => "server",
    }
}
