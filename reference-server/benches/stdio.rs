//! Speed of the real binary over pipes: startup to the initialize response,
//! JSON-RPC ping round trip (median and p99), the server's CPU time and
//! voluntary context switches per ping, and peak RSS.
//!
//! Wall-clock round trips swing with the machine's load; CPU time and context
//! switches per ping (from `getrusage(RUSAGE_CHILDREN)` once the server has
//! been reaped) do not, so they are the numbers to compare implementations by
//! on a shared machine.
//!
//! Run with `cargo bench -p reference-server`. Set `BENCH_STDIO_SERVER` to the path of
//! another stdio MCP server binary that serves the fixture profile (for example the rmcp
//! fixture from `targets/rmcp`, built in release mode) to measure it the same way, and
//! `BENCH_STDIO_ARGS` to space-separated arguments for it (`--fast-pipes`).

#![allow(unsafe_code)] // libc: getrusage(2) of the server measured

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const SPAWNS: usize = 50;
const PINGS: usize = 10_000;
const WARMUP: usize = 500;

const INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","#,
    r#""capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#,
    "\n"
);

/// The binary under measurement: `BENCH_STDIO_SERVER`, or this package's own.
fn server_path() -> String {
    std::env::var("BENCH_STDIO_SERVER")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_reference-server").to_owned())
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Server {
    fn spawn() -> Self {
        let args = std::env::var("BENCH_STDIO_ARGS").unwrap_or_default();
        let mut child = Command::new(server_path())
            .args(args.split_whitespace())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn reference-server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
            line: String::new(),
        }
    }

    fn round_trip(&mut self, message: &str) -> &str {
        self.stdin.write_all(message.as_bytes()).expect("write");
        self.stdin.flush().expect("flush");
        self.line.clear();
        self.stdout.read_line(&mut self.line).expect("read");
        assert!(!self.line.is_empty(), "server closed stdout");
        &self.line
    }

    fn status_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    }

    fn close(mut self) {
        drop(self.stdin);
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "server exited with {status}");
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// CPU time and voluntary context switches of every reaped child so far.
#[derive(Clone, Copy)]
struct ChildUsage {
    cpu: Duration,
    switches: i64,
}

fn child_usage() -> ChildUsage {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage), 0);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    ChildUsage {
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
        switches: usage.ru_nvcsw,
    }
}

fn main() {
    // Startup: spawn to initialize response.
    let mut startups = Vec::with_capacity(SPAWNS);
    for _ in 0..SPAWNS {
        let start = Instant::now();
        let mut server = Server::spawn();
        let reply = server.round_trip(INITIALIZE);
        startups.push(start.elapsed());
        assert!(reply.contains("\"protocolVersion\""), "{reply}");
        server.close();
    }
    startups.sort();

    // Ping round trips on one initialized server.
    let usage_before = child_usage();
    let mut server = Server::spawn();
    server.round_trip(INITIALIZE);
    let mut rtts = Vec::with_capacity(PINGS);
    for n in 0..WARMUP + PINGS {
        let ping = format!("{{\"jsonrpc\":\"2.0\",\"id\":{n},\"method\":\"ping\"}}\n");
        let start = Instant::now();
        let reply = server.round_trip(&ping);
        let elapsed = start.elapsed();
        debug_assert!(reply.contains("\"result\":{}"));
        if n >= WARMUP {
            rtts.push(elapsed);
        }
    }
    rtts.sort();

    // Some cancellation traffic before reading the high-water mark.
    for n in 0..100 {
        let call = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"w{n}\",\"method\":\"tools/call\",\"params\":{{\"name\":\"work\",\"arguments\":{{}},\"_meta\":{{\"progressToken\":{n}}}}}}}\n"
        );
        server.round_trip(&call); // its "Started" progress
        let cancel = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":\"w{n}\"}}}}\n"
        );
        server.stdin.write_all(cancel.as_bytes()).expect("write");
    }
    server.round_trip("{\"jsonrpc\":\"2.0\",\"id\":\"end\",\"method\":\"ping\"}\n");
    let hwm = server.status_kib("VmHWM:");
    let rss = server.status_kib("VmRSS:");
    server.close();
    let usage_after = child_usage();
    // The initialize and the cancellation traffic are counted too; the pings dominate.
    let messages = (WARMUP + PINGS) as u32;
    let cpu_per_ping = usage_after.cpu.saturating_sub(usage_before.cpu) / messages;
    let switches_per_ping =
        (usage_after.switches - usage_before.switches) as f64 / f64::from(messages);

    println!(
        "stdio server over pipes ({} {})",
        server_path(),
        std::env::var("BENCH_STDIO_ARGS").unwrap_or_default()
    );
    println!(
        "  startup to initialize response: median {} over {SPAWNS} spawns (min {}, max {})",
        micros(percentile(&startups, 0.5)),
        micros(startups[0]),
        micros(startups[SPAWNS - 1]),
    );
    println!(
        "  ping round trip: p50 {}, p99 {} over {PINGS} pings",
        micros(percentile(&rtts, 0.5)),
        micros(percentile(&rtts, 0.99)),
    );
    println!(
        "  server cost per ping: {} cpu, {switches_per_ping:.2} voluntary context switches",
        micros(cpu_per_ping),
    );
    match (hwm, rss) {
        (Some(hwm), Some(rss)) => println!(
            "  peak rss (VmHWM): {:.2} MiB (current VmRSS {:.2} MiB)",
            hwm as f64 / 1024.0,
            rss as f64 / 1024.0
        ),
        _ => println!("  peak rss: unavailable (no /proc)"),
    }
}
