//! The responses the target writes to the harness's requests, settled against the request
//! ledger: the first answer proves what was sent before its request was read, a second one
//! or one for an id the harness never used is consumed; what each must obey is judged by
//! `rules::response`. Also where the standing rules' findings are applied.

use super::{Engine, Side};
use crate::era::Era;
use crate::facts::ledger::key_in;
use crate::outcome::FindingKind;
use crate::rules::envelope::Problem;
use crate::rules::response;
use crate::transport::Transport;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// Standing rules' findings, at the case line being carried out.
    pub(crate) fn problems(&mut self, problems: impl IntoIterator<Item = Problem>) {
        for p in problems {
            let line = self.step.line();
            let kind = FindingKind::Rule(p.requirement);
            self.findings
                .add_doubting(p.severity, kind, line, p.message, p.doubt);
        }
    }

    /// The rules every response obeys, whoever wrote it (see [`response`]); its id is scoped
    /// as `scope`. Returns the key of the harness's request on its first answer.
    pub(crate) fn settle_response(&mut self, index: usize, scope: Option<&str>) -> Option<String> {
        let stateless = S::STAMPS && self.protocol().is_some_and(|v| v.era() == Era::Stateless);
        let value = self.transcript.message(index);
        let shape = response::shape(value);
        let key = value
            .get("id")
            .filter(|id| !id.is_null())
            .map(|id| key_in(scope, id));
        self.problems(shape);
        let key = key?;
        let who = S::WRITER.who;
        let Some(request) = self.ledger.settle(&key, index) else {
            self.transcript[index].consumed_by = Some(0);
            self.problems([response::unknown_id(who, &key)]);
            return None;
        };
        let (first, internal, line) = (request.answers == 1, request.internal, request.line);
        let (subject, sent) = (request.index, request.sent);
        let value = self.transcript.message(index);
        let result_type = response::result_type(value, stateless, &request.method);
        self.transcript[index].internal = internal;
        if first {
            let arrived = self.transcript[index].at;
            self.proof_arrived(subject, sent, arrived);
        }
        self.problems(result_type);
        if !first {
            self.transcript[index].consumed_by = Some(0);
            self.problems([response::second_answer(who, &key, line)]);
            return None;
        }
        Some(key)
    }
}
