//! `conformance`: replays scripted MCP cases against any implementation and judges what it
//! does, with a transcript and a diff when it does not do what the spec asks.
//!
//! Architecture invariant: this library shares no protocol types with the implementations it
//! tests. It reads and writes `serde_json::Value` over its own framing, so a bug in a shared
//! type cannot hide on both sides of a comparison. (The `conformance` binary bundles the
//! reference server as a default target; the library never calls it.)
//!
//! - [`case`]: the case format and its strict parser.
//! - [`pattern`]: JSON patterns for expected messages.
//! - [`target`]: starting, feeding and always reaping the process under test.
//! - [`run`]: playing one case and applying the protocol's standing rules.
//! - [`outcome`], [`report`], [`transcript`]: verdicts and how they are explained.
//! - [`suite`]: finding cases on disk or in the binary; blessing.
//! - [`client_run`], [`relay`]: playing a case against a client; the harness is its server.
//! - [`runner`]: running a suite in parallel and summing up, for the CLI.

pub mod baseline;
pub mod case;
pub mod client_run;
pub mod envelope;
pub mod json_report;
pub mod junit;
pub mod outcome;
pub mod pattern;
pub mod profile;
pub mod relay;
pub mod report;
pub mod run;
pub mod runner;
pub mod suite;
pub mod target;
pub mod transcript;
