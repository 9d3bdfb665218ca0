//! Wall time of the whole server suite against the bundled reference server, over stdio and
//! over Streamable HTTP (a fresh `reference-server --http` per case), and the slowest cases:
//! `cargo bench -p conformance`.

use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let exe = env!("CARGO_BIN_EXE_conformance");
    suite("stdio", &["server"]);
    let http: Vec<&str> = vec![
        "server",
        "--url",
        "http://127.0.0.1:{port}/mcp",
        "--",
        exe,
        "reference-server",
        "--http",
        "127.0.0.1:{port}",
    ];
    suite("Streamable HTTP", &http);
}

/// Runs the suite with `args` several times and prints the wall times and the slowest cases.
fn suite(transport: &str, args: &[&str]) {
    let exe = env!("CARGO_BIN_EXE_conformance");
    let json = std::env::temp_dir().join(format!("conformance-bench-{}.json", std::process::id()));
    let mut walls = vec![];
    let runs = 5;
    for _ in 0..runs {
        let start = Instant::now();
        // `--json` goes before `--`, which ends the harness's own options.
        let (own, server) =
            args.split_at(args.iter().position(|a| *a == "--").unwrap_or(args.len()));
        let status = Command::new(exe)
            .args(own)
            .arg("--json")
            .arg(&json)
            .args(server)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run conformance");
        walls.push(start.elapsed());
        assert!(
            status.success(),
            "the suite failed against the reference server over {transport}"
        );
    }
    walls.sort();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json report")).expect("json");
    let _ = std::fs::remove_file(&json);
    let cases = report["cases"].as_array().cloned().unwrap_or_default();
    let ran: Vec<_> = cases.iter().filter(|c| c["outcome"] != "skip").collect();
    let total: u64 = ran.iter().filter_map(|c| c["durationMs"].as_u64()).sum();
    println!(
        "server suite against the reference server over {transport}, {} cases run ({} skipped), {runs} runs",
        ran.len(),
        cases.len() - ran.len()
    );
    println!(
        "  wall time: min {} median {} max {}",
        ms(walls[0]),
        ms(walls[runs / 2]),
        ms(walls[runs - 1])
    );
    println!("  sum of case times (last run): {total} ms");
    let mut slow: Vec<_> = ran
        .iter()
        .map(|c| {
            (
                c["durationMs"].as_u64().unwrap_or(0),
                c["id"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    slow.sort_by(|a, b| b.cmp(a));
    for (d, id) in slow.iter().take(5) {
        println!("  {d:>5} ms  {id}");
    }
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}
