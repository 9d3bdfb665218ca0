//! The barrier's settle over HTTP: before its probe, the harness waits until every request
//! has arrived (or had its arrival window) and every notification has its status, notes the
//! cancels nothing proves were read, and waits until every accepted cancel counts as read.

use super::super::{Engine, Side};
use crate::engine::http::Streams;
use crate::engine::parts::clock;
use crate::engine::parts::transcript::Transcript;
use crate::facts::ledger::{CancelMark, Ledger};
use crate::facts::streams::Opened;
use crate::facts::waits::proved_by_time;
use crate::outcome::Severity;
use crate::requirement::Req;
use crate::rules::envelope::Problem;
use crate::transport::{Channel, Transport};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// Over HTTP, before the barrier's probe: waits (at most `--reply-timeout`, stretched for a
    /// busy machine) until every notification POST so far has its status and every request
    /// has arrived or had its arrival window, then until the grace after the last accepted
    /// cancel has passed, so that every cancel sent before the barrier that was accepted
    /// counts as read. Cancels that nothing proves are noted.
    pub(crate) async fn settle(&mut self) {
        let deadline = Deadline::now() + self.clock.stretched(self.played.options().reply_timeout);
        self.await_heads(deadline).await;
        let no_status = self.clock.stretched(self.played.options().reply_timeout);
        let (accepted, notes) =
            cancels_accepted(&self.ledger, &mut self.streams, &self.transcript, no_status);
        self.problems(notes);
        // Until every accepted cancel counts as read; that moment moves later while the
        // target waits for a CPU (`Waits::read_by`), within the allowance.
        let read_by = |e: &Self, m: &CancelMark| e.waits_if(proved_by_time(m)).read_by(m);
        while let Some(read) = accepted.iter().filter_map(|m| read_by(self, m)).max() {
            let until = Deadline::from_std(self.io.started() + read).min(deadline);
            if Deadline::now() >= until {
                break;
            }
            self.pump_until(until).await;
        }
    }

    /// Until every notification POST so far has its status and every request has arrived or
    /// had its arrival window, by `deadline` at the latest.
    async fn await_heads(&mut self, deadline: Deadline) {
        let reply = self.clock.stretched(self.played.options().reply_timeout);
        let arrival = self.streams.arrival_window(self.protocol(), reply);
        loop {
            let now = clock::now();
            // The earliest moment something may stop being awaited.
            let mut wake: Option<Instant> = None;
            for s in self.streams.channels().values() {
                let until = match s.opened {
                    Opened::Request(_) if !s.arrived() && now < s.sent + arrival => {
                        s.sent + arrival
                    }
                    Opened::Notification { .. } | Opened::Response
                        if s.head.is_none() && s.end.is_none() =>
                    {
                        deadline.into_std()
                    }
                    _ => continue,
                };
                wake = Some(wake.map_or(until, |w| w.min(until)));
            }
            let Some(wake) = wake else {
                break;
            };
            let wake = Deadline::from_std(wake).min(deadline);
            // `next` is false at `wake`, or at once when nothing more can come.
            if !self.next(wake).await && (wake >= deadline || Deadline::now() < wake) {
                break;
            }
        }
    }
}

/// The cancels in `ledger` whose acceptance (a `202`, or a closed stream, and a grace) counts
/// as their reading; and the notes on the others as unproven (HTTP-17, a channel that got no
/// status within `no_status`) and on the closed streams' grace (HTTP-11), each once (as
/// `streams` remembers).
fn cancels_accepted(
    ledger: &Ledger,
    streams: &mut Streams,
    transcript: &Transcript,
    no_status: Duration,
) -> (Vec<CancelMark>, Vec<Problem>) {
    let mut accepted: Vec<CancelMark> = vec![];
    let mut problems = vec![];
    let marks: Vec<(String, CancelMark)> = ledger
        .sent_requests()
        .iter()
        .filter_map(|(key, r)| r.cancel.map(|m| (key.clone(), m)))
        .collect();
    let mut closed = vec![];
    for (key, mark) in marks {
        if mark.read.is_some() && (mark.accepted.is_some() || mark.closed.is_some()) {
            if mark.closed.is_some() && streams.note_unproven(mark.at) {
                closed.push((key, mark.closed.map_or(Duration::ZERO, |c| c.grace)));
            }
            accepted.push(mark);
            continue;
        }
        let channel = transcript
            .get(mark.at)
            .map_or(Channel::Stdio, |e| e.channel);
        let Some(stream) = streams.stream(channel) else {
            continue;
        };
        let what = match &stream.head {
            Some((_, head)) => format!("got HTTP {}", head.summary()),
            None => format!("got no status within {no_status:?}"),
        };
        if !stream.opened.wants_accepted() || !streams.note_unproven(mark.at) {
            continue;
        }
        problems.push(Problem::new(
            Severity::Note,
            Req::Http17,
            format!(
                "the cancel of request {key} ({channel}) {what}: nothing proves the server read it, so a late response to it is not charged and only the witness can tell whether its work stopped"
            ),
        ));
    }
    if !closed.is_empty() {
        closed.sort();
        let grace = closed.iter().map(|(_, g)| *g).max().unwrap_or_default();
        let keys: Vec<String> = closed.into_iter().map(|(key, _)| key).collect();
        let what = if keys.len() == 1 {
            format!("the cancel of request {} closed its stream", keys[0])
        } else {
            format!(
                "the cancels of requests {} closed their streams",
                keys.join(", ")
            )
        };
        problems.push(Problem::new(
            Severity::Note,
            Req::Http11,
            format!(
                "{what}: nothing on the wire shows when the server noticed, so the barrier waited a grace of {} ms, and only the witness can tell whether the work stopped",
                grace.as_millis()
            ),
        ));
    }
    (accepted, problems)
}
