use super::*;
use crate::trace::Trace;
use std::path::Path;

const HEADER: &str = r#"{"trace":"mcp-conformance","version":1,"transport":"stdio","started":"2026-12-06T05:20:11.123Z","recorder":"conformance 0.1.0","server":{"argv":["node","server.js"]},"redacted":[]}"#;

/// A trace of `events`, each `(µs, from, message)`; `from` is `client`, `server`, or an event
/// line of its own when it starts with `{`.
fn trace(events: &[(u64, &str, &str)]) -> Trace {
    let mut text = format!("{HEADER}\n");
    for (at, from, message) in events {
        let line = if from.starts_with('{') {
            from.replacen('{', &format!("{{\"at\":{at},"), 1)
        } else {
            let text = serde_json::to_string(message).unwrap();
            format!(r#"{{"at":{at},"event":"message","from":"{from}","text":{text}}}"#)
        };
        text.push_str(&line);
        text.push('\n');
    }
    Trace::parse(Path::new("rec/trace.jsonl"), &text).expect("a valid trace")
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"desk","version":"1"}}}"#;
const INIT_OK: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"3.1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const WORK: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"p-1"}}}"#;
const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p-1","progress":1,"total":10}}"#;
const CANCEL: &str = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user   pressed stop"}}"#;
const LATE: &str =
    r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Request cancelled"}}"#;

fn opening() -> Vec<(u64, &'static str, &'static str)> {
    vec![
        (10, "client", INIT),
        (900, "server", INIT_OK),
        (1000, "client", INITIALIZED),
    ]
}

fn lines(draft: &Draft) -> Vec<String> {
    draft
        .lines
        .iter()
        .map(|l| match l {
            Line::Send(t) => format!("> {t}"),
            Line::Expect(t) => format!("< {t}"),
            Line::Control(t) => format!("! {t}"),
            Line::Comment(t) => format!("# {t}"),
        })
        .collect()
}

#[test]
fn a_cancel_after_the_first_progress_is_placed_there_and_judged_by_the_rules() {
    let mut events = opening();
    events.extend([
        (2_000, "client", WORK),
        (30_000, "server", PROGRESS),
        (31_000, "client", CANCEL),
    ]);
    let draft = draft(&trace(&events)).unwrap();
    assert_eq!(
        lines(&draft),
        [
            format!("> {WORK}"),
            r#"< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":"{number}","progressToken":"p-1","total":"{number}"}}"#.to_string(),
            "! cancel 1 user pressed stop".into(),
            "! barrier".into(),
            "! silent 1 500ms".into(),
        ]
    );
    assert_eq!(
        draft.version,
        Some(crate::era::ProtocolVersion::V2025_06_18),
        "the agreed version"
    );
    assert!(draft.requirements.contains(&Req::Can05));
    assert!(
        draft
            .intent
            .contains("request 1 (`tools/call` of `work`) is cancelled after its first progress"),
        "{}",
        draft.intent
    );
    assert_eq!(
        draft.recorded,
        "Recorded from `node server.js` on 2026-12-06, at protocol version 2025-06-18."
    );
}

#[test]
fn a_cancel_long_after_the_only_progress_follows_the_clock() {
    let mut events = opening();
    events.extend([
        (2_000, "client", WORK),
        (30_000, "server", PROGRESS),
        (2_002_000, "client", CANCEL),
    ]);
    let got = lines(&draft_of(&events));
    assert!(got[1].starts_with("< "), "{got:?}");
    assert_eq!(got[2], "! after 2000ms");
}

#[test]
fn a_cancel_by_deadline_waits_as_long_as_the_client_did_and_a_late_answer_is_watched_for() {
    let mut events = opening();
    events.extend([
        (2_000, "client", WORK),
        (152_000, "client", CANCEL),
        (452_000, "server", LATE),
    ]);
    let draft = draft(&trace(&events)).unwrap();
    let got = lines(&draft);
    assert_eq!(got[1], "! after 150ms");
    assert_eq!(got[2], "! cancel 1 user pressed stop");
    assert_eq!(
        got[4], "! silent 1 700ms",
        "twice the late answer's delay, and some"
    );
    assert!(
        got[5].contains("still spoke of request 1 300 ms after this cancel"),
        "{got:?}"
    );
    assert!(
        !got.iter().any(|l| l.starts_with('<')),
        "no verbatim late answer: {got:?}"
    );
    assert!(draft.requirements.contains(&Req::Tmo02));
}

#[test]
fn a_cancel_after_the_answer_is_a_late_cancel() {
    let echo = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
    let mut events = opening();
    events.extend([
        (2_000, "client", echo),
        (3_000, "server", answer),
        (9_000, "client", CANCEL),
    ]);
    let draft = draft(&trace(&events)).unwrap();
    let got = lines(&draft);
    assert_eq!(
        got[1],
        r#"< {"id":1,"jsonrpc":"2.0","result":{"content":"{array}"}}"#
    );
    assert_eq!(
        got[2], "! cancel 1 user pressed stop",
        "no wait: the answer came first"
    );
    assert!(draft.requirements.contains(&Req::Can09));
}

#[test]
fn what_the_harness_does_itself_is_left_out() {
    let asks = r#"{"jsonrpc":"2.0","id":"s-1","method":"roots/list"}"#;
    let answers = r#"{"jsonrpc":"2.0","id":"s-1","result":{"roots":[]}}"#;
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let log = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#;
    let mut events = opening();
    events.extend([
        (1_100, "server", asks),
        (1_200, "client", answers),
        (1_300, "server", log),
        (2_000, "client", ping),
        (2_100, "server", r#"{"jsonrpc":"2.0","id":2,"result":{}}"#),
    ]);
    let got = lines(&draft(&trace(&events)).unwrap());
    assert!(got[0].contains("asked the client `roots/list`"), "{got:?}");
    assert_eq!(got[1], format!("> {ping}"));
    assert_eq!(got[2], r#"< {"id":2,"jsonrpc":"2.0","result":{}}"#);
    assert!(got[3].contains("`notifications/message` (1)"), "{got:?}");
}

#[test]
fn a_closed_stdin_and_the_exit_become_steps_and_a_crash_a_comment() {
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let mut events = opening();
    events.extend([
        (2_000, "client", ping),
        (2_100, "server", r#"{"jsonrpc":"2.0","id":2,"result":{}}"#),
        (3_000, r#"{"event":"closed","from":"client"}"#, ""),
        (4_000, r#"{"event":"exit","code":0,"signal":null}"#, ""),
    ]);
    let draft = draft(&trace(&events)).unwrap();
    assert_eq!(
        lines(&draft)[2..],
        ["! close-stdin".to_string(), "! exit 2000ms".into()]
    );
    assert!(draft.stdio_only);
    let mut events = opening();
    events.extend([
        (2_000, "client", WORK),
        (3_000, r#"{"event":"exit","code":3,"signal":null}"#, ""),
    ]);
    let draft = draft_of(&events);
    assert!(lines(&draft)[1].contains("exited here with code 3, 1 request(s) unanswered"));
}

fn draft_of(events: &[(u64, &str, &str)]) -> Draft {
    draft(&trace(events)).unwrap()
}

#[test]
fn refusals_say_why_and_where() {
    let e = draft(&trace(&opening())).unwrap_err();
    assert_eq!(e.line, 0);
    assert!(
        e.to_string()
            .starts_with("rec/trace.jsonl: the trace holds no request"),
        "{e}"
    );
    let mut http = trace(&opening());
    http.header.transport = crate::trace::Transport::Http;
    let e = draft(&http).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("rec/trace.jsonl:1: a Streamable HTTP recording"),
        "{e}"
    );
}

#[test]
fn the_rendered_case_parses_and_says_what_the_client_did_wrong() {
    let mut events = opening();
    events.extend([
        (2_000, "client", WORK),
        (30_000, "server", PROGRESS),
        (31_000, "client", CANCEL),
    ]);
    let path = Path::new("cases/server/recorded.mcpt");
    let text = render(&draft_of(&events), path).unwrap();
    let case = crate::case::parse("recorded", "cases/server/recorded.mcpt", &text).unwrap();
    assert!(case
        .intent
        .starts_with("Replays a recorded session of `tools/call` of `work` in which"));
    assert!(
        case.versions.iter().all(|v| v.has_handshake()),
        "the era: {:?}",
        case.versions
    );
    assert!(
        case.intent.ends_with("at protocol version 2025-06-18."),
        "{}",
        case.intent
    );
    assert!(case.deviation.is_none());
    // A cancel of a request never sent is the client's deviation, replayed as recorded.
    let stray = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}"#;
    events.push((40_000, "client", stray));
    let text = render(&draft_of(&events), path).unwrap();
    assert!(
        text.contains(
            "@deviation the recorded client sent a cancel of request 99, which it never sent"
        ),
        "{text}"
    );
    assert!(text.contains(&format!("> {stray}")));
}
