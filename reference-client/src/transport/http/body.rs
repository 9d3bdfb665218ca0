//! Reading an answer's body without trusting its size: a JSON answer, or one SSE event,
//! may not exceed [`MAX_MESSAGE_BYTES`], so a hostile server cannot make the client
//! buffer without limit.

use futures_util::{Stream, StreamExt};
use reference_wire::RequestId;
use reqwest::header::CONTENT_TYPE;
use reqwest::Response;
use serde_json::Value;
use sse_stream::{Sse, SseStream};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The largest JSON answer, or SSE event, accepted from the server (4 MiB, as for a stdio
/// line).
pub const MAX_MESSAGE_BYTES: usize = reference_wire::MAX_LINE_BYTES;

/// The SSE events of `response`, and the count of bytes read since the last complete
/// event, which the reader resets at each event: more than the limit fails the stream.
pub(super) fn events(
    response: Response,
) -> (
    impl Stream<Item = Result<Sse, sse_stream::Error>> + Unpin,
    Arc<AtomicUsize>,
) {
    let pending = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&pending);
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(io::Error::other)?;
        let held = counted.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len();
        if held > MAX_MESSAGE_BYTES {
            return Err(io::Error::other(format!(
                "an SSE event is longer than {MAX_MESSAGE_BYTES} bytes"
            )));
        }
        Ok(chunk)
    });
    (SseStream::from_bytes_stream(bytes), pending)
}

/// The body, unless it is longer than [`MAX_MESSAGE_BYTES`].
pub(super) async fn read_capped(mut response: Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading the answer failed: {e}"))?
    {
        if body.len() + chunk.len() > MAX_MESSAGE_BYTES {
            return Err(format!(
                "the answer is longer than {MAX_MESSAGE_BYTES} bytes"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Whether `message` is the response to request `id`.
pub(super) fn answers(message: &Value, id: &RequestId) -> bool {
    message.get("id").and_then(RequestId::from_value).as_ref() == Some(id)
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// The response's content type, lower-cased ("" when absent).
pub(super) fn content_type(response: &Response) -> String {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}
