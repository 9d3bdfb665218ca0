//! `conformance`: replays scripted MCP cases against any implementation and judges what it
//! does, with a transcript and a diff when it does not do what the spec asks.
//!
//! Architecture invariant: this library shares no protocol types with the implementations it
//! tests, and does not depend on them (the `conformance` binary bundles the reference server
//! as a default target behind its `bundled-reference` feature; the library never calls it).
//! It reads and writes `serde_json::Value` over its own framing, so a bug in a shared type
//! cannot hide on both sides of a comparison.
//!
//! - [`case`]: the case format and its strict parser; [`pattern`]: JSON patterns.
//! - [`engine`]: plays one case, for either role ([`engine::server`], [`engine::client`]);
//!   [`rules`]: the standing rules every message is judged by.
//! - [`transport`]: how messages reach a target, by direction (to servers: stdio and HTTP; to
//!   clients: the relay and the harness's HTTP server), and process hygiene.
//! - [`era`]: what differs between protocol versions; [`versions`]: which ones a run uses
//!   ([`client_versions`] for client runs).
//! - [`load`]: how busy the machine is, to stretch waits fairly; [`time`]: the one clock
//!   every instant is read from (tokio's, which a test can pause).
//! - [`fixtures`], [`target_file`]: the fixture profile and how third-party servers map it;
//!   [`discovery`] and [`init`]: which of a server's tools play it, found and checked.
//! - [`from_trace`]: a session recorded between a real client and server, drafted into a
//!   server case that replays it.
//! - [`exchange`]: what travels between the harness and a target, as data; [`facts`]: what
//!   the engine learned of one exchange (requests, cancels, tasks, HTTP channels), which the
//!   rules judge.
//! - [`outcome`], [`transcript`], [`case_report`], [`report`]: verdicts, what was exchanged,
//!   what one case's run produced, and how all of it is explained and gated.
//! - [`suite`], [`baseline`], [`runner`], [`harness`]: finding cases, known failures, running
//!   many at once, and the glue for test binaries; [`spoken`]: asking a server which
//!   versions it speaks; [`interrupt`]: leaving nothing behind when interrupted.
//! - [`record`]: `conformance record`, between a real client and server, writing a [`trace`].
//! - [`trace`]: what `conformance record` writes and `check` reads (docs/traces.md).
//! - [`check`]: a recorded session (a trace) judged offline by the same rules.
//! - [`error`]: why a run could not happen, typed.
//! - [`libtest`]: every case as a `cargo test` test in a server's own repository.

pub mod baseline;
pub mod case;
pub mod case_report;
pub mod check;
pub mod client_versions;
pub mod compare;
pub mod discovery;
pub mod engine;
pub mod era;
pub mod error;
pub mod exchange;
pub mod facts;
pub mod fixtures;
pub mod from_trace;
pub mod harness;
pub mod init;
pub mod interrupt;
#[cfg(feature = "libtest")]
pub mod libtest;
pub mod load;
pub mod outcome;
pub mod pattern;
pub mod record;
pub mod report;
pub mod requirement;
pub mod rules;
pub mod runner;
pub mod share;
pub mod spoken;
pub mod suite;
pub mod target_file;
pub mod time;
pub mod trace;
pub mod transcript;
pub mod transport;
pub mod versions;
