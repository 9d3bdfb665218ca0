//! The command line: `reference-server [OPTIONS]`.
//!
//! Hand-parsed rather than with clap because an embedding binary passes its
//! own arguments through (`conformance reference-server …` hands over its
//! subcommand name): arguments this server does not know are ignored.

use crate::http::HttpOptions;
use crate::{ServeOptions, StdioMode, VERBOSE_ENV};
use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

/// What the command line asks for.
pub(crate) enum Command {
    Serve(ServeOptions),
    Help,
}

pub(crate) const USAGE: &str = "\
usage: reference-server [--verbose] [--fast-pipes]
       reference-server --http ADDR [--json-response] [--allow-origin ORIGIN]...
                        [--max-sessions N] [--session-idle-secs N] [--header-timeout-ms N] [--verbose]

Serves the MCP fixture profile over stdin/stdout until EOF or SIGTERM, or with
--http over Streamable HTTP at http://ADDR/mcp until SIGTERM.

  -v, --verbose            log each cancellation and each ignored message to stderr
                           (also REFERENCE_SERVER_VERBOSE=1)
      --fast-pipes         (stdio, Linux) poll private reopenings of the stdin/stdout
                           pipes instead of tokio's blocking stdio
      --http ADDR          listen on ADDR (IP:PORT, or just PORT for 127.0.0.1:PORT;
                           port 0 picks one); prints
                           `reference-server: listening on http://IP:PORT/mcp` on stderr
      --json-response      answer each request with one JSON body instead of SSE
      --allow-origin O     also allow requests whose Origin is O (repeatable;
                           loopback origins are always allowed)
      --max-sessions N     at most N sessions at once (default 64)
      --session-idle-secs N  end a session unused for N seconds (default 600)
      --header-timeout-ms N  close connections that send no complete request head
                           within N ms (default 5000)
  -h, --help               print this help

Other arguments are ignored.";

/// Parses the arguments (without the program name).
pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let mut options = ServeOptions {
        verbose: std::env::var_os(VERBOSE_ENV).is_some_and(|v| v == "1"),
        ..ServeOptions::default()
    };
    let mut http = HttpOptions::default();
    let mut wants_http = false;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy().into_owned();
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| args.next().map(|v| v.to_string_lossy().into_owned()))
                .ok_or_else(|| format!("{name} needs a value; see --help"))
        };
        match flag.as_str() {
            "--verbose" | "-v" => options.verbose = true,
            "--fast-pipes" => options.stdio = StdioMode::FastPipes,
            "--help" | "-h" => return Ok(Command::Help),
            "--http" => {
                wants_http = true;
                http.addr = address(&value("--http")?)?;
            }
            "--json-response" => http.json_response = true,
            "--allow-origin" => http.allowed_origins.push(value("--allow-origin")?),
            "--max-sessions" => {
                http.max_sessions = number("--max-sessions", &value("--max-sessions")?, 1)?;
            }
            "--session-idle-secs" => {
                let secs = number("--session-idle-secs", &value("--session-idle-secs")?, 1)?;
                http.session_idle = Duration::from_secs(secs as u64);
            }
            "--header-timeout-ms" => {
                let ms = number("--header-timeout-ms", &value("--header-timeout-ms")?, 1)?;
                http.header_timeout = Duration::from_millis(ms as u64);
            }
            _ => {} // not ours: an embedding binary's argument
        }
    }
    if wants_http {
        options.http = Some(http);
    }
    Ok(Command::Serve(options))
}

/// `IP:PORT`, `[IPv6]:PORT`, or a bare `PORT` on 127.0.0.1.
fn address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    text.parse().map_err(|_| {
        format!("--http {text:?} is not an address; use IP:PORT such as 127.0.0.1:8080, or a port")
    })
}

fn number(name: &str, text: &str, min: usize) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|n| *n >= min)
        .ok_or_else(|| format!("{name} {text:?} is not a whole number >= {min}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_args(args: &[&str]) -> Result<Command, String> {
        parse(args.iter().map(OsString::from))
    }

    fn serve(args: &[&str]) -> ServeOptions {
        match parse_args(args) {
            Ok(Command::Serve(options)) => options,
            Ok(Command::Help) => panic!("help for {args:?}"),
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    #[test]
    fn unknown_arguments_are_ignored_and_stdio_is_the_default() {
        let options = serve(&["reference-server", "--frobnicate", "-v"]);
        assert!(options.verbose);
        assert!(options.http.is_none());
    }

    #[test]
    fn http_options_are_read_in_both_spellings() {
        let options = serve(&[
            "--http=0",
            "--json-response",
            "--allow-origin",
            "https://a.example",
            "--allow-origin=https://b.example",
            "--max-sessions",
            "3",
            "--header-timeout-ms=250",
        ]);
        let http = options.http.expect("http");
        assert_eq!(http.addr, SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
        assert!(http.json_response);
        assert_eq!(
            http.allowed_origins,
            ["https://a.example", "https://b.example"]
        );
        assert_eq!(http.max_sessions, 3);
        assert_eq!(http.header_timeout, Duration::from_millis(250));
        let v6 = serve(&["--http", "[::1]:8080"]).http.expect("http");
        assert_eq!(v6.addr, "[::1]:8080".parse::<SocketAddr>().expect("addr"));
    }

    #[test]
    fn bad_values_say_what_to_do() {
        for args in [
            &["--http", "localhost"][..],
            &["--http"][..],
            &["--http", "0", "--max-sessions", "0"][..],
            &["--header-timeout-ms", "soon"][..],
        ] {
            let error = parse_args(args)
                .err()
                .unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(error.contains("--"), "{error}");
        }
    }
}
