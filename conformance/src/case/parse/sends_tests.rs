//! The parser's tests of what a case may send: requests its session does not allow, task
//! calls of roles, and the deviations a case must declare.

use super::*;

fn error_of(text: &str) -> CaseError {
    parse("server/x", "x.mcpt", text).unwrap_err()
}

#[test]
fn a_stateless_server_sends_no_requests() {
    let head = "# intent\n@requirement RPC-15\n@level must\n@actions [{\"connect\":true}]\n@versions stateless\n";
    let client = |text: &str| parse("client/x", "x.mcpt", text);
    let e = client(&format!("{head}! barrier\n")).unwrap_err();
    assert_eq!(e.line, 6);
    assert!(e.message.contains("RPC-15"), "{e}");
    let request = r#"< {"jsonrpc":"2.0","id":"r","method":"roots/list"}"#;
    assert_eq!(client(&format!("{head}{request}\n")).unwrap_err().line, 6);
    let answer = r#"< {"jsonrpc":"2.0","id":"{$c}","result":{}}"#;
    assert!(client(&format!("{head}{answer}\n")).is_ok());
    let legacy = format!("{head}@plays handshake\n! barrier\n");
    assert_eq!(
        client(&legacy).unwrap().plays,
        Some(crate::era::Era::Handshake)
    );
    let cancelled = client(&format!("{head}! cancelled \"{{$c}}\"\n")).unwrap();
    assert!(matches!(&cancelled.steps[0].kind, StepKind::Cancelled(id) if id == "\"{$c}\""));
    let e = parse(
        "server/x",
        "x.mcpt",
        "# i\n@requirement A\n@level must\n! cancelled 1\n",
    )
    .unwrap_err();
    assert!(e.message.contains("client cases"), "{e}");
}

#[test]
fn a_role_called_as_a_task_says_so_in_its_fixtures() {
    let head = "# intent\n@requirement TSK-01\n@level must\n@needs tasks\n";
    let task = r#"> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{},"task":{"ttl":1}}}"#;
    let e = error_of(&format!("{head}@fixtures work\n{task}\n"));
    assert_eq!(e.line, 6);
    assert!(e.message.contains("`work:task`"), "{e}");
    assert!(parse(
        "server/x",
        "x.mcpt",
        &format!("{head}@fixtures work:task\n{task}\n")
    )
    .is_ok());
    let declared = r#"> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}"#;
    let e = error_of(&format!(
        "{head}@fixtures echo\n! repeat 2\n{declared}\n! end\n"
    ));
    assert_eq!(e.line, 7, "inside a block too");
    assert!(parse(
        "server/x",
        "x.mcpt",
        &format!("{head}@fixtures echo:no-task\n{declared}\n")
    )
    .is_ok());
    let looped =
        r#"> {"jsonrpc":"2.0","id":{$i},"method":"tools/call","params":{"name":"work","task":{}}}"#;
    let e = error_of(&format!(
        "{head}@fixtures work\n! repeat 2\n{looped}\n! end\n"
    ));
    assert!(
        e.message.contains("`work:task`"),
        "an unquoted `{{$i}}` id too: {e}"
    );
    let e = error_of(&format!("{head}@fixtures work:tasks\n{task}\n"));
    assert_eq!(e.line, 5);
    assert!(e.message.contains("`tasks` is no qualifier"), "{e}");
}

#[test]
fn a_case_says_what_it_sends_that_its_session_does_not_allow() {
    let head = "# intent\n@requirement RPC-08\n@level must\n";
    let roots = r#"> {"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#;
    let e = error_of(&format!("{head}{roots}\n"));
    assert_eq!(e.line, 4);
    assert!(
        e.message
            .contains("without having declared `roots.listChanged`")
            && e.message.contains("`@deviation`"),
        "{e}"
    );
    let declared = format!("{head}@deviation it sends what it never declared\n{roots}\n");
    let case = parse("server/x", "x.mcpt", &declared).unwrap();
    assert_eq!(
        case.deviation.as_deref(),
        Some("it sends what it never declared")
    );
    // Said, and not done.
    let ping = r#"> {"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let e = error_of(&format!("{head}@deviation none really\n{ping}\n"));
    assert_eq!(e.line, 4);
    // What each rule catches, one line each.
    for (line, what) in [
        (
            r#"> {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}"#,
            "never sent",
        ),
        (
            r#"> {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#,
            "progress",
        ),
        (
            r#"> {"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "already initialized",
        ),
        (
            r#"> {"jsonrpc":"2.0","id":1,"method":"no/such"}"#,
            "does not exist",
        ),
        (
            r#"> {"jsonrpc":"2.0","id":1,"method":"ping","params":{"task":{}}}"#,
            "task augmentation",
        ),
        ("> not json", "not JSON"),
    ] {
        let e = error_of(&format!("{head}{line}\n"));
        assert!(e.message.contains(what), "{line}: {e}");
    }
    // A cancel of a request the case sent, in a loop too, is what the session allows.
    let looped = "! repeat 2\n> {\"jsonrpc\":\"2.0\",\"id\":{$i},\"method\":\"ping\"}\n> {\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":{$i}}}\n! end\n";
    assert!(parse("server/x", "x.mcpt", &format!("{head}{looped}")).is_ok());
}
