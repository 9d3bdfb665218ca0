//! Whether a server the harness started answers HTTP yet, not only accepts connections.
//!
//! An accepted connection is no proof that the server is up: a pass-through proxy in front
//! of it (socat, a port forward, a container's published port, a wrapper script) listens at
//! once and closes each connection it cannot pass on while the server behind it is still
//! starting. On a calm machine that lasts milliseconds; on a busy one the harness's opening
//! request came first, its connection was closed with no answer, and a correct server was
//! failed for it (LIF-02). So the startup wait asks one harmless question on the endpoint,
//! `OPTIONS` (a browser's CORS preflight, which a server answers whatever its routes), and
//! takes any HTTP answer as ready, except a gateway's 502 or 504 (an HTTP proxy saying the
//! server behind it is not there yet). A connection closed without an answer is "not yet". A
//! server that keeps the connection open without answering within the patience given is
//! taken as ready: it is there, only slow, and the case's own waits judge it.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What the probe learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Readiness {
    /// An HTTP server answered (or held the connection open): the cases may begin.
    Ready,
    /// The connection was closed without an answer, or a gateway said its server is not
    /// there: ask again.
    NotYet,
}

/// Asks `OPTIONS path` on a connection to `authority` and reads the first bytes of the answer
/// within `patience`.
pub(super) async fn probe(
    mut stream: TcpStream,
    authority: &str,
    path: &str,
    patience: Duration,
) -> Readiness {
    let request = format!(
        "OPTIONS {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).await.is_err() {
        return Readiness::NotYet;
    }
    let mut first = [0u8; 32];
    match tokio::time::timeout(patience, stream.read(&mut first)).await {
        Err(_) => Readiness::Ready,
        Ok(Ok(n)) => readiness(&first[..n]),
        Ok(Err(_)) => Readiness::NotYet,
    }
}

/// Judges the first bytes of the answer to the probe (none: the connection was closed).
pub(super) fn readiness(first: &[u8]) -> Readiness {
    if first.is_empty() {
        return Readiness::NotYet;
    }
    // "HTTP/1.1 502 Bad Gateway": the status is the second word.
    let status = first
        .split(|b| *b == b' ')
        .nth(1)
        .filter(|_| first.starts_with(b"HTTP/"));
    match status {
        Some(b"502" | b"504") => Readiness::NotYet,
        _ => Readiness::Ready,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_connection_or_a_gateway_without_its_server_is_not_ready() {
        assert_eq!(readiness(b""), Readiness::NotYet);
        assert_eq!(
            readiness(b"HTTP/1.1 502 Bad Gateway\r\n"),
            Readiness::NotYet
        );
        assert_eq!(readiness(b"HTTP/1.0 504 Gateway"), Readiness::NotYet);
    }

    #[test]
    fn any_other_answer_is_ready_even_an_error_or_a_fragment() {
        for first in [
            &b"HTTP/1.1 405 Method Not Allowed\r\n"[..],
            b"HTTP/1.1 204 No Content\r\n",
            b"HTTP/1.1 500 Internal",
            b"HTTP/1.1 503 Service Unavailable",
            b"HTTP/1.1 50",
            b"H",
            b"garbage",
        ] {
            assert_eq!(readiness(first), Readiness::Ready, "{first:?}");
        }
    }

    #[tokio::test]
    async fn a_listener_that_drops_connections_is_not_ready_and_a_server_that_answers_is() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let dropping = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            drop(socket);
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 256];
            let _ = socket.read(&mut buf).await;
            let _ = socket
                .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                .await;
        });
        let patience = Duration::from_secs(5);
        let first = TcpStream::connect(&addr).await.unwrap();
        assert_eq!(
            probe(first, &addr, "/mcp", patience).await,
            Readiness::NotYet
        );
        let second = TcpStream::connect(&addr).await.unwrap();
        assert_eq!(
            probe(second, &addr, "/mcp", patience).await,
            Readiness::Ready
        );
        dropping.await.unwrap();
    }
}
