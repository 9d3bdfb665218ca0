//! Many concurrent cancellations: nothing answered, all witnessed, no growth.

mod common;

use common::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;

const CALLS: usize = 100;

/// One round: start CALLS `work` calls, wait for each one's progress,
/// cancel them all, and check the barrier and the witness.
fn round(server: &mut Server, round: usize) {
    let ids: Vec<Value> = (0..CALLS).map(|n| json!(round * 1000 + n)).collect();
    for id in &ids {
        server.call_with_progress(id.clone(), "work", json!({}), json!(format!("p{id}")));
    }
    let mut started = BTreeSet::new();
    while started.len() < CALLS {
        let progress = server.next();
        assert_eq!(progress["method"], "notifications/progress", "{progress}");
        started.insert(
            progress["params"]["progressToken"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
        );
    }
    for id in &ids {
        server.cancel(id.clone());
    }
    assert_eq!(
        server.barrier(json!(format!("b{round}"))),
        Vec::<Value>::new()
    );
    let witness = server.cancellations(json!(format!("w{round}")));
    let seen: BTreeSet<String> = witness
        .as_array()
        .expect("array")
        .iter()
        .map(Value::to_string)
        .collect();
    for id in &ids {
        assert!(
            seen.contains(&id.to_string()),
            "{id} missing from the witness"
        );
    }
}

fn vm_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

#[test]
fn hundred_concurrent_cancels_leave_no_trace() {
    let mut server = Server::initialized("2025-11-25");
    round(&mut server, 1);
    let after_first = vm_kib(server.pid(), "VmRSS:");
    for n in 2..=10 {
        round(&mut server, n);
    }
    let after_last = vm_kib(server.pid(), "VmRSS:");
    assert!(
        after_last <= after_first + 2048,
        "rss grew from {after_first} KiB to {after_last} KiB over 9 rounds"
    );
    let ping = server.tool(json!("last"), "ping", json!({}));
    assert_eq!(text_of(&ping), "Server: still available");
}
