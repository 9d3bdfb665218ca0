//! `! arrives FROM..TO` windows: when the next expected message may arrive, relative to the
//! one matched before it, and whether load explains one that came late.

use crate::case::Arrival;
use std::time::Duration;

/// What the engine knows of the pending window.
#[derive(Debug, Default)]
pub struct Arrivals {
    /// The window for the next expected message.
    window: Option<Arrival>,
    /// When the last expected message arrived (since the target started).
    last: Option<Duration>,
    /// How long the target's processes had waited for a CPU when the window was set.
    waited_before: Option<Duration>,
}

/// How a message outside its window weighs.
#[derive(Debug, PartialEq)]
pub enum Late {
    /// Outside the window, and nothing explains it.
    Judged(String),
    /// Late, but the target waited at least that long for a CPU meanwhile.
    TargetStarved(String, Duration),
    /// Late, but the harness's own timers ran about as late.
    HarnessLate(String, Duration),
}

impl Arrivals {
    /// `! arrives`: the next expected message has this window; the target had waited
    /// `waited` for a CPU when it was set.
    pub fn expect(&mut self, window: Arrival, waited: Option<Duration>) {
        self.window = Some(window);
        self.waited_before = waited;
    }

    /// An expected message arrived `at`: its window's verdict, if it broke one. `waited_now`
    /// is how long the target has waited for a CPU by now, `lateness` how late the harness's
    /// own timers ran at the worst.
    ///
    /// Early is always judged: load only makes things later. Late is judged unless load
    /// explains the overshoot: the target's own processes waited at least that long for a CPU
    /// since the window was set (a target whose own timer is late waits for none), or the
    /// harness itself was held up about as long (its timers ran late by at least half the
    /// overshoot).
    pub fn arrived(
        &mut self,
        at: Duration,
        waited_now: Option<Duration>,
        lateness: Duration,
    ) -> Option<Late> {
        let verdict = match (self.window.take(), self.last) {
            (Some(window), Some(previous)) => {
                let gap = at.saturating_sub(previous);
                window.judge(gap).map(|complaint| {
                    let overshoot = gap.saturating_sub(window.to);
                    let starved = waited_now
                        .zip(self.waited_before)
                        .map(|(now, before)| now.saturating_sub(before))
                        .unwrap_or_default();
                    if !overshoot.is_zero() && starved >= overshoot {
                        Late::TargetStarved(complaint, starved)
                    } else if !overshoot.is_zero() && lateness * 2 >= overshoot {
                        Late::HarnessLate(complaint, lateness)
                    } else {
                        Late::Judged(complaint)
                    }
                })
            }
            _ => None,
        };
        self.last = Some(at);
        verdict
    }

    /// Until when (since the target started) the next expected message may still come, by
    /// its window stretched by `stretch`; `None` without a window.
    pub fn window_end(&self, stretch: impl Fn(Duration) -> Duration) -> Option<Duration> {
        match (self.window, self.last) {
            (Some(window), Some(previous)) => Some(previous + stretch(window.to)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(from: u64, to: u64) -> Arrival {
        Arrival {
            from: Duration::from_millis(from),
            to: Duration::from_millis(to),
            line: 7,
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn in_the_window_is_fine_and_early_is_judged() {
        let mut a = Arrivals::default();
        assert_eq!(a.arrived(ms(100), None, ms(0)), None, "no window yet");
        a.expect(window(50, 150), None);
        assert_eq!(a.arrived(ms(200), None, ms(0)), None);
        a.expect(window(50, 150), None);
        assert!(matches!(
            a.arrived(ms(210), None, ms(0)),
            Some(Late::Judged(_))
        ));
    }

    #[test]
    fn late_is_excused_only_by_load_as_long_as_the_overshoot() {
        let mut a = Arrivals::default();
        a.arrived(ms(0), None, ms(0));
        a.expect(window(50, 150), Some(ms(10)));
        // 50 ms over; the target waited 60 ms for a CPU meanwhile.
        let late = a.arrived(ms(200), Some(ms(70)), ms(0));
        assert!(matches!(late, Some(Late::TargetStarved(_, d)) if d == ms(60)));
        a.expect(window(50, 150), Some(ms(10)));
        // 50 ms over; the target waited 5 ms, the harness ran 30 ms late.
        let late = a.arrived(ms(400), Some(ms(15)), ms(30));
        assert!(matches!(late, Some(Late::HarnessLate(_, _))));
        a.expect(window(50, 150), Some(ms(10)));
        let late = a.arrived(ms(600), Some(ms(15)), ms(10));
        assert!(
            matches!(late, Some(Late::Judged(_))),
            "a target late by its own timer"
        );
    }

    #[test]
    fn the_window_end_follows_the_last_arrival() {
        let mut a = Arrivals::default();
        assert_eq!(a.window_end(|d| d), None);
        a.arrived(ms(40), None, ms(0));
        a.expect(window(50, 150), None);
        assert_eq!(a.window_end(|d| d * 2), Some(ms(340)));
    }
}
