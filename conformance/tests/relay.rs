//! `conformance relay`, the server a client under test starts: it passes bytes both ways,
//! says in-band when the client closed its stdin or sent SIGTERM, and exits when told to,
//! whether its stdin is open or not.

#![allow(unsafe_code)] // libc: signals the relay it starts

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A relay connected to a listener of the test's own, with its stdin kept open.
fn relay() -> (Child, BufReader<std::net::TcpStream>, std::net::TcpStream) {
    relay_with(&[])
}

/// [`relay`], given `more` arguments after the address.
fn relay_with(more: &[&str]) -> (Child, BufReader<std::net::TcpStream>, std::net::TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().expect("its address").to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args(["relay", &addr])
        .args(more)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the relay starts");
    let (stream, _) = listener.accept().expect("the relay connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let writer = stream.try_clone().expect("a second handle");
    (child, BufReader::new(stream), writer)
}

/// Waits up to 5 s for the child to exit.
fn exits(child: &mut Child) -> Option<std::process::ExitStatus> {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn sigterm_with_stdin_open_is_reported_and_ends_the_relay_by_the_signal() {
    let (mut child, mut from_relay, _to_relay) = relay();
    let mut stdin = child.stdin.take().expect("piped");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"ping"}}"#).expect("written");
    let mut line = String::new();
    from_relay.read_line(&mut line).expect("the line arrives");
    assert!(line.contains("ping"), "{line:?}");
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    line.clear();
    from_relay.read_line(&mut line).expect("the marker arrives");
    assert_eq!(line.trim_end(), "\u{1}relay:sigterm");
    let status = exits(&mut child).expect("the relay exits though its stdin is open");
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    drop(stdin);
}

#[test]
fn the_harness_closing_the_connection_ends_the_relay_with_stdin_open() {
    let (mut child, _from_relay, to_relay) = relay();
    let stdin = child.stdin.take().expect("piped");
    to_relay
        .shutdown(std::net::Shutdown::Both)
        .expect("the connection closes");
    let status = exits(&mut child).expect("the relay exits though its stdin is open");
    assert!(status.success(), "{status:?}");
    drop(stdin);
}

#[test]
fn stdin_closed_is_reported_after_what_was_written() {
    let (mut child, mut from_relay, to_relay) = relay();
    let mut stdin = child.stdin.take().expect("piped");
    write!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("written");
    drop(stdin);
    let mut line = String::new();
    from_relay.read_line(&mut line).expect("the line arrives");
    assert!(line.contains("initialized"), "{line:?}");
    line.clear();
    from_relay.read_line(&mut line).expect("the marker arrives");
    assert_eq!(line.trim_end(), "\u{1}relay:stdin-closed");
    drop(from_relay);
    drop(to_relay);
    exits(&mut child).expect("the relay exits once the harness closes");
}

#[test]
fn a_token_given_is_said_first_then_the_bytes() {
    let (mut child, mut from_relay, to_relay) = relay_with(&["case-token-1"]);
    let mut stdin = child.stdin.take().expect("piped");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"ping"}}"#).expect("written");
    let mut line = String::new();
    from_relay.read_line(&mut line).expect("the hello arrives");
    assert_eq!(line.trim_end(), "\u{1}relay:hello case-token-1");
    line.clear();
    from_relay.read_line(&mut line).expect("the line arrives");
    assert!(line.contains("ping"), "{line:?}");
    drop(stdin);
    drop(from_relay);
    drop(to_relay);
    exits(&mut child).expect("the relay exits once the harness closes");
}
