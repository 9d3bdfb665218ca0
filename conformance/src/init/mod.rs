//! `conformance init`: drafts a target file for a server as it ships. It starts the server,
//! lists its tools, proposes for each role of the fixture profile the tools that could play
//! it (`propose`), checks each proposal by calling it (`check`), and writes what held, with a
//! note per role saying what was checked and what was not (`draft`).
//!
//! It never calls a tool that could change anything on its own: operators point it at real
//! servers (a filesystem, a git repository, a database), and a probe that writes, commits or
//! deletes would be a defect. Only tools annotated `readOnlyHint: true` are called; any other
//! candidate is proposed, marked unchecked and left out of the mapping, and is called only
//! when the operator names it (`--try TOOL`). Roles no tool could play are left out rather
//! than guessed: the cases that need them are skipped with the reason.

mod calls;
pub mod check;
pub mod draft;
mod error;
pub mod propose;
mod roles;
pub mod session;
pub mod tasks;

use crate::discovery::{self, Tool};
use crate::era::ProtocolVersion;
use crate::fixtures::{Fixtures, Mapping, Role, Source};
use crate::transport::Transport;
use crate::versions::Identity;
pub use error::{InspectError, OpenError, OpeningError};
use propose::Unit;
use roles::{fixture_roles, settle, settle_again, task_role};
use serde_json::Value;
use session::{Session, Start};
use std::time::Duration;

/// The order roles are checked in: `sleep` before `work` and `ticker`, whose duration's unit
/// a passing `sleep` on the same tool settles.
pub const CHECK_ORDER: [Role; 6] = [
    Role::Echo,
    Role::Ping,
    Role::Sleep,
    Role::Work,
    Role::Ticker,
    Role::Cancellations,
];

/// One way a tool could play a role.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The role.
    pub role: Role,
    /// The tool.
    pub tool: String,
    /// The argument template (`None`: the case's arguments, unchanged).
    pub arguments: Option<Value>,
    /// Whether the tool says it changes nothing.
    pub read_only: bool,
    /// Why it could play the role, as the note says it.
    pub why: String,
    /// The unit its duration argument is taken in, where it has one.
    pub unit: Option<Unit>,
}

impl Candidate {
    fn of(role: Role, tool: &Tool, arguments: Option<Value>, why: String) -> Candidate {
        Candidate {
            role,
            tool: tool.name.clone(),
            arguments,
            read_only: tool.read_only,
            why,
            unit: None,
        }
    }

    /// The mapping as the target file writes it: `{"tool": …, "arguments": …}`.
    pub fn shown(&self) -> String {
        match &self.arguments {
            Some(arguments) => format!("`{}` {}", self.tool, arguments),
            None => format!("`{}`", self.tool),
        }
    }
}

/// What became of one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Called, and it did what the role needs: what was seen.
    Passed {
        /// What the call showed.
        checked: String,
        /// Whether it sent progress (only `work` may do without).
        progress: bool,
    },
    /// Called, and it did not: why.
    Failed(String),
    /// Not called: why not.
    Unchecked(String),
}

/// A candidate and its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Tried {
    /// The candidate.
    pub candidate: Candidate,
    /// What became of it.
    pub verdict: Verdict,
}

/// One role's outcome: the candidates in the order they were considered, and the one chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleDraft {
    /// The role.
    pub role: Role,
    /// Its candidates, as far as they were considered.
    pub tried: Vec<Tried>,
    /// The index of the chosen one, if one passed.
    pub chosen: Option<usize>,
}

impl RoleDraft {
    /// The chosen candidate and what its check saw.
    pub fn chosen(&self) -> Option<(&Candidate, &str, bool)> {
        let tried = &self.tried[self.chosen?];
        match &tried.verdict {
            Verdict::Passed { checked, progress } => Some((&tried.candidate, checked, *progress)),
            _ => None,
        }
    }

    /// The mapping the target file gets, if a candidate passed.
    pub fn mapping(&self) -> Option<Mapping> {
        self.chosen().map(|(candidate, _, progress)| Mapping {
            tool: candidate.tool.clone(),
            arguments: candidate.arguments.clone(),
            progress,
        })
    }
}

/// What the operator asked of `init`.
#[derive(Debug, Clone)]
pub struct Ask {
    /// Tools that may be called although they are not annotated read-only.
    pub tries: Vec<String>,
    /// How long the server may take to answer the opening.
    pub startup: Duration,
    /// How long a check waits for an answer or progress, beyond the time it asked for.
    pub reply: Duration,
}

/// What `init` found.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// Who the server says it is.
    pub identity: Option<Identity>,
    /// The protocol version of the session.
    pub version: ProtocolVersion,
    /// The server's answer to the session's opening: what it declared.
    pub opening: Value,
    /// Its tools.
    pub tools: Vec<Tool>,
    /// One per role, in [`CHECK_ORDER`], then the task roles the server lists a tool for, then
    /// (for a server that offers tasks) the roles that say which tool runs as a task.
    pub roles: Vec<RoleDraft>,
}

impl Inspection {
    /// The roles as a target file maps them.
    pub fn fixtures(&self) -> Fixtures {
        Fixtures {
            roles: self.roles.iter().map(|r| (r.role, r.mapping())).collect(),
            source: Source::TargetFile,
            listed: [(self.version, discovery::declared_of(&self.tools))].into(),
            undeclared: vec![],
        }
    }
}

/// What `inspect` has seen so far, as it sees it (the console prints it as it goes).
pub enum Seen<'a> {
    /// The session is open.
    Opened(Option<&'a Identity>, ProtocolVersion),
    /// The tools are listed.
    Tools(&'a [Tool]),
    /// A role is settled.
    Role(&'a RoleDraft),
}

/// Opens a session with the target, lists its tools, and proposes and checks candidates for
/// every role, one session for all of them.
pub async fn inspect<S: Start>(
    start: &S,
    ask: &Ask,
    seen: &mut dyn FnMut(Seen<'_>),
) -> Result<Inspection, InspectError> {
    let mut session = session::open(start, ask.startup).await?;
    seen(Seen::Opened(session.identity.as_ref(), session.version));
    let version = session.version;
    if !discovery::declares_tools(&session.opening) {
        session.io.shutdown(Duration::ZERO).await;
        return Err(InspectError::ListTools(discovery::ListError::Undeclared));
    }
    let tools = match list(&mut session, ask).await {
        Ok(tools) => tools,
        Err(why) => {
            session.io.shutdown(Duration::ZERO).await;
            return Err(why);
        }
    };
    seen(Seen::Tools(&tools));
    let mut roles = fixture_roles(&mut session, &tools, ask, seen).await;
    for role in Role::TASK {
        let draft = task_role(role, &tools, &ask.tries);
        if !draft.tried.is_empty() {
            seen(Seen::Role(&draft));
            roles.push(draft);
        }
    }
    if tasks::offered(&session) {
        for &role in tasks::roles(version) {
            let (candidates, passed_over) = tasks::candidates(role, &tools, version);
            let mut draft = settle(&mut session, role, candidates, ask).await;
            draft.tried.extend(passed_over.forbidding);
            if draft.chosen.is_none() {
                draft.tried.extend(passed_over.unlike);
            }
            seen(Seen::Role(&draft));
            roles.push(draft);
        }
    }
    session.io.shutdown(Duration::from_millis(500)).await;
    // A server whose handshake-era session hints at tasks it does not offer there may offer
    // them through the 2026 extension (one that offers them there was asked already).
    if version.has_handshake()
        && !tasks::offered(&session)
        && tasks::hinted(&session.opening, &tools)
    {
        if let Some(draft) = stateless_task_work(start, ask).await {
            seen(Seen::Role(&draft));
            settle_again(&mut roles, draft);
        }
    }
    Ok(Inspection {
        identity: session.identity,
        version,
        opening: session.opening,
        tools,
        roles,
    })
}

/// Lists the target's tools; a tool named with `--try` must be one of them.
async fn list<T: Transport>(
    session: &mut Session<T>,
    ask: &Ask,
) -> Result<Vec<Tool>, InspectError> {
    let version = session.version;
    let tools = discovery::list_tools(
        &mut session.io,
        false,
        |r| {
            version.stamp(r);
        },
        ask.reply,
    )
    .await
    .map_err(InspectError::ListTools)?;
    if let Some(unknown) = ask
        .tries
        .iter()
        .find(|t| !tools.iter().any(|x| &x.name == *t))
    {
        return Err(InspectError::UnknownTry {
            tool: unknown.clone(),
            tools: tools.iter().map(|t| t.name.clone()).collect(),
        });
    }
    Ok(tools)
}

/// `task_work` as the 2026-07-28 tasks extension runs it, for a server whose handshake-era
/// session hinted at tasks but mapped no `task_work`: a fresh start opened with
/// `server/discover`, its tools listed, and `work`'s candidates called with the extension
/// declared. `None` when the server does not speak 2026-07-28 or offers no tasks there.
async fn stateless_task_work<S: Start>(start: &S, ask: &Ask) -> Option<RoleDraft> {
    let mut session = session::discover(start, ask.startup).await.ok()?;
    if !discovery::declares_tools(&session.opening) {
        session.io.shutdown(Duration::ZERO).await;
        return None;
    }
    let version = session.version;
    let stamp = |r: &mut Value| {
        version.stamp(r);
    };
    let listed = discovery::list_tools(&mut session.io, false, stamp, ask.reply).await;
    let draft = match listed {
        Ok(tools) if tasks::offered(&session) => {
            let (candidates, _) = tasks::candidates(Role::TaskWork, &tools, version);
            Some(settle(&mut session, Role::TaskWork, candidates, ask).await)
        }
        _ => None,
    };
    session.io.shutdown(Duration::from_millis(500)).await;
    draft
}
