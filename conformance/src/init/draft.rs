//! What `init` writes and says: the target file (with a note per role: how its tool was
//! chosen, what init checked by calling it and what it did not), the console's lines, and
//! which cases the mapping lets run.

use super::{Inspection, RoleDraft, Verdict};
use crate::case::{Case, TransportKind};
use crate::discovery::{self, Tool};
use crate::era::ProtocolVersion;
use crate::fixtures::{Fixtures, Role};
use crate::transport::http::HttpTarget;
use crate::transport::process::Launch;
use serde_json::{json, Value};

/// How the target file starts the server.
pub enum Reach<'a> {
    /// A stdio server.
    Stdio(&'a Launch),
    /// A Streamable HTTP server.
    Http(&'a HttpTarget),
}

/// What a call of the role does not show, and the cases judge.
fn not_checked(role: Role) -> &'static str {
    match role {
        Role::Work => "that it never ends on its own (init watched it for a second or so) and that it stops when cancelled (the cases judge that)",
        Role::Ticker => "that it stops when cancelled (the cases judge that)",
        Role::Sleep => "that it stops when cancelled (the cases judge that)",
        Role::Cancellations => {
            "that it lists the requests whose handlers saw their cancel (the cases judge by it)"
        }
        Role::WorkRequired => {
            "that a plain call of it is refused and that it runs as a task (the cases judge that)"
        }
        Role::TaskWork | Role::TaskTicker => {
            "that its task never ends on its own (init watched it for a second or so) and that it stops when cancelled (the cases judge that)"
        }
        Role::TaskSleep => "that its task stops when cancelled (the cases judge that)",
        Role::Echo | Role::Ping => "how it answers while other calls run (the cases judge that)",
    }
}

/// The note a role gets in the target file, or `None` for a role no tool could play.
pub fn note(draft: &RoleDraft) -> Option<String> {
    if draft.tried.is_empty() {
        return None;
    }
    let others: Vec<String> = draft
        .tried
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != draft.chosen)
        .map(|(_, t)| {
            let (said, why) = match &t.verdict {
                Verdict::Failed(why) => ("failed", why.as_str()),
                Verdict::Unchecked(why) => ("unchecked", why.as_str()),
                Verdict::Passed { checked, .. } => ("passed, not chosen", checked.as_str()),
            };
            format!(
                "{} ({}): {said}: {why}",
                t.candidate.shown(),
                t.candidate.why
            )
        })
        .collect();
    Some(match draft.chosen() {
        Some((candidate, checked, _)) => {
            let mut note = format!(
                "{}. Checked: {checked}. Not checked: {}.",
                capitalised(&candidate.why),
                not_checked(draft.role)
            );
            if !others.is_empty() {
                note.push_str(&format!(" Also considered: {}.", others.join("; ")));
            }
            note
        }
        None => format!(
            "Not mapped (cases that need it are skipped). Considered: {}.",
            others.join("; ")
        ),
    })
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The target file's text: how to start the server, and per role its mapping or, where
/// candidates were considered and none held, a note saying why. Roles without candidates are
/// left out.
pub fn target_file(reach: Reach<'_>, inspection: &Inspection) -> String {
    let who = match &inspection.identity {
        Some(identity) => format!("{} {}", identity.name, identity.version),
        None => "a server that gave no serverInfo".into(),
    };
    let transport = match reach {
        Reach::Stdio(_) => "stdio",
        Reach::Http(_) => "Streamable HTTP",
    };
    let description = format!(
        "{who} over {transport}, drafted by `conformance init` at protocol version {}. Each fixture's note says why its tool was chosen, what init checked by calling it, and what it did not; roles no tool could play are left out, and cases that need them are skipped. Review before use.",
        inspection.version
    );
    let mut lines = vec![format!("  \"description\": {}", json!(description))];
    match reach {
        Reach::Stdio(launch) => {
            lines.push(format!("  \"command\": {}", spaced(&json!(launch.argv))))
        }
        Reach::Http(target) => {
            if let Some(launch) = &target.launch {
                lines.push(format!("  \"command\": {}", spaced(&json!(launch.argv))));
            }
            lines.push(format!("  \"url\": {}", json!(target.url)));
        }
    }
    let mut roles = vec![];
    let mut drafts: Vec<&RoleDraft> = inspection.roles.iter().collect();
    drafts.sort_by_key(|d| Role::ALL.iter().position(|r| *r == d.role));
    for draft in drafts {
        let Some(note) = note(draft) else { continue };
        let mut fields = vec![];
        if let Some(mapping) = draft.mapping() {
            fields.push(format!("\"tool\": {}", json!(mapping.tool)));
            if let Some(arguments) = &mapping.arguments {
                fields.push(format!("\"arguments\": {}", spaced(arguments)));
            }
            if !mapping.progress {
                fields.push("\"progress\": false".into());
            }
        }
        fields.push(format!("\"note\": {}", json!(note)));
        roles.push(format!(
            "    {}: {{\n      {}\n    }}",
            json!(draft.role.as_str()),
            fields.join(",\n      ")
        ));
    }
    if roles.is_empty() {
        lines.push("  \"fixtures\": {}".into());
    } else {
        lines.push(format!("  \"fixtures\": {{\n{}\n  }}", roles.join(",\n")));
    }
    format!("{{\n{}\n}}\n", lines.join(",\n"))
}

/// Compact JSON with a space after `:` and `,`, as a person writes it on one line.
fn spaced(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", json!(k), spaced(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(spaced).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// Which server cases that call fixtures the mapping lets run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unlocked {
    /// The transport they run over.
    pub transport: &'static str,
    /// The cases that call fixtures.
    pub calling: usize,
    /// Those the mapping lets run.
    pub runnable: Vec<String>,
    /// Those that would run without a target file, by the server's own tool names.
    pub without_file: usize,
    /// Those still skipped, with why.
    pub locked: Vec<(String, String)>,
    /// Runnable cases that ask the witness, which the target lacks (`! witness` notes).
    pub without_witness: usize,
}

/// Which of `cases` (server cases over `transport` that call fixtures) run with `mapped`,
/// and with the fixtures a run without a target file finds among `tools`, by what the
/// server declared at `version` (the version init's session spoke): of its tools, and in
/// `opening` (its answer to the session's opening) of its capabilities.
pub fn unlocked(
    cases: &[Case],
    transport: TransportKind,
    mapped: &Fixtures,
    tools: &[Tool],
    version: ProtocolVersion,
    opening: &Value,
) -> Unlocked {
    let stateless = version.is_stateless();
    let mut discovered = discovery::fixtures_of(tools);
    discovered.listed = mapped.listed.clone();
    let mut unlocked = Unlocked {
        transport: transport.as_str(),
        ..Unlocked::default()
    };
    for case in cases.iter().filter(|c| {
        c.role == crate::case::Role::Server
            && !c.fixtures.is_empty()
            && c.transports.contains(&transport)
    }) {
        unlocked.calling += 1;
        // At init's version where the case covers it; else at the case's newest, of which
        // init saw no listing.
        let at_init = case.versions.contains(&version);
        // What the server declared in init's opening decides a case at init's version first.
        let unmet = at_init
            .then(|| case.needs.iter().find_map(|n| n.unmet(opening, stateless)))
            .flatten();
        if let Some(why) = unmet {
            unlocked.locked.push((case.id.clone(), why));
            continue;
        }
        let version = match at_init {
            true => version,
            false => case.versions.last().copied().unwrap_or(version),
        };
        if case
            .fixtures
            .iter()
            .all(|f| discovered.lacks(f, version).is_none())
        {
            unlocked.without_file += 1;
        }
        match case.fixtures.iter().find_map(|f| mapped.lacks(f, version)) {
            Some(why) => unlocked.locked.push((case.id.clone(), why)),
            None => {
                if case.fixtures.iter().any(|f| f.role == Role::Cancellations)
                    && !mapped.has(Role::Cancellations)
                {
                    unlocked.without_witness += 1;
                }
                unlocked.runnable.push(case.id.clone());
            }
        }
    }
    unlocked
}

/// The console's lines about the tools.
pub fn tools_lines(tools: &[Tool], tries: &[String]) -> Vec<String> {
    let width = tools
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(0)
        .min(40);
    let mut lines = vec![format!(
        "tools ({}; init calls only those annotated read-only, and those named with --try):",
        tools.len()
    )];
    for tool in tools {
        let said = if tool.read_only {
            "read-only"
        } else if tries.contains(&tool.name) {
            "may change things; --try lets init call it"
        } else {
            "may change things: never called"
        };
        lines.push(format!("  {:<width$}  {said}", tool.name));
    }
    lines
}

/// The console's lines about one role: what plays it and what its check saw, then every
/// other candidate considered and what became of it.
pub fn role_lines(draft: &RoleDraft) -> Vec<String> {
    let head = format!("  {:<13}", draft.role);
    let mut lines = vec![match draft.chosen() {
        Some((candidate, checked, _)) => format!("{head} {}: {checked}", candidate.shown()),
        None if draft.tried.is_empty() => format!(
            "{head} left out: no tool fits (needs {})",
            draft.role.needs()
        ),
        None => format!("{head} left out: no candidate held"),
    }];
    for (_, tried) in draft
        .tried
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != draft.chosen)
    {
        let said = match &tried.verdict {
            Verdict::Failed(why) => format!("failed: {why}"),
            Verdict::Unchecked(why) => format!("unchecked: {why}"),
            Verdict::Passed { checked, .. } => format!("passed, not chosen: {checked}"),
        };
        lines.push(format!(
            "  {:<13}   {}: {said}",
            "",
            tried.candidate.shown()
        ));
    }
    lines
}

/// The console's lines about the cases the mapping lets run.
pub fn unlocked_lines(unlocked: &Unlocked) -> Vec<String> {
    let mut lines = vec![format!(
        "unlocks {} of the {} server cases over {} that call fixtures (without a target file: {}; each still runs only at versions the server speaks){}",
        unlocked.runnable.len(),
        unlocked.calling,
        unlocked.transport,
        unlocked.without_file,
        if unlocked.runnable.is_empty() { "" } else { ":" }
    )];
    lines.extend(wrapped(&unlocked.runnable, 100));
    if unlocked.without_witness > 0 {
        lines.push(format!(
            "  ({} of them ask the cancellations witness, which this target lacks: their `! witness` steps become notes)",
            unlocked.without_witness
        ));
    }
    if !unlocked.locked.is_empty() {
        lines.push(format!("still skipped: {}", unlocked.locked.len()));
        let mut reasons: Vec<(&str, usize)> = vec![];
        for (_, why) in &unlocked.locked {
            match reasons.iter_mut().find(|(w, _)| w == why) {
                Some((_, count)) => *count += 1,
                None => reasons.push((why, 1)),
            }
        }
        for (why, count) in reasons {
            lines.push(format!("  {count:>3} {why}"));
        }
    }
    lines
}

/// Ids, comma-separated, in indented lines of at most `width` characters.
fn wrapped(ids: &[String], width: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    let mut line = String::from(" ");
    for (i, id) in ids.iter().enumerate() {
        let item = if i + 1 < ids.len() {
            format!(" {id},")
        } else {
            format!(" {id}")
        };
        if line.len() + item.len() > width && !line.trim().is_empty() {
            lines.push(std::mem::replace(&mut line, String::from(" ")));
        }
        line.push_str(&item);
    }
    if !line.trim().is_empty() {
        lines.push(line);
    }
    lines
}
