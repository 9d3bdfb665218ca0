//! The parser's tests: what it reads, and the errors it gives at `path:line`.

use super::*;

const GOOD: &str = "# Cancelling work stops it.\n# Second line.\n@requirement CAN-05 CAN-11\n@level should\n@fixtures work\n\n> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}\n< {\"id\":1,\"result\":\"{...}\"}\n! repeat 2\n! barrier\n! end\n! silent 1 200ms\n";

#[test]
fn parses_header_and_steps() {
    let case = parse("server/x", "cases/server/x.mcpt", GOOD).unwrap();
    assert_eq!(case.intent, "Cancelling work stops it. Second line.");
    assert_eq!(case.requirements, ["CAN-05", "CAN-11"]);
    assert_eq!(case.level, Level::Should);
    assert_eq!(case.steps.len(), 4);
    assert_eq!(case.steps[2].line, 9);
    assert!(
        matches!(&case.steps[2].kind, StepKind::Repeat { count: 2, steps } if steps.len() == 1)
    );
    assert!(matches!(&case.steps[3].kind, StepKind::Silent { id, .. } if id == "1"));
}

fn error_of(text: &str) -> CaseError {
    parse("server/x", "x.mcpt", text).unwrap_err()
}

#[test]
fn mistakes_are_errors_with_lines() {
    let head = "# intent\n@requirement CAN-05\n@level must\n";
    let e = error_of(&format!("{head}! frobnicate\n"));
    assert_eq!(e.line, 4);
    assert!(e.message.contains("unknown control"), "{e}");
    assert_eq!(error_of(&format!("{head}< {{nope\n")).line, 4);
    assert_eq!(error_of(&format!("{head}> {{}}\n@level must\n")).line, 5);
    assert_eq!(error_of(&format!("{head}hello\n")).line, 4);
    assert_eq!(error_of(&format!("{head}! repeat 2\n> {{}}\n")).line, 4);
    assert_eq!(error_of(&format!("{head}! end\n")).line, 4);
    assert!(error_of("@requirement X\n@level must\n> {}\n")
        .message
        .contains("opens with"));
    assert!(error_of("# i\n@level must\n> {}\n")
        .message
        .contains("@requirement"));
    assert!(error_of(&format!("{head}@versions 1999-01-01\n"))
        .message
        .contains("unknown protocol"));
    assert!(error_of(&format!("{head}! silent x 1s\n"))
        .message
        .contains("not a request id"));
    assert!(error_of(&format!("{head}! wait soon\n"))
        .message
        .contains("duration"));
}

#[test]
fn cancel_steps() {
    let case = parse(
        "server/x",
        "x",
        "# i\n@requirement A\n@level must\n! cancel 1\n! cancel \"a\" too  late\n! cancel \"{$id}\" x\n",
    )
    .unwrap();
    let kinds: Vec<_> = case.steps.iter().map(|s| s.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            StepKind::Cancel {
                id: "1".into(),
                reason: None
            },
            StepKind::Cancel {
                id: "\"a\"".into(),
                reason: Some("too  late".into())
            },
            StepKind::Cancel {
                id: "\"{$id}\"".into(),
                reason: Some("x".into())
            },
        ]
    );
}

#[test]
fn http_steps_need_an_http_case() {
    let head = "# i\n@requirement HTTP-16\n@level must\n";
    let http =
        format!("{head}@transports http\n@deviation it sends headers the transport would not\n");
    let case = parse(
        "server/x",
        "x",
        &format!("{http}! header Origin: http://a.example\n> {{}}\n! status 403|4xx\n! header Mcp-Session-Id:\n! disconnect 1\n! session other\n! delete-session\n! status 2xx\n! listen\n! witness not 1 \"a\"\n"),
    )
    .unwrap();
    assert_eq!(case.transports, [TransportKind::Http]);
    let kinds: Vec<_> = case.steps.iter().map(|s| s.kind.clone()).collect();
    assert_eq!(
        kinds[0],
        StepKind::Header {
            name: "Origin".into(),
            value: "http://a.example".into()
        }
    );
    assert_eq!(kinds[2], StepKind::Status(vec!["403".into(), "4xx".into()]));
    assert_eq!(
        kinds[3],
        StepKind::Header {
            name: "Mcp-Session-Id".into(),
            value: String::new()
        }
    );
    assert_eq!(kinds[5], StepKind::Session("other".into()));
    assert_eq!(
        kinds[9],
        StepKind::Unwitnessed(vec!["1".into(), "\"a\"".into()])
    );

    let e = error_of(&format!("{head}! disconnect 1\n"));
    assert_eq!(e.line, 4);
    assert!(e.message.contains("add `@transports http`"), "{e}");
    let e = error_of(&format!("{http}! close-stdin\n"));
    assert!(e.message.contains("add `@transports stdio`"), "{e}");
    let e = error_of(&format!("{http}! barrier\n! status 202\n"));
    assert_eq!(e.line, 7);
    assert!(e.message.contains("right after"), "{e}");
    assert!(error_of(&format!("{http}> {{}}\n! status 20\n"))
        .message
        .contains("`! status 202`"));
    assert!(error_of(&format!("{http}! header Origin\n"))
        .message
        .contains("NAME: VALUE"));
    assert!(error_of(&format!("{head}@transports pigeon\n"))
        .message
        .contains("unknown transport"));
    let both = parse("server/x", "x", &format!("{head}> {{}}\n")).unwrap();
    assert_eq!(both.transports, [TransportKind::Stdio, TransportKind::Http]);
}

#[test]
fn sweeps_expand_values() {
    let case = parse(
        "server/x",
        "x",
        "# i\n@requirement A\n@level must\n! sweep d 0ms..30ms step 10ms\n! after {$d}\n! end\n",
    )
    .unwrap();
    match &case.steps[0].kind {
        StepKind::Sweep { var, values, steps } => {
            assert_eq!(var, "d");
            assert_eq!(values, &[0, 10, 20, 30]);
            assert_eq!(steps[0].kind, StepKind::After(Span::Var("d".into())));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn client_headers() {
    let head = "# i\n@requirement CAN-01\n@level must\n";
    let text = format!(
        "{head}@actions [{{\"connect\":true}},{{\"call\":\"work\",\"progress\":true}},{{\"exit\":true}}]\n@outcomes result cancelled|timeout *\n> {{\"method\":\"initialize\"}}\n"
    );
    let case = parse("client/x", "x", &text).unwrap();
    assert_eq!(case.role, Role::Client);
    assert_eq!(case.actions.len(), 3);
    assert_eq!(case.actions[1]["call"], "work");
    assert_eq!(case.outcomes[1], ["cancelled", "timeout"]);
    assert_eq!(case.outcomes[2], ["*"]);
    assert!(matches!(&case.steps[0].kind, StepKind::Expect(_)));

    let client = |h: &str| parse("client/x", "x", &format!("{head}{h}> {{}}\n"));
    assert_eq!(client("@actions {\"call\":1}\n").unwrap_err().line, 4);
    assert!(client("@actions [{\"call\":\"a\",\"exit\":true}]\n")
        .unwrap_err()
        .message
        .contains("exactly one"));
    assert!(client("@actions [{\"exit\":true}]\n@outcomes done\n")
        .unwrap_err()
        .message
        .contains("unknown outcome"));
    assert!(
        client("@actions [{\"exit\":true}]\n@outcomes result result\n")
            .unwrap_err()
            .message
            .contains("one per action")
    );
    assert!(client("").unwrap_err().message.contains("needs `@actions`"));
    assert!(
        error_of(&format!("{head}@actions [{{\"exit\":true}}]\n< {{}}\n"))
            .message
            .contains("for client cases")
    );
}

#[test]
fn arrival_windows() {
    let case = parse(
        "server/x",
        "x",
        "# i\n@requirement A\n@level must\n! arrives 50ms..550ms\n",
    )
    .unwrap();
    let StepKind::Arrives(arrival) = case.steps[0].kind else {
        panic!("{:?}", case.steps[0])
    };
    assert_eq!(arrival.judge(Duration::from_millis(300)), None);
    assert!(arrival
        .judge(Duration::from_millis(10))
        .unwrap()
        .contains("allows 50 to 550 ms"));
    assert!(arrival.judge(Duration::from_millis(600)).is_some());
    let bad = parse(
        "server/x",
        "x",
        "# i\n@requirement A\n@level must\n! arrives 9ms..1ms\n",
    );
    assert_eq!(bad.unwrap_err().line, 4);
}

#[test]
fn durations() {
    assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
    assert_eq!(parse_duration("5"), None);
    assert_eq!(parse_duration("-1s"), None);
    assert_eq!(parse_duration("1e20s"), None, "too big for a Duration");
    assert_eq!(parse_duration("3601s"), None, "longer than an hour");
}

#[test]
fn loops_are_bounded() {
    let head = "# i\n@requirement A\n@level must\n";
    let repeat = error_of(&format!("{head}! repeat 1000000000\n! barrier\n! end\n"));
    assert!(repeat.message.contains("from 1 to 10000"), "{repeat}");
    let sweep = error_of(&format!(
        "{head}! sweep d 0ms..3600s step 1ms\n! barrier\n! end\n"
    ));
    assert!(sweep.message.contains("more than 10000 rounds"), "{sweep}");
    assert!(parse(
        "server/x",
        "x",
        &format!("{head}! repeat 10000\n! barrier\n! end\n")
    )
    .is_ok());
}

#[test]
fn a_poll_is_one_request_and_its_answers() {
    let head = "# intent\n@requirement TSK-04\n@level must\n";
    let request = r#"> {"jsonrpc":"2.0","id":"g-{$i}","method":"tasks/get"}"#;
    let answer = r#"< {"jsonrpc":"2.0","id":"g-{$i}","result":{"status":"cancelled"}}"#;
    let case = parse(
        "server/x",
        "x.mcpt",
        &format!("{head}! poll 20 every 50ms\n{request}\n{answer}\n{answer}\n! end\n"),
    )
    .unwrap();
    let StepKind::Poll(poll) = &case.steps[0].kind else {
        panic!("a poll: {:?}", case.steps[0]);
    };
    assert_eq!((poll.rounds, poll.every), (20, Duration::from_millis(50)));
    assert_eq!(
        poll.parts().1.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
        [6, 7]
    );
    // Line 5 opens the block; the error points at what is wrong.
    let e = error_of(&format!("{head}! poll 20 every 50ms\n{answer}\n! end\n"));
    assert_eq!(
        (e.line, e.message.contains("starts with the request")),
        (5, true),
        "{e}"
    );
    let e = error_of(&format!("{head}! poll 20 every 50ms\n{request}\n! end\n"));
    assert_eq!(e.line, 4, "{e}");
    let e = error_of(&format!(
        "{head}! poll 20 every 50ms\n{request}\n! barrier\n! end\n"
    ));
    assert_eq!(e.line, 6, "{e}");
    let no_id = r#"> {"jsonrpc":"2.0","method":"tasks/get"}"#;
    let e = error_of(&format!(
        "{head}! poll 20 every 50ms\n{no_id}\n{answer}\n! end\n"
    ));
    assert!(e.message.contains("needs an id"), "{e}");
    assert_eq!(error_of(&format!("{head}! poll 0 every 50ms\n")).line, 4);
    assert_eq!(error_of(&format!("{head}! poll 3 each 50ms\n")).line, 4);
    let client = "# i\n@requirement TSK-03\n@level must\n@actions [{\"connect\":true}]\n";
    let e = parse(
        "client/x",
        "x.mcpt",
        &format!("{client}! poll 2 every 5ms\n< {{\"jsonrpc\":\"2.0\",\"id\":\"a-{{$i}}\",\"method\":\"ping\"}}\n> {{\"id\":\"a-{{$i}}\"}}\n! end\n"),
    )
    .unwrap_err();
    assert!(e.message.contains("server cases"), "{e}");
}

#[test]
fn needs_names_tasks_or_no_tasks() {
    let head = "# intent\n@requirement TSK-01\n@level must\n";
    let ping = "> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
    let case = parse("server/x", "x.mcpt", &format!("{head}@needs tasks\n{ping}")).unwrap();
    assert_eq!(case.needs, [Need::Tasks]);
    let e = error_of(&format!("{head}@needs tasks no-tasks\n{ping}"));
    assert_eq!(e.line, 4);
    let e = error_of(&format!("{head}@needs prompts\n{ping}"));
    assert!(e.message.contains("known: tasks no-tasks"), "{e}");
    let e = error_of(&format!("{head}@needs tasks\n@handshake none\n{ping}"));
    assert!(e.message.contains("@handshake auto"), "{e}");
}

#[test]
fn fresh_needs_a_reason() {
    let head = "# intent\n@requirement STD-03\n@level must\n";
    let ping = "> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
    let case = parse("server/x", "x.mcpt", &format!("{head}{ping}")).unwrap();
    assert_eq!(
        case.fresh, None,
        "a case shares a target unless it says why not"
    );
    let text = format!("{head}@fresh it closes stdin, which ends the process\n{ping}");
    let case = parse("server/x", "x.mcpt", &text).unwrap();
    assert_eq!(
        case.fresh.as_deref(),
        Some("it closes stdin, which ends the process")
    );
    let e = error_of(&format!("{head}@fresh\n{ping}"));
    assert_eq!(e.line, 4);
    assert!(e.message.contains("needs a reason"), "{e}");
    let stdio = "@transports stdio\n";
    let e = error_of(&format!("{head}{stdio}{ping}! close-stdin\n"));
    assert_eq!(e.line, 6);
    assert!(e.message.contains("@fresh"), "{e}");
    let e = error_of(&format!("{head}@handshake none\n{ping}"));
    assert!(e.message.contains("@fresh"), "{e}");
    let ok = format!("{head}{stdio}@fresh it ends the process\n{ping}! close-stdin\n");
    assert!(parse("server/x", "x.mcpt", &ok).is_ok());
}

#[test]
fn versions_are_parsed_once_into_the_versions_they_name() {
    use crate::era::ProtocolVersion as V;
    let head = "# intent\n@requirement CAN-05\n@level must\n";
    let versions = |line: &str| {
        parse("server/x", "x.mcpt", &format!("{head}{line}> {{}}\n"))
            .unwrap()
            .versions
    };
    assert_eq!(
        versions(""),
        [
            V::V2024_11_05,
            V::V2025_03_26,
            V::V2025_06_18,
            V::V2025_11_25
        ]
    );
    assert_eq!(versions("@versions stateless\n"), [V::V2026_07_28]);
    assert_eq!(
        versions("@versions 2025-11-25 stateless 2025-11-25\n"),
        [V::V2025_11_25, V::V2026_07_28]
    );
    let unknown = error_of(&format!("{head}@versions 2025-11-25 1999-01-01\n> {{}}\n"));
    assert_eq!(unknown.line, 4);
    assert_eq!(
        unknown.message,
        "unknown protocol version `1999-01-01`; known: 2024-11-05 2025-03-26 2025-06-18 2025-11-25 2026-07-28, or an era: handshake, stateless"
    );
    let none = error_of(&format!("{head}@versions\n> {{}}\n"));
    assert_eq!(none.line, 4);
    assert!(none.message.contains("at least one"), "{none}");
}
