//! The properties of the wire layer's untrusted-input parsers, written once and driven by two
//! engines: the bounded proptest run in `tests/fuzz.rs` (part of `cargo test`) and the
//! libFuzzer targets in `fuzz/` (long runs, nightly features). Each `check_*` function panics
//! with a message naming the broken property.

#![allow(dead_code)] // each engine uses its own subset

use reference_wire::{
    error_response, notification, request, response, LineError, LineReader, Message, RequestId,
    MAX_LINE_BYTES, PARSE_ERROR,
};
use serde_json::Value;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, ReadBuf};

/// `INVALID_REQUEST`, spelled out so a changed constant shows up here.
const INVALID_REQUEST: i64 = -32600;

// ---------------------------------------------------------------------------------------------
// Request ids
// ---------------------------------------------------------------------------------------------

/// An id is a string or an integer, and it round-trips exactly: same JSON value, same text.
pub fn check_request_id(value: &Value) {
    let is_id = value.is_string() || value.is_i64() || value.is_u64();
    match RequestId::from_value(value) {
        Some(id) => {
            assert!(is_id, "{value} is not an id but was read as {id:?}");
            assert_eq!(&id.to_value(), value, "id did not round-trip");
            assert_eq!(id.to_string(), value.to_string(), "id text differs");
            let back: Value = serde_json::from_str(&id.to_string()).expect("id text is JSON");
            assert_eq!(
                RequestId::from_value(&back),
                Some(id),
                "id text did not read back"
            );
        }
        None => assert!(!is_id, "{value} is an id but was refused"),
    }
}

// ---------------------------------------------------------------------------------------------
// Message classification
// ---------------------------------------------------------------------------------------------

/// How many representable floats lie between `x` and `y` (subnormals included).
fn units_apart(x: f64, y: f64) -> u64 {
    // Map the bits onto a line where neighbouring floats are neighbouring integers.
    let line = |f: f64| {
        let bits = f.to_bits() as i64;
        if bits < 0 {
            i64::MIN - bits
        } else {
            bits
        }
    };
    line(x).abs_diff(line(y))
}

/// JSON equality that forgives the last bit of a float: serde_json parses floats on a fast
/// path that may be one unit off after printing and re-reading, which is not this crate's bug.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => units_apart(x, y) <= 2,
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

fn same_option(a: &Option<Value>, b: &Option<Value>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_json(a, b),
        (None, None) => true,
        _ => false,
    }
}

fn same_message(a: &Message, b: &Message) -> bool {
    match (a, b) {
        (
            Message::Request {
                id: i1,
                method: m1,
                params: p1,
            },
            Message::Request {
                id: i2,
                method: m2,
                params: p2,
            },
        ) => i1 == i2 && m1 == m2 && same_option(p1, p2),
        (
            Message::Notification {
                method: m1,
                params: p1,
            },
            Message::Notification {
                method: m2,
                params: p2,
            },
        ) => m1 == m2 && same_option(p1, p2),
        (
            Message::Response {
                id: i1,
                outcome: o1,
            },
            Message::Response {
                id: i2,
                outcome: o2,
            },
        ) => {
            i1 == i2
                && match (o1, o2) {
                    (Ok(r1), Ok(r2)) => same_json(r1, r2),
                    (Err(e1), Err(e2)) => {
                        e1.code == e2.code
                            && e1.message == e2.message
                            && same_option(&e1.data, &e2.data)
                    }
                    _ => false,
                }
        }
        _ => false,
    }
}

/// `Message::parse` never panics; a rejection carries an error one can send, under the id the
/// line had (or `null`); an accepted message agrees with the JSON it came from, and encoding it
/// again gives one line that classifies the same way.
pub fn check_message(line: &str) {
    let parsed: Result<Value, _> = serde_json::from_str(line);
    let object = parsed.as_ref().ok().and_then(Value::as_object);
    let line_id = object
        .and_then(|o| o.get("id"))
        .and_then(RequestId::from_value);
    match Message::parse(line) {
        Err(rejected) => {
            let code = rejected.error.code;
            assert!(!rejected.error.message.is_empty(), "rejection without text");
            if parsed.is_err() {
                assert_eq!(code, PARSE_ERROR, "unparsable line, wrong code");
                assert_eq!(rejected.id, None, "unparsable line cannot have an id");
            } else {
                assert_eq!(code, INVALID_REQUEST, "parsable line, wrong code");
                let method_with_bad_id = object.is_some_and(|o| {
                    o.get("method").is_some() && o.get("id").is_some() && line_id.is_none()
                });
                if !method_with_bad_id {
                    assert_eq!(rejected.id, line_id, "rejection under the wrong id");
                }
            }
            let answer = rejected.to_line();
            assert!(!answer.contains('\n'), "error response spans lines");
            match Message::parse(&answer) {
                Ok(Message::Response {
                    id,
                    outcome: Err(error),
                }) => {
                    assert_eq!(id, rejected.id, "error response id");
                    assert_eq!(error, rejected.error, "error response body");
                }
                other => panic!("error response {answer} reads back as {other:?}"),
            }
        }
        Ok(message) => {
            let object = object.expect("an accepted line is a JSON object");
            assert_eq!(object.get("jsonrpc"), Some(&Value::from("2.0")));
            let encoded = match &message {
                Message::Request { id, method, params } => {
                    assert_eq!(object.get("method"), Some(&Value::from(method.as_str())));
                    assert_eq!(Some(id), line_id.as_ref(), "request id");
                    assert_eq!(params.as_ref(), object.get("params"));
                    Some(request(id, method, params.clone()))
                }
                Message::Notification { method, params } => {
                    assert!(!object.contains_key("id"), "notification with an id");
                    assert_eq!(object.get("method"), Some(&Value::from(method.as_str())));
                    assert_eq!(params.as_ref(), object.get("params"));
                    Some(notification(method, params.clone()))
                }
                Message::Response { id, outcome } => {
                    assert!(!object.contains_key("method"), "response with a method");
                    assert_eq!(id, &line_id, "response id");
                    match outcome {
                        Ok(result) => {
                            assert_eq!(Some(result), object.get("result"));
                            id.as_ref().map(|id| response(id, result.clone()))
                        }
                        Err(error) => {
                            assert!(!object.contains_key("result"), "result wins over error");
                            assert!(object.contains_key("error"));
                            Some(error_response(id.as_ref(), error))
                        }
                    }
                }
            };
            if let Some(encoded) = encoded {
                assert!(!encoded.contains('\n'), "encoded message spans lines");
                let back = Message::parse(&encoded)
                    .unwrap_or_else(|e| panic!("{encoded} does not read back: {e:?}"));
                assert!(
                    same_message(&back, &message),
                    "{encoded} reads back as {back:?}, not {message:?}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The line reader
// ---------------------------------------------------------------------------------------------

/// Part of the input stream.
#[derive(Debug, Clone)]
pub enum Piece {
    /// These bytes.
    Bytes(Vec<u8>),
    /// This many `x` bytes: how overlong lines are made without storing them in the plan.
    Fill(usize),
}

/// How a reader hands out a stream: the bytes, how many it gives per read, when it makes the
/// caller wait or retry, and whether the stream ends with an I/O error instead of end of file.
#[derive(Debug, Clone)]
pub struct ReadPlan {
    pub pieces: Vec<Piece>,
    /// Bytes per read, used in turn (0 is read as 1).
    pub chunks: Vec<usize>,
    /// Per read, in turn: 0 delivers, 1 returns `Pending` first, 2 returns `Interrupted` first.
    pub stalls: Vec<u8>,
    pub fails_at_end: bool,
}

impl ReadPlan {
    pub fn bytes(&self) -> Vec<u8> {
        let mut all = Vec::new();
        for piece in &self.pieces {
            match piece {
                Piece::Bytes(b) => all.extend_from_slice(b),
                Piece::Fill(n) => all.resize(all.len() + n, b'x'),
            }
        }
        all
    }
}

/// What `next_line` yields, comparable.
#[derive(PartialEq)]
pub enum Item {
    Line(String),
    TooLong,
    NotUtf8,
    Io,
}

/// Long lines are shown by their length, so a failure message stays readable.
impl std::fmt::Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Item::Line(s) if s.len() > 60 => write!(f, "Line(<{} bytes>)", s.len()),
            Item::Line(s) => write!(f, "Line({s:?})"),
            Item::TooLong => f.write_str("TooLong"),
            Item::NotUtf8 => f.write_str("NotUtf8"),
            Item::Io => f.write_str("Io"),
        }
    }
}

/// The reader's contract, written plainly: split at `\n`; a line longer than the maximum (its
/// `\r` included) is one `TooLong`; one trailing `\r` is dropped; invalid UTF-8 is `NotUtf8`; a
/// last line without a newline counts unless it is empty or a lone `\r`; a read error drops an
/// unfinished line and ends the stream.
pub fn expected_items(all: &[u8], fails_at_end: bool) -> Vec<Item> {
    fn classify(seg: &[u8]) -> Item {
        if seg.len() > MAX_LINE_BYTES {
            return Item::TooLong;
        }
        let seg = seg.strip_suffix(b"\r").unwrap_or(seg);
        match std::str::from_utf8(seg) {
            Ok(s) => Item::Line(s.to_string()),
            Err(_) => Item::NotUtf8,
        }
    }
    let mut segments: Vec<&[u8]> = all.split(|b| *b == b'\n').collect();
    let last = segments.pop().expect("split yields at least one segment");
    let mut items: Vec<Item> = segments.into_iter().map(classify).collect();
    if last.len() > MAX_LINE_BYTES {
        items.push(Item::TooLong);
    } else if !fails_at_end && !last.is_empty() && last != b"\r" {
        items.push(classify(last));
    }
    if fails_at_end {
        items.push(Item::Io);
    }
    items
}

/// An `AsyncRead` that follows a [`ReadPlan`].
pub struct PlanReader {
    data: Vec<u8>,
    at: usize,
    chunks: Vec<usize>,
    stalls: Vec<u8>,
    reads: usize,
    stalled: bool,
    fails_at_end: bool,
    failed: bool,
    reads_at_end: usize,
}

impl PlanReader {
    pub fn new(plan: &ReadPlan) -> Self {
        Self {
            data: plan.bytes(),
            at: 0,
            chunks: plan.chunks.clone(),
            stalls: plan.stalls.clone(),
            reads: 0,
            stalled: false,
            fails_at_end: plan.fails_at_end,
            failed: false,
            reads_at_end: 0,
        }
    }
}

impl AsyncRead for PlanReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = &mut *self;
        assert!(!me.failed, "read again after the stream failed");
        let stall = match me.stalls.len() {
            0 => 0,
            n => me.stalls[me.reads % n] % 3,
        };
        if stall != 0 && !me.stalled {
            me.stalled = true;
            if stall == 1 {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            return Poll::Ready(Err(io::ErrorKind::Interrupted.into()));
        }
        me.stalled = false;
        let chunk = match me.chunks.len() {
            0 => usize::MAX,
            n => me.chunks[me.reads % n].max(1),
        };
        me.reads += 1;
        if me.at == me.data.len() {
            me.reads_at_end += 1;
            assert!(
                me.reads_at_end <= 2,
                "the reader keeps reading at end of file"
            );
            if me.fails_at_end {
                me.failed = true;
                return Poll::Ready(Err(io::Error::other("the plan fails here")));
            }
            return Poll::Ready(Ok(()));
        }
        let n = chunk.min(buf.remaining()).min(me.data.len() - me.at);
        buf.put_slice(&me.data[me.at..me.at + n]);
        me.at += n;
        Poll::Ready(Ok(()))
    }
}

fn item_of(got: Result<String, LineError>) -> Item {
    match got {
        Ok(line) => Item::Line(line),
        Err(LineError::TooLong) => Item::TooLong,
        Err(LineError::NotUtf8) => Item::NotUtf8,
        Err(LineError::Io(_)) => Item::Io,
    }
}

/// Reads the plan through a `LineReader`, dropping every `next_line` future that returns
/// `Pending` (that is, cancelling it), and checks that it yields exactly the expected items,
/// then stays at the end, within a bounded number of polls.
pub fn check_line_reader(plan: &ReadPlan) {
    let reader = PlanReader::new(plan);
    let want = expected_items(&reader.data, plan.fails_at_end);
    let total = reader.data.len();
    let mut reader = LineReader::new(reader);
    let mut cx = Context::from_waker(Waker::noop());
    let mut got = Vec::new();
    let mut ended = 0;
    let mut polls = 0usize;
    // Every poll delivers at least a byte, stalls once, or yields an item.
    let budget = 2 * (total + 2) + 2 * want.len() + 16;
    while ended < 2 {
        polls += 1;
        assert!(
            polls <= budget,
            "no progress after {polls} polls; got {got:?} so far"
        );
        let mut next = std::pin::pin!(reader.next_line());
        match next.as_mut().poll(&mut cx) {
            Poll::Pending => {} // dropped: a cancelled read must lose nothing
            Poll::Ready(Some(item)) => {
                assert_eq!(ended, 0, "an item after the end: {:?}", item_of(item));
                got.push(item_of(item));
                // Known bug, see `next_line_after_an_io_error_ends` in tests/fuzz.rs: asking
                // again after `Io` panics inside the codec. Stop here until it is fixed.
                if got.last() == Some(&Item::Io) {
                    break;
                }
            }
            Poll::Ready(None) => ended += 1,
        }
    }
    assert_eq!(got.len(), want.len(), "item count; got {got:?}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(g == w, "item {i} is {g:?}, expected {w:?}");
    }
}
