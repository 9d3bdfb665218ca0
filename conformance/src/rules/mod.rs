//! The standing rules: what every message a target writes must respect, whatever the case
//! says. The envelope (one JSON-RPC 2.0 object per line) is common to both roles; the rest
//! depends on who wrote the message.
//!
//! A rule family is a set of functions over a read-only view of what happened (the message,
//! the ledger entries it is about, the era, the transport's facts, a reading of the clock)
//! returning findings ([`envelope::Problem`]) and, where the harness must answer, the answer;
//! the engine gathers the facts and applies the verdict (`engine/server/judge*.rs`,
//! `engine/client/judge*.rs`, `engine/client/crossing.rs`). Each such family has unit tests
//! of its own, one per finding it can make and per fair outcome it must accept.
//!
//! - [`envelope`]: JSON-RPC 2.0 on one line, for either role; `response`: what every
//!   response obeys, whoever wrote it.
//! - [`server`]: what a server writes (responses after a cancel, progress, its own requests).
//! - [`http`]: what a server over Streamable HTTP must respect beyond its messages (statuses,
//!   streams, session ids).
//! - [`client_cancel`]: a client's cancels, and its answers to cancelled requests;
//!   [`client_progress`]: the progress it reports; [`client_request`]: its request ids,
//!   progress tokens and handshake order.
//! - `client_stateless`: its requests in the stateless era and the reuse of request ids;
//!   [`client_http`]: its Streamable HTTP requests and sessions; `client_crossing`: its
//!   messages whose POSTs cross. The engine's side of all the client's families (gathering
//!   facts, applying verdicts, keeping the session state, answering unscripted requests) is
//!   in `engine/client/`.
//! - [`tasks`]: what an answer says of tasks (for the ledger), a task's progress once it is
//!   terminal (PRG-10) and the rule a task's cancel answers to; the engine's side is
//!   `engine/server/tasks.rs`. The families above take its facts (whether a request created
//!   a task) as given.

pub(crate) mod client_cancel;
pub(crate) mod client_crossing;
pub mod client_http;
pub(crate) mod client_progress;
pub(crate) mod client_request;
pub(crate) mod client_stateless;
pub mod envelope;
pub(crate) mod http;
pub(crate) mod response;
pub(crate) mod server;
pub mod tasks;

#[cfg(test)]
pub(crate) mod testing;
