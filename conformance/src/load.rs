//! How busy the machine is, so that waits are judged fairly on a loaded CI runner.
//!
//! A target that answers in 50 ms on a calm machine may need seconds when every core is busy:
//! its answer is slow, not missing. The harness reads the kernel's CPU pressure (the share of
//! time runnable tasks waited for a CPU, `/proc/pressure/cpu`, "some", averaged over 10 s) and
//! stretches its waits for answers in proportion: with 80 % pressure a task gets about a fifth
//! of the CPU it wants, so waits are five times as long (at most ten). A run on a calm machine
//! waits exactly as long as its options say. Where the pressure cannot be read, nothing is
//! stretched.

use std::time::Duration;

/// The most a wait is stretched.
pub const MAX_STRETCH: f64 = 10.0;

/// The CPU pressure now, in percent (some avg10), where the kernel reports it.
pub fn cpu_pressure() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    let some = text.lines().find(|l| l.starts_with("some"))?;
    some.split_whitespace()
        .find_map(|field| field.strip_prefix("avg10="))?
        .parse()
        .ok()
}

/// How much longer than on a calm machine things take now: 1.0 when calm.
pub fn stretch() -> f64 {
    match cpu_pressure() {
        Some(pressure) => stretch_for(pressure),
        None => 1.0,
    }
}

/// The stretch for a pressure in percent.
pub fn stretch_for(pressure: f64) -> f64 {
    let waiting = (pressure / 100.0).clamp(0.0, 0.99);
    (1.0 / (1.0 - waiting)).clamp(1.0, MAX_STRETCH)
}

/// A wait stretched by `factor`.
pub fn stretched(wait: Duration, factor: f64) -> Duration {
    wait.mul_f64(factor.max(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calm_is_one_and_busy_is_bounded() {
        assert_eq!(stretch_for(0.0), 1.0);
        assert!((stretch_for(50.0) - 2.0).abs() < 1e-9);
        assert!((stretch_for(80.0) - 5.0).abs() < 1e-9);
        assert_eq!(stretch_for(100.0), MAX_STRETCH);
        assert_eq!(
            stretched(Duration::from_secs(2), 2.5),
            Duration::from_secs(5)
        );
    }
}
