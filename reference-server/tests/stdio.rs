//! How stdin and stdout are driven: the inherited descriptors keep the flags the
//! client gave them in both modes, and `--fast-pipes` really polls private
//! reopenings of the pipes.

#![cfg(target_os = "linux")]

mod common;

use common::*;
use serde_json::{json, Value};
use std::fs;

const O_NONBLOCK: u32 = 0o4000;

/// The file status flags of `pid`'s descriptor `fd`, from /proc.
fn flags(pid: u32, fd: &str) -> u32 {
    let info = fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).expect("read fdinfo");
    let octal = info
        .lines()
        .find_map(|line| line.strip_prefix("flags:"))
        .expect("a flags line");
    u32::from_str_radix(octal.trim(), 8).expect("octal flags")
}

/// Descriptors of `pid` other than `fd` that refer to the same pipe as `fd`.
fn other_descriptors_of_the_same_pipe(pid: u32, fd: &str) -> Vec<String> {
    let target = |name: &str| fs::read_link(format!("/proc/{pid}/fd/{name}")).ok();
    let pipe = target(fd).expect("fd link");
    assert!(pipe.to_string_lossy().starts_with("pipe:"), "{pipe:?}");
    fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("list fds")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name != fd && target(name).as_ref() == Some(&pipe))
        .collect()
}

/// Serves a cancel and a barrier, so both directions have been used.
fn exercise(server: &mut Server) {
    server.call_with_progress(json!(1), "work", json!({}), json!("p"));
    assert_eq!(server.next()["method"], "notifications/progress");
    server.cancel(json!(1));
    assert_eq!(server.barrier(json!("b")), Vec::<Value>::new());
    assert_eq!(server.cancellations(json!("w")), json!([1]));
}

#[test]
fn inherited_stdin_and_stdout_stay_blocking_in_both_modes() {
    for args in [&[][..], &["--fast-pipes"][..]] {
        let mut server = Server::initialized_with("2025-11-25", args);
        exercise(&mut server);
        for fd in ["0", "1"] {
            assert_eq!(
                flags(server.pid(), fd) & O_NONBLOCK,
                0,
                "{args:?}: the server switched its inherited descriptor {fd} to non-blocking mode"
            );
        }
    }
}

#[test]
fn fast_pipes_polls_private_non_blocking_reopenings() {
    let mut server = Server::initialized_with("2025-11-25", &["--fast-pipes"]);
    exercise(&mut server);
    for fd in ["0", "1"] {
        let private = other_descriptors_of_the_same_pipe(server.pid(), fd);
        assert_eq!(private.len(), 1, "fd {fd}: {private:?}");
        assert_ne!(flags(server.pid(), &private[0]) & O_NONBLOCK, 0);
    }
    server.close_stdin();
    assert!(server.wait_exit(PATIENCE).success());
    assert_eq!(server.stderr(), "", "no fallback warning expected");
}

#[test]
fn portable_mode_opens_no_other_descriptor_of_the_pipes() {
    let mut server = Server::initialized("2025-11-25");
    exercise(&mut server);
    for fd in ["0", "1"] {
        assert_eq!(
            other_descriptors_of_the_same_pipe(server.pid(), fd),
            Vec::<String>::new()
        );
    }
}

#[test]
fn fast_pipes_falls_back_when_stdin_is_a_file() {
    let dir = std::env::temp_dir().join(format!("reference-server-fast-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("input.jsonl");
    let init =
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":init_params("2025-11-25")});
    fs::write(&input, format!("{init}\n")).expect("write input");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_reference-server"))
        .arg("--fast-pipes")
        .stdin(fs::File::open(&input).expect("open input"))
        .output()
        .expect("run server");
    fs::remove_dir_all(&dir).ok();
    assert!(output.status.success());
    let reply: Value = serde_json::from_slice(&output.stdout).expect("one json line");
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--fast-pipes unavailable"), "{stderr}");
}
