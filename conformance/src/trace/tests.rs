//! The format as docs/traces.md defines it: what the writer writes, the reader reads back,
//! and what a reader refuses, with the line it names.

use super::*;
use std::path::Path;

fn header() -> Header {
    Header {
        transport: Transport::Stdio,
        started: "2026-12-06T05:20:11.123Z".into(),
        recorder: "conformance 0.1.0".into(),
        server: Recorded {
            argv: Some(vec!["node".into(), "server.js".into()]),
            ..Recorded::default()
        },
        redacted: vec!["/params/arguments/token".into()],
    }
}

const HEADER: &str = r#"{"trace":"mcp-conformance","version":1,"transport":"stdio","started":"x","recorder":"r","server":{"argv":["s"]}}"#;

fn parse(text: &str) -> Result<Trace, TraceError> {
    Trace::parse(Path::new("t.jsonl"), text)
}

#[test]
fn what_is_written_reads_back_in_order() {
    let dir = std::env::temp_dir().join(format!("trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("roundtrip.jsonl");
    let _ = std::fs::remove_file(&path);
    let writer = TraceWriter::create(&path, &header()).unwrap();
    let events = [
        Event::Message {
            from: Party::Client,
            text: r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.into(),
            exchange: None,
            sse_id: None,
            lossy: false,
        },
        Event::Stderr {
            text: "ready".into(),
        },
        Event::Closed {
            from: Party::Client,
        },
        Event::Exit {
            code: Some(0),
            signal: None,
        },
    ];
    for event in &events {
        writer.write(event).unwrap();
    }
    assert!(
        TraceWriter::create(&path, &header()).is_err(),
        "a trace is never overwritten"
    );
    let trace = Trace::read(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(trace.header, header());
    let read: Vec<_> = trace.events.iter().map(|s| s.event.clone()).collect();
    assert_eq!(read, events);
    assert_eq!(
        trace.events.iter().map(|s| s.line).collect::<Vec<_>>(),
        [2, 3, 4, 5]
    );
    assert!(trace.events.windows(2).all(|w| w[0].at <= w[1].at));
    assert_eq!(trace.cut, None);
}

#[test]
fn http_events_have_the_documented_shape() {
    let text = format!(
        "{HEADER}\n{}\n{}\n{}\n{}\n",
        r#"{"at":5,"event":"request","exchange":1,"method":"POST","path":"/mcp","headers":{"authorization":"[redacted]"}}"#,
        r#"{"at":9,"event":"response","exchange":1,"status":200,"headers":{"content-type":"text/event-stream"}}"#,
        r#"{"at":12,"event":"message","from":"server","text":"{}","exchange":1,"sse_id":"7"}"#,
        r#"{"at":20,"event":"end","exchange":1,"by":"client"}"#,
    );
    let trace = parse(&text).unwrap();
    assert_eq!(trace.events.len(), 4);
    assert_eq!(trace.events[3].at, std::time::Duration::from_micros(20));
    assert!(matches!(
        trace.events[3].event,
        Event::End {
            by: EndBy::Client,
            exchange: 1,
            ..
        }
    ));
    assert!(matches!(&trace.events[2].event, Event::Message { sse_id: Some(id), .. } if id == "7"));
}

#[test]
fn a_last_line_cut_short_is_reported_not_fatal() {
    let text = format!(
        "{HEADER}\n{}\n{}",
        r#"{"at":1,"event":"stderr","text":"a"}"#, r#"{"at":2,"event":"mess"#
    );
    let trace = parse(&text).unwrap();
    assert_eq!((trace.events.len(), trace.cut), (1, Some(3)));
}

#[test]
fn a_bad_line_in_the_middle_names_its_line() {
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        r#"{"at":1,"event":"stderr","txt":"a"}"#, r#"{"at":2,"event":"stderr","text":"b"}"#
    );
    let err = parse(&text).unwrap_err();
    assert_eq!(err.line, 2);
    assert!(
        err.to_string()
            .starts_with("t.jsonl:2: bad \"stderr\" event"),
        "{err}"
    );
    let cut_not_last = format!(
        "{HEADER}\n{{\"at\":1,\n{}\n",
        r#"{"at":2,"event":"note","text":"b"}"#
    );
    assert_eq!(parse(&cut_not_last).unwrap_err().line, 2);
}

#[test]
fn time_going_backwards_is_refused() {
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        r#"{"at":9,"event":"note","text":"a"}"#, r#"{"at":3,"event":"note","text":"b"}"#
    );
    let err = parse(&text).unwrap_err();
    assert_eq!(err.line, 3);
    assert!(err.what.contains("before the previous"), "{err}");
}

#[test]
fn the_header_is_checked() {
    assert_eq!(parse("").unwrap_err().line, 1);
    let other = HEADER.replace("mcp-conformance", "har");
    assert!(parse(&other).unwrap_err().what.contains("not a trace"));
    let future = HEADER.replace("\"version\":1", "\"version\":2");
    let err = parse(&future).unwrap_err();
    assert!(
        err.what.contains("version 2 is not one this build reads"),
        "{err}"
    );
    let missing = parse(&HEADER.replace(",\"transport\":\"stdio\"", "")).unwrap_err();
    assert!(missing.what.contains("transport"), "{missing}");
}

#[test]
fn secrets_by_name() {
    assert!(always_redacted("Authorization"));
    assert!(always_redacted("set-cookie"));
    assert!(!always_redacted("mcp-session-id"));
}
