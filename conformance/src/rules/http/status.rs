//! A channel's response head: a session id of visible ASCII (HTTP-16) and none minted in the
//! stateless era (HTTP-20); `202` for a notification or a response (HTTP-07, a cancel's refusal
//! a warning, HTTP-17); `application/json` or `text/event-stream` for a request (HTTP-08); SSE
//! or `405` for a GET (HTTP-12).

use crate::exchange::{Channel, Head};
use crate::facts::ledger::SentRequest;
use crate::facts::streams::{Opened, Stream};
use crate::outcome::Severity;
use crate::requirement::Req;
use crate::rules::envelope::Problem;

/// What is known when a channel's response head comes.
#[derive(Debug, Clone, Copy)]
pub struct StatusFacts<'a> {
    /// The channel.
    pub channel: Channel,
    /// Its head.
    pub head: &'a Head,
    /// The channel's bookkeeping, if the harness opened it.
    pub stream: Option<&'a Stream>,
    /// The ledger entry of the request that opened it, or of the request the cancel that opened
    /// it names.
    pub request: Option<&'a SentRequest>,
    /// The run is in the stateless era, where an error status's body answers the request.
    pub stateless: bool,
}

/// Judges a channel's response head.
pub fn status(facts: &StatusFacts) -> Vec<Problem> {
    let StatusFacts {
        channel,
        head,
        stream,
        request,
        stateless,
    } = *facts;
    let mut problems = vec![];
    if let Some(raw) = &head.session {
        if raw.is_empty() || !raw.iter().all(|b| (0x21..=0x7e).contains(b)) {
            problems.push(Problem::new(
                Severity::Fail,
                Req::Http16,
                format!(
                    "{channel} assigned the session id {:?}, which is not visible ASCII (0x21 to 0x7E)",
                    String::from_utf8_lossy(raw)
                ),
            ));
        }
    }
    let Some(stream) = stream else {
        return problems;
    };
    // 2026-07-28 has no sessions; only a legacy `initialize` may open one (LIF-14).
    let initialize =
        matches!(&stream.opened, Opened::Request(_)) && request.is_some_and(|r| r.starts);
    if head.session.is_some() && stateless && !initialize {
        problems.push(Problem::new(
            Severity::Warn,
            Req::Http20,
            format!(
                "{channel} carried Mcp-Session-Id {:?}; 2026-07-28 has no sessions, so a server mints none",
                String::from_utf8_lossy(head.session.as_deref().unwrap_or_default())
            ),
        ));
    }
    if stream.expected.is_some() {
        // The case judges this status with `! status`.
        return problems;
    }
    problems.extend(by_opener(facts, &stream.opened));
    problems
}

/// What the status says, given what opened the channel.
fn by_opener(facts: &StatusFacts, opened: &Opened) -> Option<Problem> {
    let StatusFacts { channel, head, .. } = *facts;
    let code = head.code;
    let shown = head.summary();
    let redirect = (300..400).contains(&code).then(|| {
        "; the harness does not follow redirects: give the endpoint's final URL".to_string()
    });
    let problem =
        |severity, requirement, message| Some(Problem::new(severity, requirement, message));
    match opened {
        Opened::Notification { .. } | Opened::Response if code == 202 => None,
        Opened::Notification { method, cancels } => {
            let what = format!("{channel} ({method})");
            if (200..400).contains(&code) {
                return problem(
                    Severity::Fail,
                    Req::Http07,
                    format!("{what} got HTTP {shown}; a notification is accepted with 202 and an empty body, or refused with an error status{}", redirect.unwrap_or_default()),
                );
            }
            match facts.request.filter(|_| cancels.is_some()) {
                Some(request) if !request.starts => problem(
                    Severity::Warn,
                    Req::Http17,
                    format!(
                        "the cancel of request {} ({channel}) got HTTP {shown}; a cancel of the client's own request gets 202 (a refusal is allowed only as a warning, AMB-09)",
                        cancels.clone().unwrap_or_default()
                    ),
                ),
                _ => problem(
                    Severity::Note,
                    Req::Http07,
                    format!("{what} got HTTP {shown} (allowed for a notification the server cannot accept, AMB-10)"),
                ),
            }
        }
        Opened::Response => problem(
            Severity::Fail,
            Req::Http07,
            format!("{channel} (the harness's answer to the server's request) got HTTP {shown}; a response is accepted with 202 and an empty body"),
        ),
        Opened::Request(key) => request_status(facts, key, redirect),
        Opened::Listen => {
            let sse = head.content_type.as_deref() == Some("text/event-stream");
            (!(code == 405 || (code == 200 && sse))).then(|| {
                Problem::new(
                    Severity::Fail,
                    Req::Http12,
                    format!("{channel} got HTTP {shown}; a GET gets text/event-stream or 405"),
                )
            })
        }
        Opened::Other | Opened::Delete => None,
    }
}

/// The status of request `key`'s POST.
fn request_status(facts: &StatusFacts, key: &str, redirect: Option<String>) -> Option<Problem> {
    let StatusFacts { channel, head, .. } = *facts;
    let code = head.code;
    let shown = head.summary();
    let typed = matches!(
        head.content_type.as_deref(),
        Some("application/json" | "text/event-stream")
    );
    if (200..300).contains(&code) && code != 202 && typed {
        return None;
    }
    // In 2026-07-28 an error status carries the JSON-RPC error that answers the request
    // (HTTP-19, LIF-10, LIF-12): judged once the body has been read.
    if facts.stateless && (400..500).contains(&code) && typed {
        return None;
    }
    let cancelled = facts.request.is_some_and(|r| r.cancel.is_some());
    if cancelled && !(300..400).contains(&code) {
        // A cancelled request's POST still needs some HTTP answer (AMB-03).
        return Some(Problem::new(
            Severity::Note,
            Req::Http08,
            format!("{channel} (request {key}, cancelled) got HTTP {shown} (allowed for a cancelled request, AMB-03)"),
        ));
    }
    let why = if (200..300).contains(&code) {
        "a request is answered with application/json or text/event-stream".to_string()
    } else {
        format!(
            "the server refused a request the case expects it to serve{}",
            redirect.unwrap_or_default()
        )
    };
    Some(Problem::new(
        Severity::Fail,
        Req::Http08,
        format!("{channel} (request {key}) got HTTP {shown}; {why}"),
    ))
}
