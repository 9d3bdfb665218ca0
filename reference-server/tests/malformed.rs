//! Bad input: each malformed line gets the right error and the server keeps serving.

mod common;

use common::*;
use serde_json::{json, Value};

#[test]
fn each_malformed_line_gets_the_right_error() {
    // (line, expected code, expected id)
    let cases: Vec<(&str, i64, Value)> = vec![
        (r#"{"jsonrpc":"2.0","id":"#, -32700, json!(null)),
        ("not json at all", -32700, json!(null)),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            -32600,
            json!(null),
        ),
        ("[]", -32600, json!(null)),
        ("42", -32600, json!(null)),
        (r#""ping""#, -32600, json!(null)),
        ("null", -32600, json!(null)),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            -32600,
            json!(null),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            -32600,
            json!(null),
        ),
        (
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            -32600,
            json!(null),
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            -32600,
            json!(null),
        ),
        (
            r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
            -32600,
            json!(null),
        ),
        (
            r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
            -32600,
            json!(3),
        ),
        (r#"{"id":4,"method":"ping"}"#, -32600, json!(4)),
        (r#"{"jsonrpc":"2.0","id":5,"method":7}"#, -32600, json!(5)),
        (r#"{"jsonrpc":"2.0","id":6}"#, -32600, json!(6)),
        (
            r#"{"jsonrpc":"2.0","id":"x","method":"nope"}"#,
            -32601,
            json!("x"),
        ),
    ];
    let mut server = Server::initialized("2025-11-25");
    for (n, (line, code, id)) in cases.into_iter().enumerate() {
        server.write_raw(format!("{line}\n").as_bytes());
        let reply = server.next();
        assert_eq!(error_code(&reply), code, "{line} -> {reply}");
        assert_eq!(reply["id"], id, "{line} -> {reply}");
        assert!(reply["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
        assert_eq!(
            server.barrier(json!(n)),
            Vec::<Value>::new(),
            "after {line}"
        );
    }
}

#[test]
fn blank_lines_and_crlf_are_tolerated() {
    let mut server = Server::initialized("2025-11-25");
    server.write_raw(b"\n   \n\r\n");
    server.write_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n");
    let reply = server.next();
    assert_eq!(
        (reply["id"].clone(), reply["result"].clone()),
        (json!(1), json!({}))
    );
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let mut server = Server::initialized("2025-11-25");
    server.write_raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}\n");
    let reply = server.next();
    assert_eq!(
        (error_code(&reply), reply["id"].clone()),
        (-32700, json!(null))
    );
    assert_eq!(server.barrier(json!("b")), Vec::<Value>::new());
}

#[test]
fn overlong_line_is_rejected_and_discarded() {
    let mut server = Server::initialized("2025-11-25");
    start_ticking(&mut server);
    // 6 MiB without a newline, written in pieces, then the newline.
    let chunk = vec![b'x'; 1024 * 1024];
    for _ in 0..6 {
        server.write_raw(&chunk);
    }
    server.write_raw(b"\n");
    let reply = server.next();
    assert_eq!(
        (error_code(&reply), reply["id"].clone()),
        (-32600, json!(null)),
        "{reply}"
    );
    assert_eq!(server.barrier(json!("b")), Vec::<Value>::new());
    // A second one right after still works, and so does everything else.
    let mut line = vec![b' '; 5 * 1024 * 1024];
    line.push(b'\n');
    server.write_raw(&line);
    let reply = server.next();
    assert_eq!(error_code(&reply), -32600, "{reply}");
    let echo = server.tool(json!(1), "echo", json!({"text": "still here"}));
    assert_eq!(text_of(&echo), "still here");
}

/// Keeps a handler running across the abuse, to show it is unharmed.
fn start_ticking(server: &mut Server) {
    server.call(json!("bg"), "sleep", json!({"ms": 60_000}));
}

#[test]
fn garbage_bytes_never_stop_the_server() {
    let mut server = Server::initialized("2025-11-25");
    let mut seed: u32 = 12345;
    let mut garbage = Vec::new();
    for _ in 0..200 {
        let len = 1 + (seed % 64) as usize;
        for _ in 0..len {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let byte = (seed >> 16) as u8;
            garbage.push(if byte == b'\n' { b'{' } else { byte });
        }
        garbage.push(b'\n');
    }
    server.write_raw(&garbage);
    let mut replies = 0;
    for line in server.barrier(json!("b")) {
        assert!(line["id"].is_null(), "{line}");
        replies += 1;
    }
    assert!(replies > 0);
}
