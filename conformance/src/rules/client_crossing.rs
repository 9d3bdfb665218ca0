//! The findings about a client's messages whose POSTs may have crossed over Streamable HTTP
//! (every message is its own POST, and two a client wrote in one order may arrive in the
//! other): whether a later message arrived within the crossing grace of a held one, a cancel
//! that overtook its request (CAN-01, a note), a request that crossed or preceded
//! `notifications/initialized` (LIF-03).
//!
//! Functions over the held message's arrival and a reading of the clock; what is held, and
//! when it is judged, is the engine's (`engine/client/crossing.rs`).

use crate::facts::waits::Waits;
use crate::outcome::Severity;
use crate::requirement::Req;
use crate::rules::envelope::Problem;
use serde_json::Value;
use std::time::Duration;

/// Whether a message arriving `later` (since the client started) crossed one that arrived
/// `arrived`, when the client had waited `waited` for a CPU: it came within the crossing grace
/// (the calm grace of `waits`, longer by the client's waits for a CPU since, see
/// [`Waits::grace_after`]).
pub fn crossed(
    arrived: Duration,
    waited: Option<Duration>,
    later: Duration,
    waits: &Waits,
) -> bool {
    later.saturating_sub(arrived) <= waits.grace_after(waited)
}

/// The cancel of request `key` arrived `early_by` before the request itself: a note, whether
/// the two `crossed` (then the cancel is judged as sent after its request) or not (then as
/// sent first).
pub fn overtaken(key: &str, early_by: Duration, crossed: bool) -> Problem {
    Problem::new(
        Severity::Note,
        Req::Can01,
        format!(
            "the cancel of request {key} arrived {} ms before the request itself: its POST overtook the request's ({})",
            early_by.as_millis(),
            if crossed {
                "separate POSTs may cross"
            } else {
                "later than POSTs usually cross; judged as sent in this order"
            }
        ),
    )
}

/// A request (`method`) that arrived `early_by` before `notifications/initialized` and crossed
/// it: allowed, noted (LIF-03).
pub fn crossed_initialized(method: &Value, early_by: Duration) -> Problem {
    Problem::new(
        Severity::Note,
        Req::Lif03,
        format!(
            "the client's `{}` arrived {} ms before its `notifications/initialized`: their POSTs crossed (allowed)",
            method.as_str().unwrap_or("request"),
            early_by.as_millis()
        ),
    )
}

/// A request (`method`) sent before `notifications/initialized`, which no crossing explains
/// (LIF-03).
pub fn too_early(method: &Value) -> Problem {
    Problem::new(
        Severity::Warn,
        Req::Lif03,
        format!(
            "the client sent `{}` before `notifications/initialized`; it sends that first, once `initialize` is answered",
            method.as_str().unwrap_or("a request")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::ms;
    use serde_json::json;

    #[test]
    fn a_message_within_the_grace_crossed_and_one_after_it_did_not() {
        let calm = Waits::calm(ms(250), None);
        assert!(crossed(ms(100), None, ms(350), &calm));
        assert!(!crossed(ms(100), None, ms(351), &calm));
        assert!(crossed(ms(100), None, ms(50), &calm), "it came first");
    }

    #[test]
    fn the_grace_grows_by_the_clients_waits_for_a_cpu_since() {
        let busy = Waits::calm(ms(250), Some(ms(700)));
        assert!(crossed(ms(0), Some(ms(200)), ms(750), &busy));
        assert!(!crossed(ms(0), Some(ms(200)), ms(751), &busy));
    }

    #[test]
    fn where_the_kernel_does_not_say_the_grace_is_stretched_by_the_pressure() {
        let pressed = Waits {
            now: None,
            calm: ms(250),
            stretch: 2.0,
        };
        assert!(crossed(ms(0), None, ms(500), &pressed));
        assert!(!crossed(ms(0), None, ms(501), &pressed));
    }

    #[test]
    fn a_cancel_that_overtook_its_request_is_a_can01_note_either_way() {
        let p = overtaken("1", ms(40), true);
        assert_eq!((p.severity, p.requirement), (Severity::Note, Req::Can01));
        assert!(p.message.contains("may cross"), "{}", p.message);
        let p = overtaken("1", ms(4000), false);
        assert_eq!(p.severity, Severity::Note);
        assert!(p.message.contains("judged as sent in this order"));
    }

    #[test]
    fn a_request_that_crossed_initialized_is_a_lif03_note() {
        let p = crossed_initialized(&json!("tools/list"), ms(3));
        assert_eq!((p.severity, p.requirement), (Severity::Note, Req::Lif03));
        assert!(p.message.contains("tools/list") && p.message.contains("3 ms"));
    }

    #[test]
    fn a_request_before_initialized_warns_lif03() {
        let p = too_early(&json!("tools/list"));
        assert_eq!((p.severity, p.requirement), (Severity::Warn, Req::Lif03));
    }
}
