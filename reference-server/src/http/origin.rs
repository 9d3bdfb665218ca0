//! `Origin` validation against DNS rebinding (HTTP-01).
//!
//! A web page on another site can make a browser send requests to a server
//! on localhost, but the browser always says where the page came from. So a
//! request whose `Origin` is not on the allow list gets 403 before anything
//! else happens. Requests without `Origin` come from programs, not browser
//! pages, and are served (AMB-15). By default only loopback origins are
//! allowed; `--allow-origin` adds exact origins.

use super::reply;
use axum::extract::{Request, State};
use axum::http::header::ORIGIN;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;

/// The origins a browser page may send requests from.
pub(crate) struct Origins {
    /// Exact origins added with `--allow-origin`, lowercased.
    extra: Vec<String>,
}

impl Origins {
    pub(crate) fn new(extra: &[String]) -> Self {
        Self {
            extra: extra
                .iter()
                .map(|o| o.trim().to_ascii_lowercase())
                .collect(),
        }
    }

    /// Whether a request carrying `Origin: origin` may be served.
    pub(crate) fn allows(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        is_loopback(&origin) || self.extra.contains(&origin)
    }
}

/// `http://localhost`, `http://127.0.0.1` or `http://[::1]`, with or
/// without a port.
fn is_loopback(origin: &str) -> bool {
    let Some(authority) = origin.strip_prefix("http://") else {
        return false;
    };
    let host = match authority.rsplit_once(':') {
        // The colon of a port, not one inside `[::1]`.
        Some((host, port)) if !port.contains(']') => {
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
            host
        }
        _ => authority,
    };
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

/// Middleware: 403 for a request from an origin that is not allowed.
pub(crate) async fn check(
    State(origins): State<Arc<Origins>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(origin) = request.headers().get(ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|o| origins.allows(o));
        if !allowed {
            let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            return reply::error(
                StatusCode::FORBIDDEN,
                None,
                reference_wire::INVALID_REQUEST,
                format!(
                    "forbidden: requests from origin {shown:?} are not allowed (DNS rebinding protection); \
                     start the server with --allow-origin {shown} to allow it"
                ),
            );
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_are_allowed_and_others_are_not() {
        let origins = Origins::new(&["https://app.example".to_owned()]);
        for ok in [
            "http://localhost",
            "http://localhost:8080",
            "http://127.0.0.1:3000",
            "http://[::1]",
            "http://[::1]:9",
            "HTTP://LOCALHOST:1",
            "https://app.example",
        ] {
            assert!(origins.allows(ok), "{ok}");
        }
        for bad in [
            "http://attacker.example",
            "http://localhost.attacker.example",
            "http://127.0.0.1.nip.io",
            "https://localhost",
            "http://localhost:",
            "http://localhost:80x",
            "null",
            "http://[::1]x",
            "https://app.example:443",
        ] {
            assert!(!origins.allows(bad), "{bad}");
        }
    }
}
