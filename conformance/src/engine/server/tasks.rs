//! The engine's side of the task rules (`rules::tasks`) when the harness plays the client:
//! what an answer says about tasks goes into the ledger. The rules themselves are pure
//! functions over those facts.

use crate::facts::ledger::Ledger;
use crate::rules::tasks::Learned;
use std::time::Duration;

/// Takes what the answer to the harness's request `key` said about tasks (`learned`, see
/// [`crate::rules::tasks::learn`]) into the ledger: a task it created, a `tasks/cancel` of one
/// answered with a result, or a task shown terminal, `at` (since the target started) when the
/// target had waited `waited` for a CPU.
pub(crate) fn learn_task(
    ledger: &mut Ledger,
    learned: Learned,
    key: String,
    at: Duration,
    waited: Option<Duration>,
) {
    match learned {
        Learned::Nothing => {}
        Learned::Created(task) => ledger.task_created(task, key),
        Learned::About {
            task,
            cancel_answered,
            terminal,
        } => {
            if cancel_answered {
                ledger.task_cancel_answered(&task, at, waited);
            }
            if let Some(status) = terminal {
                ledger.task_terminal(&task, at, status, waited);
            }
        }
    }
}
