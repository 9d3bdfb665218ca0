//! Ledger entries and clock readings for the rules' unit tests.

use crate::exchange::Channel;
use crate::facts::ledger::{CancelMark, SentRequest};
use crate::facts::waits::Waits;
use std::time::Duration;

/// Milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A `tools/call` the harness sent at +0 on stdio, unanswered and not cancelled.
pub fn call() -> SentRequest {
    SentRequest::new(1, 0, Duration::ZERO, "tools/call", Channel::Stdio)
}

/// A cancel sent at `sent`, proved read (by order: a later answer) at `read`.
pub fn cancel(sent: u64, read: Option<u64>) -> CancelMark {
    CancelMark {
        at: 1,
        sent: ms(sent),
        read: read.map(ms),
        accepted: None,
        closed: None,
        waited: None,
        sent_waited: None,
    }
}

/// `request` as cancelled by `mark`.
pub fn cancelled(mut request: SentRequest, mark: CancelMark) -> SentRequest {
    request.cancel = Some(mark);
    request
}

/// A calm machine with a 250 ms grace, where the kernel does not say what the target waited.
pub fn calm() -> Waits {
    Waits::calm(ms(250), None)
}

/// A channel the harness opened with `opened`, with no head yet.
pub fn stream(opened: crate::facts::streams::Opened) -> crate::facts::streams::Stream {
    crate::facts::streams::Stream {
        entry: 0,
        sent: std::time::Instant::now(),
        opened,
        session: 0,
        head: None,
        messages: 0,
        end: None,
        bytes: 0,
        expected: None,
        shown_status: None,
        body: None,
        base: String::new(),
    }
}

/// A response head of status `code` and content type `kind`.
pub fn head(code: u16, kind: Option<&str>) -> crate::exchange::Head {
    crate::exchange::Head {
        code,
        content_type: kind.map(str::to_string),
        session: None,
        location: None,
    }
}

/// `stream` once its head `head` came.
pub fn with_head(
    mut stream: crate::facts::streams::Stream,
    head: crate::exchange::Head,
) -> crate::facts::streams::Stream {
    stream.head = Some((std::time::Instant::now(), head));
    stream
}
