//! Handshake, version negotiation, ping, tools/list and the instant tools.

mod common;

use common::*;
use serde_json::{json, Value};

const VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

#[test]
fn every_supported_version_is_echoed_and_unknown_gets_the_newest() {
    for version in VERSIONS {
        let mut server = Server::spawn();
        let init = server.request(json!(1), "initialize", init_params(version));
        assert_eq!(init["result"]["protocolVersion"], version);
        // Tasks came with 2025-11-25 (TSK-01); earlier versions are unchanged.
        let capabilities = if version == "2025-11-25" {
            json!({"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}})
        } else {
            json!({"tools": {}})
        };
        assert_eq!(init["result"]["capabilities"], capabilities);
        assert_eq!(init["result"]["serverInfo"]["name"], "reference-server");
    }
    let mut server = Server::spawn();
    let init = server.request(json!(1), "initialize", init_params("1900-01-01"));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn only_initialize_and_ping_work_before_initialize() {
    let mut server = Server::spawn();
    assert_eq!(
        server.request(json!(1), "ping", json!({}))["result"],
        json!({})
    );
    // Either era could be meant: -32602 fits both (LIF-10, AMB-13), and the
    // message names both ways forward.
    let early = server.request(json!(2), "tools/list", json!({}));
    assert_eq!(error_code(&early), -32602, "{early}");
    let message = early["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("send initialize first"), "{message}");
    assert!(
        message.contains("io.modelcontextprotocol/protocolVersion"),
        "{message}"
    );
    let bad = server.request(json!(3), "initialize", json!({}));
    assert_eq!(error_code(&bad), -32602, "{bad}");
    let init = server.request(json!(4), "initialize", init_params("2025-06-18"));
    assert!(init.get("result").is_some(), "{init}");
    let again = server.request(json!(5), "initialize", init_params("2025-06-18"));
    assert_eq!(error_code(&again), -32600, "{again}");
}

#[test]
fn tools_list_names_the_fixture_profile_with_schemas() {
    // `job` and `work_required`, which only run as tasks, exist where tasks do (TASKS.md).
    let task_only: &[&str] = &["job", "work_required"];
    for (version, job) in [("2025-06-18", &[][..]), ("2025-11-25", task_only)] {
        let mut server = Server::initialized(version);
        let list = server.request(json!(1), "tools/list", json!({}));
        let tools = list["result"]["tools"].as_array().expect("tools");
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        let mut expected = vec!["ping", "work", "echo", "sleep", "ticker", "cancellations"];
        expected.extend_from_slice(job);
        assert_eq!(names, expected, "{version}");
        for tool in tools {
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        }
    }
}

#[test]
fn instant_tools_answer() {
    let mut server = Server::initialized("2025-11-25");
    let ping = server.tool(json!(1), "ping", json!({}));
    assert_eq!(
        ping["result"],
        json!({"content": [{"type": "text", "text": "Server: still available"}]})
    );
    let echo = server.tool(json!(2), "echo", json!({"text": "héllo 🦀\nline"}));
    assert_eq!(text_of(&echo), "héllo 🦀\nline");
    let slept = server.tool(json!(3), "sleep", json!({"ms": 5}));
    assert_eq!(text_of(&slept), "slept");
    assert_eq!(server.cancellations(json!(4)), json!([]));
}

#[test]
fn unknown_methods_and_tools_are_protocol_errors() {
    let mut server = Server::initialized("2025-11-25");
    let unknown = server.request(json!(1), "harness/nonexistent", json!({}));
    assert_eq!(error_code(&unknown), -32601, "{unknown}");
    let tool = server.tool(json!(2), "nope", json!({}));
    assert_eq!(error_code(&tool), -32602, "{tool}");
    let no_name = server.request(json!(3), "tools/call", json!({}));
    assert_eq!(error_code(&no_name), -32602, "{no_name}");
    let bad_args = server.request(
        json!(4),
        "tools/call",
        json!({"name": "echo", "arguments": 5}),
    );
    assert_eq!(error_code(&bad_args), -32602, "{bad_args}");
}

#[test]
fn invalid_arguments_follow_the_version_rule() {
    let cases = [
        ("echo", json!({})),
        ("echo", json!({"text": 5})),
        ("sleep", json!({"ms": "10"})),
        ("sleep", json!({"ms": -1})),
        ("sleep", json!({"ms": 1.5})),
        ("ticker", json!({"interval_ms": 0})),
    ];
    for version in VERSIONS {
        let mut server = Server::initialized(version);
        for (n, (tool, args)) in cases.iter().enumerate() {
            let response = server.tool(json!(n), tool, args.clone());
            if version == "2025-11-25" {
                assert_eq!(response["result"]["isError"], true, "{version} {response}");
                assert!(!text_of(&response).is_empty());
            } else {
                assert_eq!(error_code(&response), -32602, "{version} {response}");
            }
        }
    }
}

#[test]
fn notifications_are_never_answered() {
    let mut server = Server::initialized("2025-11-25");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    server
        .send(json!({"jsonrpc": "2.0", "method": "notifications/x-harness-unknown", "params": {}}));
    server.cancel(json!(12345));
    server.cancel(json!("never-issued"));
    for params in [
        json!(null),
        json!({}),
        json!({"requestId": null}),
        json!({"requestId": {}}),
    ] {
        server
            .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}));
    }
    server.send(json!({"jsonrpc": "2.0", "id": 99, "result": {}}));
    let before: Vec<Value> = server.barrier(json!("barrier"));
    assert_eq!(before, Vec::<Value>::new());
}
