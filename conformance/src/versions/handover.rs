//! A probe's target handed to the cases: a stdio probe opens the one session its process
//! has, and against a target slow to start ([`crate::share`]) that process can serve the cases
//! that share processes instead of being ended and another started in its place. It is handed
//! over only when its session is as clean as one a case opened: every request the probe sent
//! was answered, nothing else came (no notification, no request of the target's, no line the
//! envelope rules find fault with), and the target agreed to the version asked. Then the
//! opening earned no finding, and a case that goes on in it is judged as on any shared session.

use crate::era::ProtocolVersion;
use crate::rules::envelope;
use crate::transport::process::{Process, TargetLog};
use crate::transport::{Channel, Event, HttpSteps, SendError, Transport};
use serde_json::Value;
use std::collections::HashSet;
use std::process::ExitStatus;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// A probe's target whose session may go on serving cases, with how the probe opened it.
pub struct Handed<T> {
    /// The target, its session open.
    pub io: T,
    /// The version the session was opened at (the one asked, and agreed to).
    pub version: ProtocolVersion,
    /// What the probe sent to open it (`initialize` or `server/discover`).
    pub request: Value,
    /// The target's answer.
    pub answer: Value,
}

/// A transport that keeps count of what the probe's session saw: the requests sent and not
/// yet answered, and whether anything but an answer to one of them came.
pub struct Watched<T> {
    inner: T,
    /// Ids of the requests sent and not answered yet.
    open: HashSet<String>,
    /// Something came that a case opening its own session would have had to judge.
    stray: bool,
}

impl<T: Transport> Watched<T> {
    /// Watches `inner` from its start.
    pub fn new(inner: T) -> Self {
        Watched {
            inner,
            open: HashSet::new(),
            stray: false,
        }
    }

    /// The target, unwatched.
    pub fn into_inner(self) -> T {
        self.inner
    }

    /// The target with its open session, when it may serve cases: see the module's doc.
    /// `request` opened it at `version`, answered with `answer`.
    pub fn handed(
        self,
        version: ProtocolVersion,
        request: Value,
        answer: &Value,
    ) -> Result<Handed<T>, T> {
        let stateless = version.is_stateless();
        let agreed = answer
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str);
        let clean = !self.stray
            && self.open.is_empty()
            && answer.get("result").is_some()
            && (stateless || agreed == Some(version.as_str()))
            && self.inner.input_open()
            && !self.inner.finished()
            && self.inner.exit_status().is_none();
        if !clean {
            return Err(self.inner);
        }
        Ok(Handed {
            io: self.inner,
            version,
            request,
            answer: answer.clone(),
        })
    }

    /// Takes one message the target wrote: an answer to an open request closes it; anything
    /// else, or a line the envelope rules fault, makes the session stray.
    fn saw(&mut self, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let value = serde_json::from_slice::<Value>(bytes).ok();
        if !envelope::check(&envelope::SERVER, &text, value.as_ref()).is_empty() {
            self.stray = true;
            return;
        }
        let answered = value
            .as_ref()
            .filter(|v| v.get("method").is_none())
            .and_then(|v| v.get("id"))
            .is_some_and(|id| self.open.remove(&id.to_string()));
        self.stray |= !answered;
    }
}

impl<T: Transport> Transport for Watched<T> {
    async fn send(
        &mut self,
        bytes: &[u8],
        reply_to: Option<Channel>,
    ) -> Result<Channel, SendError> {
        let sent = serde_json::from_slice::<Value>(bytes).ok();
        if let Some(id) = sent
            .as_ref()
            .filter(|v| v.get("method").is_some())
            .and_then(|v| v.get("id"))
        {
            self.open.insert(id.to_string());
        }
        self.inner.send(bytes, reply_to).await
    }

    async fn next(&mut self, deadline: Deadline) -> Option<(Instant, Event)> {
        let (at, event) = self.inner.next(deadline).await?;
        match &event {
            Event::Message { bytes, .. } => self.saw(bytes),
            Event::Partial(_) => {}
            _ => self.stray = true,
        }
        Some((at, event))
    }

    fn finished(&self) -> bool {
        self.inner.finished()
    }

    fn ordered(&self) -> bool {
        self.inner.ordered()
    }

    fn channel_per_request(&self) -> bool {
        self.inner.channel_per_request()
    }

    fn abort(&mut self, channel: Channel) -> bool {
        self.inner.abort(channel)
    }

    fn agreed(&mut self, version: &str) {
        self.inner.agreed(version)
    }

    fn http_steps(&mut self) -> Option<&mut dyn HttpSteps> {
        self.inner.http_steps()
    }

    fn close_input(&mut self) {
        self.inner.close_input()
    }

    fn expire_session(&mut self) -> bool {
        self.inner.expire_session()
    }

    fn input_open(&self) -> bool {
        self.inner.input_open()
    }

    fn process(&self) -> Option<&Process> {
        self.inner.process()
    }

    fn started(&self) -> Instant {
        self.inner.started()
    }

    fn exit_status(&self) -> Option<ExitStatus> {
        self.inner.exit_status()
    }

    fn process_group(&self) -> Option<i32> {
        self.inner.process_group()
    }

    fn fresh(&self) -> bool {
        self.inner.fresh()
    }

    fn note(&self, text: String) {
        self.inner.note(text)
    }

    async fn shutdown(&mut self, grace: Duration) -> TargetLog {
        self.inner.shutdown(grace).await
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::era::ProtocolVersion;
    use crate::transport::process::Launch;
    use crate::transport::stdio::Stdio;
    use std::time::Duration;

    /// A server in `sh` that answers the probe's `initialize` (agreeing to `agreed`), after
    /// writing `first` when it is not empty, then its `tools/list`, then reads on.
    pub(crate) fn server(agreed: &str, first: &str) -> Launch {
        let answer = format!(
            r#"{{"jsonrpc":"2.0","id":"versions","result":{{"protocolVersion":"{agreed}","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"sh","version":"1"}}}}}}"#
        );
        let tools = r#"{"jsonrpc":"2.0","id":"tools-0","result":{"tools":[]}}"#;
        let first = if first.is_empty() {
            String::new()
        } else {
            format!("echo '{first}'; ")
        };
        let script = format!(
            "read l; {first}echo '{answer}'; read l; read l; echo '{tools}'; cat >/dev/null"
        );
        Launch::argv(vec!["sh".into(), "-c".into(), script])
    }

    /// Probes `launch` at 2025-11-25: whether its process was handed over, and the probe.
    fn probed(launch: &Launch) -> (Option<super::Handed<Stdio>>, super::super::Probe) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let io = Stdio::spawn(launch, Duration::from_secs(5)).unwrap();
            let wait = Duration::from_secs(10);
            let (probe, handed) =
                super::super::probe_handing(io, ProtocolVersion::V2025_11_25, wait).await;
            if let Some(mut handed) = handed {
                let ended = Duration::ZERO;
                let _ = crate::transport::Transport::shutdown(&mut handed.io, ended).await;
                return (Some(handed), probe);
            }
            (None, probe)
        })
    }

    #[test]
    fn a_clean_opening_is_handed_over_with_what_opened_it() {
        let (handed, probe) = probed(&server("2025-11-25", ""));
        let handed = handed.expect("a clean session is handed over");
        assert_eq!(handed.version, ProtocolVersion::V2025_11_25);
        assert_eq!(handed.request["method"], "initialize");
        assert_eq!(handed.request["params"]["protocolVersion"], "2025-11-25");
        assert_eq!(handed.answer["id"], "versions");
        assert_eq!(probe.versions, [ProtocolVersion::V2025_11_25]);
        assert!(probe.start.is_some_and(|s| s < Duration::from_secs(10)));
    }

    #[test]
    fn a_session_that_saw_more_than_answers_or_another_version_is_ended() {
        let log = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"up"}}"#;
        let (handed, probe) = probed(&server("2025-11-25", log));
        assert!(handed.is_none(), "a notification came before the answer");
        assert_eq!(probe.versions, [ProtocolVersion::V2025_11_25]);
        let (handed, probe) = probed(&server("2025-06-18", ""));
        assert!(handed.is_none(), "it agreed to another version");
        assert_eq!(probe.versions, [ProtocolVersion::V2025_06_18]);
        let untidy = r#"{"jsonrpc":"2.0","id":"versions","result":{},"error":{}}"#;
        assert!(probed(&server("2025-11-25", untidy)).0.is_none());
    }
}
