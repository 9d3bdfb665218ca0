//! How the harness reaches an HTTP server target: its URL (checked, with `{port}` for a free
//! loopback port handed out once per run) and, when the harness starts it, its command.

use crate::transport::process::{display_argv, Launch};
use hyper::Uri;
use std::collections::HashSet;
use std::sync::Mutex;

/// The placeholder for a free loopback port in a URL or an argv.
pub const PORT: &str = "{port}";

/// How to reach an HTTP server target.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    /// The MCP endpoint, possibly with `{port}`.
    pub url: String,
    /// How to start the server, when the harness starts it (once per case).
    pub launch: Option<Launch>,
}

impl HttpTarget {
    /// The target as reports show it.
    pub fn display(&self) -> String {
        match &self.launch {
            Some(launch) => format!("{} (started as {})", self.url, display_argv(&launch.argv)),
            None => self.url.clone(),
        }
    }

    /// The free loopback port `{port}` becomes, where the URL or the argv has it (empty where
    /// neither has).
    pub(super) fn port(&self) -> Result<String, String> {
        let wants_port = self.url.contains(PORT)
            || self
                .launch
                .as_ref()
                .is_some_and(|l| l.argv.iter().any(|a| a.contains(PORT)));
        if !wants_port {
            return Ok(String::new());
        }
        let port = free_port().map_err(|e| format!("cannot find a free loopback port: {e}"))?;
        Ok(port.to_string())
    }

    /// How to start the server on `port`, where the harness starts it.
    pub(super) fn launch_at(&self, port: &str) -> Option<Launch> {
        let mut launch = self.launch.clone()?;
        for arg in &mut launch.argv {
            *arg = arg.replace(PORT, port);
        }
        for (_, value) in &mut launch.env {
            *value = value.replace(PORT, port);
        }
        Some(launch)
    }

    /// Whether every case gets a server of its own on a port of its own: only then may cases
    /// run in parallel without sharing one server's state.
    pub fn isolated(&self) -> bool {
        self.launch.is_some() && self.url.contains(PORT)
    }
}

/// A free loopback port (the OS picks one; it is released for the server to take). The OS may
/// offer a port again as soon as it is released, before the server that was given it has
/// started listening: two cases of one run would then share a server. So a port is handed
/// out once per run.
fn free_port() -> std::io::Result<u16> {
    static GIVEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let given = given.get_or_insert_with(HashSet::new);
    let mut port = 0;
    for _ in 0..64 {
        port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        if given.insert(port) {
            break;
        }
    }
    Ok(port)
}

pub(super) fn parse_url(text: &str) -> Result<Uri, String> {
    let url: Uri = text.parse().map_err(|e| {
        format!("`{text}` is not a URL ({e}); write the MCP endpoint, e.g. http://127.0.0.1:{{port}}/mcp")
    })?;
    match url.scheme_str() {
        Some("http") if url.authority().is_some() => Ok(url),
        Some("https") => Err(format!(
            "`{text}`: https is not supported yet; test the server over plain http on a loopback address"
        )),
        _ => Err(format!(
            "`{text}` is not an http URL; write the MCP endpoint, e.g. http://127.0.0.1:{{port}}/mcp"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        assert!(parse_url("http://127.0.0.1:8080/mcp").is_ok());
        assert!(parse_url("https://example.com/mcp")
            .unwrap_err()
            .contains("https is not supported"));
        assert!(parse_url("ftp://127.0.0.1:8080/mcp")
            .unwrap_err()
            .contains("not an http URL"));
        assert!(parse_url("/mcp").unwrap_err().contains("not an http URL"));
        assert!(parse_url("http://[::1/mcp")
            .unwrap_err()
            .contains("not a URL"));
    }

    #[test]
    fn only_a_started_server_on_its_own_port_is_isolated() {
        let launch = Some(Launch::argv(vec!["srv".into()]));
        let target = |url: &str, launch: Option<Launch>| HttpTarget {
            url: url.into(),
            launch,
        };
        assert!(target("http://127.0.0.1:{port}/mcp", launch.clone()).isolated());
        assert!(!target("http://127.0.0.1:9/mcp", launch).isolated());
        assert!(!target("http://127.0.0.1:{port}/mcp", None).isolated());
    }
}
