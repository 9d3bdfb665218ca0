//! Wall time of the whole server suite against the bundled reference server, and the slowest
//! cases: `cargo bench -p conformance`.

use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let exe = env!("CARGO_BIN_EXE_conformance");
    let json = std::env::temp_dir().join(format!("conformance-bench-{}.json", std::process::id()));
    let mut walls = vec![];
    let runs = 7;
    for _ in 0..runs {
        let start = Instant::now();
        let status = Command::new(exe)
            .args(["server", "--json"])
            .arg(&json)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run conformance");
        walls.push(start.elapsed());
        assert!(
            status.success(),
            "the suite failed against the reference server"
        );
    }
    walls.sort();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json report")).expect("json");
    let _ = std::fs::remove_file(&json);
    let cases = report["cases"].as_array().cloned().unwrap_or_default();
    let total: u64 = cases.iter().filter_map(|c| c["duration_ms"].as_u64()).sum();
    println!(
        "server suite against the reference server, {} cases, {runs} runs",
        cases.len()
    );
    println!(
        "  wall time: min {} median {} max {}",
        ms(walls[0]),
        ms(walls[runs / 2]),
        ms(walls[runs - 1])
    );
    println!("  sum of case times (last run): {total} ms");
    let mut slow: Vec<_> = cases
        .iter()
        .map(|c| {
            (
                c["duration_ms"].as_u64().unwrap_or(0),
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
