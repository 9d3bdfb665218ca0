//! What differs between the two roles, as the engine's one seam for them: the engine calls a
//! [`Side`] at fixed points and does everything else itself.

use crate::case::Step;
use crate::rules::envelope::Writer;
use crate::transport::{Event, Transport};
use serde_json::Value;
use std::time::Duration;

use super::{Engine, Stop, Why};

/// What differs between the two roles. The engine calls these at fixed points; everything
/// else is common.
#[allow(async_fn_in_trait)]
pub trait Side: Sized {
    /// Who writes the target's lines, for the envelope rules' wording.
    const WRITER: &'static Writer;
    /// The arrow of lines the harness sends, as case files and diffs show them.
    const SENDS: char;
    /// The arrow of lines the harness expects.
    const EXPECTS: char;
    /// How long after the target process exited its output is still read (`None`: until it
    /// closes). A server's exit ends its session, even if a child it left holds its stdout.
    const EXIT_GRACE: Option<Duration>;
    /// Whether the harness may send probes (requests of its own) to prove a message was read.
    const PROBES: bool;
    /// Whether the harness, on this side, stamps the stateless era's `_meta` onto its requests
    /// (it does as a client; as a server it sends no requests in that era).
    const STAMPS: bool;

    /// Plays the whole case: opens the session and plays the steps within the time limits.
    async fn play<T: Transport>(e: &mut Engine<'_, T, Self>) -> Result<(), Stop>;

    /// After [`Side::play`], however it ended: what the role still has to judge. Returns the
    /// reason when the case turned out not to apply.
    async fn finish<T: Transport>(
        e: &mut Engine<'_, T, Self>,
        played: Result<(), Stop>,
    ) -> Option<String>;

    /// The standing rules for one message the target wrote (transcript index `index`, parsed
    /// as a JSON object that passed the envelope check), which came in the session whose ids
    /// the ledger scopes as `scope`.
    async fn judge<T: Transport>(e: &mut Engine<'_, T, Self>, index: usize, scope: Option<&str>);

    /// Events other than messages that only this role knows what to make of.
    fn observe<T: Transport>(e: &mut Engine<'_, T, Self>, at: Duration, event: Event);

    /// Steps only this role carries out (`! silent`, `! witness`, `! close-stdin`, `! exit`).
    async fn role_step<T: Transport>(e: &mut Engine<'_, T, Self>, step: &Step) -> Result<(), Stop>;

    /// Adds the era's stamp to a message the harness is about to send, when the case wants it;
    /// returns whether it did (the transcript then shows the case's own line beside it). As a
    /// client the harness stamps requests with the stateless era's `_meta`.
    fn stamp<T: Transport>(e: &Engine<'_, T, Self>, message: &mut Value) -> bool {
        Self::STAMPS && e.played.case().stamp && e.protocol().is_some_and(|v| v.stamp(message))
    }

    /// Takes note of a message the harness sent (a case's line or its own answer).
    fn sent<T: Transport>(_e: &mut Engine<'_, T, Self>, _message: &Value) {}

    /// After a case's line was sent: what the harness sends in consequence (the answers to
    /// requests it held until that line).
    async fn after_send<T: Transport>(_e: &mut Engine<'_, T, Self>) {}

    /// Why a case's line may not be sent in this session, if it may not: a request of the
    /// harness's that needs a capability the target did not declare. The case is skipped
    /// with that reason: sending it would judge the harness's own overreach.
    fn unoffered<T: Transport>(_e: &Engine<'_, T, Self>, _message: &Value) -> Option<String> {
        None
    }

    /// Prepares a message the harness is about to send (a target file's tool mapping).
    /// Returns the fixture role the message calls, when it calls one.
    fn prepare<T: Transport>(_e: &Engine<'_, T, Self>, _message: &mut Value) -> Option<String> {
        None
    }

    /// Whether the steps stop now that `why` happened, and how; `None` to go on (for
    /// [`Why::Silence`], to report the missing message). Where the target went away while the
    /// case still needed it, the role reports that here, once. The engine has already stopped
    /// the steps (as [`Stop::Hung`]) where it stopped talking with the target (see
    /// `Engine::stopped`).
    async fn stop<T: Transport>(e: &mut Engine<'_, T, Self>, why: Why) -> Option<Stop>;

    /// After the case and the drain, when nothing more will come: judgements that needed the
    /// whole transcript.
    fn drained<T: Transport>(_e: &mut Engine<'_, T, Self>) {}

    /// What to add to a "no message matching" finding about the target's state.
    fn absence<T: Transport>(_e: &Engine<'_, T, Self>) -> String {
        String::new()
    }
}
