//! What a server case has the harness send that the session it negotiates does not allow: a
//! notification of a capability the harness never declares, progress it was never asked
//! for, a cancel of a request it never sent (or of `initialize`), a method that does not
//! exist, task augmentation nobody offered, a second `initialize`, a stateless request
//! without the era's `_meta`, a line that is not JSON, a header the transport would not send.
//!
//! Everything the harness sends is valid for the session it negotiated, apart from the one
//! deviation a case exists to test; such a case says which in `@deviation`, so that a reader
//! (or someone else's trace validator) can tell the harness's mistakes from its intent. The
//! parser refuses a case that deviates without saying so, and one that says so and does not.
//! The harness itself declares no client capabilities (`capabilities: {}`).

use super::{Case, Need, Role, Step, StepKind};
use crate::era::{ProtocolVersion, META_CAPABILITIES, META_VERSION};
use serde_json::Value;

/// The requests a client may send a server, in either era.
const CLIENT_REQUESTS: [&str; 20] = [
    "initialize",
    "ping",
    "server/discover",
    "subscriptions/listen",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "tasks/update",
];

/// Each place the steps deviate: the case line and what it sends.
pub fn deviations(case: &Case, steps: &[Step]) -> Vec<(usize, String)> {
    let mut sent = Sent::default();
    collect(steps, &mut sent);
    let mut found = vec![];
    walk(case, steps, &sent, &mut found);
    found
}

/// The request ids the case sends (as written), and the ids of its `initialize` requests.
#[derive(Default)]
struct Sent {
    ids: Vec<String>,
    initialize: Vec<String>,
}

fn collect(steps: &[Step], sent: &mut Sent) {
    for step in steps {
        if let Some(inner) = step.kind.inner() {
            collect(inner, sent);
        }
        let Some(message) = message_of(step) else {
            continue;
        };
        if let (Some(id), Some(method)) = (message.get("id"), message.get("method")) {
            sent.ids.push(id.to_string());
            if method == "initialize" {
                sent.initialize.push(id.to_string());
            }
        }
    }
}

fn message_of(step: &Step) -> Option<Value> {
    match &step.kind {
        StepKind::Send(text) => serde_json::from_str(&placeholders_as_zero(text)).ok(),
        _ => None,
    }
}

/// `text` with each `{$name}` replaced by `0`, so that a line with one where a number goes
/// still reads as JSON (`"id":{$i}`), and ids read the same wherever they are written.
pub(super) fn placeholders_as_zero(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("{$") {
        out.push_str(&rest[..at]);
        match rest[at..].find('}') {
            Some(end) => {
                out.push('0');
                rest = &rest[at + end + 1..];
            }
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn walk(case: &Case, steps: &[Step], sent: &Sent, found: &mut Vec<(usize, String)>) {
    for step in steps {
        if let Some(inner) = step.kind.inner() {
            walk(case, inner, sent, found);
        }
        let what = match &step.kind {
            StepKind::Header { .. } => Some("an HTTP header the transport would not send".into()),
            StepKind::Send(_) => match message_of(step) {
                None => Some("a line that is not JSON".to_string()),
                Some(message) => sends(case, &message, sent),
            },
            _ => None,
        };
        if let Some(what) = what {
            found.push((step.line, what));
        }
    }
}

/// What is wrong with `message` for the session, if anything.
fn sends(case: &Case, message: &Value, sent: &Sent) -> Option<String> {
    // A response answers what the target asked; whether it should have asked is its business.
    let method = message.get("method").and_then(Value::as_str)?;
    let params = message.get("params");
    if message.get("id").is_none() {
        return notification(case, method, params, sent);
    }
    request(case, method, params)
}

fn notification(case: &Case, method: &str, params: Option<&Value>, sent: &Sent) -> Option<String> {
    match method {
        "notifications/cancelled" => {
            let id = params.and_then(|p| p.get("requestId"));
            match id {
                Some(id) if id.is_string() || id.is_number() => {
                    let id = id.to_string();
                    if sent.initialize.contains(&id) {
                        Some("a cancel of `initialize` (CAN-04)".into())
                    } else if !sent.ids.contains(&id) {
                        Some(format!("a cancel of request {id}, which it never sent"))
                    } else {
                        None
                    }
                }
                _ => Some("a cancel without a request id".into()),
            }
        }
        "notifications/initialized" if !case.handshake => None,
        "notifications/initialized" => {
            Some("`notifications/initialized` in a session already initialized".into())
        }
        "notifications/progress" => Some("progress for a request it never received".into()),
        "notifications/roots/list_changed" => Some(
            "`notifications/roots/list_changed` without having declared `roots.listChanged`".into(),
        ),
        other => Some(format!("`{other}`, a notification that does not exist")),
    }
}

fn request(case: &Case, method: &str, params: Option<&Value>) -> Option<String> {
    if !CLIENT_REQUESTS.contains(&method) {
        return Some(format!(
            "a request for `{method}`, a method that does not exist"
        ));
    }
    let stateless_only = case.versions.iter().all(|v| v.is_stateless());
    if method == "initialize" && (case.handshake || stateless_only) {
        return Some("an `initialize` in a session that has its opening".into());
    }
    let task = params.and_then(|p| p.get("task")).is_some();
    if task && method != "tools/call" {
        return Some(format!(
            "task augmentation of `{method}`, which no server offers"
        ));
    }
    let role = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .and_then(crate::fixtures::Role::parse);
    let forbidden = case
        .fixtures
        .iter()
        .any(|n| Some(n.role) == role && n.task == Some(crate::fixtures::TaskUse::NoTask));
    if task && (forbidden || !case.needs.contains(&Need::Tasks)) {
        return Some("task augmentation of a call the server did not offer it for (TSK-01)".into());
    }
    let stateless = case.versions.iter().any(|v| v.is_stateless());
    if stateless && !case.stamp && method != "initialize" {
        let meta = params.and_then(|p| p.get("_meta"));
        let version = meta
            .and_then(|m| m.get(META_VERSION))
            .and_then(Value::as_str);
        let declared = meta.and_then(|m| m.get(META_CAPABILITIES)).is_some();
        match version {
            None => return Some("a stateless request without the era's `_meta`".into()),
            Some(v) if !v.contains('{') && ProtocolVersion::parse(v).is_none() => {
                return Some(format!("a request stamped with `{v}`, no protocol version"))
            }
            _ if !declared => {
                return Some("a stateless request without its client capabilities".into())
            }
            _ => {}
        }
    }
    None
}

/// Checks a server case's `@deviation` against its steps: an error message at a line when the
/// steps deviate and the case does not say so, or says so and does not.
pub fn check(case: &Case, steps: &[Step], declared: Option<usize>) -> Result<(), (usize, String)> {
    if case.role != Role::Server {
        return Ok(());
    }
    let found = deviations(case, steps);
    match (found.first(), declared) {
        (Some((line, what)), None) => Err((
            *line,
            format!("this line sends {what}: if that is what the case tests, say so with `@deviation` (what the case sends that its session does not allow, and why); else send what the session allows"),
        )),
        (None, Some(line)) => Err((
            line,
            "`@deviation`, but every line sends what the session allows; remove it".into(),
        )),
        _ => Ok(()),
    }
}
