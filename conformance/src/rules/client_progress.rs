//! The standing rules for progress a client reports on a request of the harness's: a token the
//! harness gave (PRG-06), a text `message` where the era has one (PRG-05), a numeric `progress`
//! (PRG-02) that increases across all the client sent (PRG-03), unless two POSTs may have
//! crossed (a note).
//!
//! A function over the notification, the ledger entry of the request it reports on and the
//! era, returning findings; the engine applies them (`engine/client/message.rs`).

use crate::exchange::Channel;
use crate::facts::ledger::SentRequest;
use crate::outcome::Severity;
use crate::pattern::canonical;
use crate::requirement::Req;
use crate::rules::envelope::Problem;
use serde_json::Value;

/// What is known when a client's progress notification arrives.
#[derive(Debug, Clone, Copy)]
pub struct ClientProgressFacts<'a> {
    /// Its `params`.
    pub params: Option<&'a Value>,
    /// The key of the harness's request its token names, and that request's ledger entry.
    pub request: Option<(&'a str, Option<&'a SentRequest>)>,
    /// The era's progress notifications carry a `message`.
    pub has_message: bool,
    /// Its POST arrived within the grace of the previous progress's (over HTTP): a value below
    /// the one before may have crossed it.
    pub crossed: bool,
}

/// Judges a client's progress notification: the findings, and its numeric value (to compare
/// the next one with), if it has one.
pub fn client_progress(facts: &ClientProgressFacts) -> (Vec<Problem>, Option<f64>) {
    let params = facts.params;
    let token = params.and_then(|p| p.get("progressToken"));
    let Some((request, sent)) = facts.request else {
        let shown = token.map(canonical).unwrap_or_else(|| "none".into());
        let problem = Problem::new(
            Severity::Fail,
            Req::Prg06,
            format!("the client sent progress for token {shown}, which no request of the harness's carries"),
        );
        return (vec![problem], None);
    };
    let mut problems = vec![];
    if let Some(message) = params.and_then(|p| p.get("message")) {
        if !message.is_string() && facts.has_message {
            problems.push(Problem::new(
                Severity::Fail,
                Req::Prg05,
                format!(
                    "the client's progress `message` must be text, got {}",
                    canonical(message)
                ),
            ));
        }
    }
    let Some(value) = params
        .and_then(|p| p.get("progress"))
        .and_then(Value::as_f64)
    else {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Prg02,
            format!("the client's progress for request {request} has no numeric `progress`"),
        ));
        return (problems, None);
    };
    // A client's progress is compared across all it sent.
    let previous = sent
        .and_then(|s| s.last_progress)
        .filter(|(_, on)| *on == Channel::Stdio)
        .map(|(p, _)| p);
    if let Some(previous) = previous.filter(|previous| value <= *previous) {
        problems.push(if facts.crossed {
            Problem::new(
                Severity::Note,
                Req::Prg03,
                format!("the client's progress for request {request} went from {previous} to {value}, within the time two of its POSTs may cross: the order of arrival cannot tell"),
            )
        } else {
            Problem::new(
                Severity::Fail,
                Req::Prg03,
                format!("the client's progress for request {request} went from {previous} to {value}; it must increase"),
            )
        });
    }
    (problems, Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::call;
    use serde_json::json;

    fn judge(
        params: Value,
        sent: Option<&SentRequest>,
        crossed: bool,
    ) -> (Vec<Problem>, Option<f64>) {
        client_progress(&ClientProgressFacts {
            params: Some(&params),
            request: Some(("1", sent)),
            has_message: true,
            crossed,
        })
    }

    fn reqs(problems: &[Problem]) -> Vec<(Severity, Req)> {
        problems
            .iter()
            .map(|p| (p.severity, p.requirement))
            .collect()
    }

    fn after(previous: f64) -> SentRequest {
        let mut r = call();
        r.last_progress = Some((previous, Channel::Stdio));
        r
    }

    #[test]
    fn progress_for_a_token_the_harness_never_gave_breaks_prg_06() {
        let (found, value) = client_progress(&ClientProgressFacts {
            params: Some(&json!({"progressToken": 4, "progress": 1})),
            request: None,
            has_message: true,
            crossed: false,
        });
        assert_eq!(
            found[0].message,
            "the client sent progress for token 4, which no request of the harness's carries"
        );
        assert_eq!(value, None);
    }

    #[test]
    fn a_message_that_is_not_text_breaks_prg_05_where_the_era_has_one() {
        let params = json!({"progressToken": 1, "progress": 1, "message": 3});
        assert_eq!(
            reqs(&judge(params.clone(), None, false).0),
            vec![(Severity::Fail, Req::Prg05)]
        );
        let (found, _) = client_progress(&ClientProgressFacts {
            params: Some(&params),
            request: Some(("1", None)),
            has_message: false,
            crossed: false,
        });
        assert!(found.is_empty());
    }

    #[test]
    fn progress_without_a_number_breaks_prg_02() {
        let (found, value) = judge(json!({"progressToken": 1}), Some(&call()), false);
        assert_eq!(
            found[0].message,
            "the client's progress for request 1 has no numeric `progress`"
        );
        assert_eq!(value, None);
    }

    #[test]
    fn progress_that_does_not_increase_breaks_prg_03() {
        let (found, value) = judge(
            json!({"progressToken": 1, "progress": 2}),
            Some(&after(2.0)),
            false,
        );
        assert_eq!(reqs(&found), vec![(Severity::Fail, Req::Prg03)]);
        assert_eq!(
            found[0].message,
            "the client's progress for request 1 went from 2 to 2; it must increase"
        );
        assert_eq!(value, Some(2.0));
    }

    #[test]
    fn progress_below_one_it_may_have_crossed_is_a_note() {
        let (found, _) = judge(
            json!({"progressToken": 1, "progress": 1}),
            Some(&after(2.0)),
            true,
        );
        assert_eq!(reqs(&found), vec![(Severity::Note, Req::Prg03)]);
    }

    #[test]
    fn increasing_progress_with_a_text_message_is_fine() {
        let params = json!({"progressToken": 1, "progress": 3, "message": "half"});
        let (found, value) = judge(params, Some(&after(2.0)), false);
        assert!(found.is_empty());
        assert_eq!(value, Some(3.0));
    }
}
