//! Recordings of real SDK clients and servers (`examples/pairs`, listed in
//! tests/fixtures/traces/real/README.md), kept as the recorder wrote them: the trace reader
//! takes each whole, and each shows the scenario its name says, so what is judged of them
//! is judged of a real session.

use conformance::trace::{EndBy, Event, Party, Trace, Transport};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn real() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/real")
}

/// Every recording, by file name.
fn recordings() -> Vec<(String, Trace)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(real())
        .expect("tests/fixtures/traces/real")
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 8, "the recordings are missing: {paths:?}");
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let trace = Trace::read(&p).unwrap_or_else(|e| panic!("{e}"));
            (name, trace)
        })
        .collect()
}

/// The messages one side wrote, parsed, with their trace lines.
fn messages(trace: &Trace, side: Party) -> Vec<(usize, Value)> {
    let mut out = vec![];
    for stamped in &trace.events {
        if let Event::Message { from, text, .. } = &stamped.event {
            if *from == side && !text.is_empty() {
                let value = serde_json::from_str(text).expect("checked by the reading test");
                out.push((stamped.line, value));
            }
        }
    }
    out
}

#[test]
fn every_real_recording_reads_whole_and_its_messages_are_json() {
    for (name, trace) in recordings() {
        assert_eq!(trace.cut, None, "{name}: cut short");
        let http = name.contains("-http-");
        let want = if http {
            Transport::Http
        } else {
            Transport::Stdio
        };
        assert_eq!(trace.header.transport, want, "{name}");
        for stamped in &trace.events {
            let Event::Message {
                from,
                text,
                sse_id,
                lossy,
                ..
            } = &stamped.event
            else {
                continue;
            };
            assert!(!lossy, "{name}:{}: lossy", stamped.line);
            if text.is_empty() {
                // server-everything opens each SSE stream with an event that has an id and
                // no data (a resumption point), which the recorder keeps as it came.
                let priming = http && *from == Party::Server && sse_id.is_some();
                assert!(priming, "{name}:{}: an empty message", stamped.line);
                continue;
            }
            let parsed: Result<Value, _> = serde_json::from_str(text);
            assert!(parsed.is_ok(), "{name}:{}: not JSON: {text}", stamped.line);
        }
    }
}

/// The line of the client's cancel, and the id it names: a `notifications/cancelled`, or in
/// 2026-07-28 over HTTP the client closing the call's stream (an `end` by the client).
fn the_cancel(name: &str, trace: &Trace) -> (usize, Value) {
    let mut cancels: Vec<(usize, Value)> = messages(trace, Party::Client)
        .into_iter()
        .filter(|(_, m)| m["method"] == "notifications/cancelled")
        .map(|(line, m)| (line, m["params"]["requestId"].clone()))
        .collect();
    for stamped in &trace.events {
        if let Event::End {
            exchange,
            by: EndBy::Client,
            ..
        } = &stamped.event
        {
            let id = trace.events.iter().find_map(|s| match &s.event {
                Event::Message {
                    from: Party::Client,
                    exchange: Some(x),
                    text,
                    ..
                } if x == exchange => serde_json::from_str::<Value>(text)
                    .ok()
                    .map(|m| m["id"].clone()),
                _ => None,
            });
            cancels.push((stamped.line, id.expect("the closed stream's request")));
        }
    }
    assert_eq!(cancels.len(), 1, "{name}: one cancel");
    cancels.remove(0)
}

/// The first line the server wrote about request `id`: a response, or progress on its token
/// (the clients here use the request's id as its progress token, as both SDKs do by default,
/// or a token of their own that `token` names).
fn first_from_server(trace: &Trace, id: &Value, token: &Value) -> Option<(usize, bool)> {
    messages(trace, Party::Server)
        .into_iter()
        .find_map(|(line, m)| {
            if m.get("method").is_none() && &m["id"] == id {
                Some((line, true))
            } else if m["method"] == "notifications/progress"
                && &m["params"]["progressToken"] == token
            {
                Some((line, false))
            } else {
                None
            }
        })
}

#[test]
fn each_recording_shows_the_scenario_its_name_says() {
    for (name, trace) in recordings() {
        let (cancel_line, id) = the_cancel(&name, &trace);
        let request = messages(&trace, Party::Client)
            .into_iter()
            .find(|(_, m)| m["method"] == "tools/call" && m["id"] == id)
            .unwrap_or_else(|| panic!("{name}: the cancelled call"));
        let token = request.1["params"]["_meta"]["progressToken"].clone();
        let first = first_from_server(&trace, &id, &token);
        if name.ends_with("progress-cancel.jsonl") {
            let (line, answer) = first.expect("progress came");
            assert!(
                !answer && line < cancel_line,
                "{name}: cancelled after progress"
            );
        } else if name.ends_with("deadline.jsonl") {
            assert!(
                first.is_none_or(|(line, _)| line > cancel_line),
                "{name}: cancelled before anything came"
            );
        } else if name.ends_with("late-cancel.jsonl") {
            let (line, answer) = first.expect("the answer came");
            assert!(
                answer && line < cancel_line,
                "{name}: cancelled after its answer"
            );
        } else {
            panic!("{name}: a scenario the README does not describe");
        }
    }
}
