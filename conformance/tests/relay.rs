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
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().expect("its address").to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args(["relay", &addr])
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

/// Any program on the machine can connect to the port the harness's relay end listens on: a
/// stray that says nothing, or another case's relay presenting its own token. Neither is taken
/// for the server the client started: the one that presents the wrong token is closed, nothing
/// is reported while they connect, and the relay the client starts is still its first server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario, step by step, with the state checked between"
)]
async fn a_stray_connection_to_the_relay_port_is_refused_and_not_counted() {
    use conformance::transport::process::Launch;
    use conformance::transport::relay::{Relay, HELLO};
    use conformance::transport::{Channel, Event, Transport};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::time::Instant as Deadline;

    let soon = || Deadline::now() + Duration::from_secs(10);
    // The adapter prints the argv it was given to start its server, and waits.
    let adapter = Launch::argv(vec![
        "sh".into(),
        "-c".into(),
        r#"printf '%s\n' "$CONFORMANCE_SERVER"; exec sleep 30"#.into(),
    ]);
    let program = [
        env!("CARGO_BIN_EXE_conformance").to_string(),
        "relay".into(),
    ];
    let mut relay = Relay::start(&adapter, &program, Duration::from_secs(10))
        .await
        .expect("the adapter starts");
    let argv: Vec<String> = match relay.next(soon()).await {
        Some((_, Event::AdapterLine(line))) => serde_json::from_slice(&line).expect("a JSON argv"),
        other => panic!("expected the adapter's line, got {other:?}"),
    };
    let [.., addr, token] = &argv[..] else {
        panic!("no address and token in {argv:?}")
    };
    assert_eq!(argv[..2], program[..], "the relay program comes first");

    let _silent = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    let mut wrong = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    let other_token = "0".repeat(token.len());
    wrong
        .write_all(
            format!("{HELLO}{other_token}\n{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}\n")
                .as_bytes(),
        )
        .await
        .expect("written");
    let closed = async {
        let mut buf = [0u8; 256];
        while let Ok(1..) = wrong.read(&mut buf).await {}
    };
    tokio::select! {
        () = closed => {}
        event = relay.next(soon()) => panic!("expected the stray to be closed and nothing reported, got {event:?}"),
    }

    let mut server = tokio::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the relay starts");
    let mut stdin = server.stdin.take().expect("piped");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
        .await
        .expect("written");
    match relay.next(soon()).await {
        Some((_, Event::Connected(1))) => {}
        other => panic!("expected the client's relay as its first server, got {other:?}"),
    }
    match relay.next(soon()).await {
        Some((_, Event::Message { channel, bytes })) => {
            assert_eq!(channel, Channel::Stdio);
            let text = String::from_utf8_lossy(&bytes);
            assert!(text.contains("\"id\":2"), "{text}");
        }
        other => panic!("expected the client's message, got {other:?}"),
    }
    let log = relay.shutdown(Duration::ZERO).await;
    let refused: Vec<&String> = log
        .lines
        .iter()
        .map(|(_, line)| line)
        .filter(|line| line.contains("refused a connection"))
        .collect();
    assert_eq!(
        refused.len(),
        1,
        "the wrong token is noted: {:?}",
        log.lines
    );
    assert!(
        refused[0].contains("did not present this case's token"),
        "{refused:?}"
    );
    drop(stdin);
}
