//! What a run of a case against a target that breaks a rule on purpose must show, written as
//! one row of a table a reviewer scans: the outcome, the finding it rests on (and its words),
//! the findings that must not be there, how long the run may take, what it may cost and what
//! it must leave behind, and the options it runs with. The harness's own tables of broken
//! servers (stdio and Streamable HTTP) and broken clients use it; an SDK's tests can keep a
//! table of their own broken targets the same way.
//!
//! ```
//! use conformance::era::ProtocolVersion;
//! use conformance::harness::expect::{Expect, On};
//! use conformance::outcome::Outcome;
//! use conformance::requirement::Req;
//! use std::time::Duration;
//!
//! let fast = Duration::from_secs(3);
//! // mode of the broken target, case, what the run must show.
//! let table = [
//!     ("correct",           "cancel-unknown-id",        Expect::outcome(Outcome::Pass)),
//!     ("ignores-cancels",   "no-response-after-cancel", Expect::warns(Req::Can05)),
//!     ("crashes-on-cancel", "cancel-unknown-id",        Expect::fails(Req::Std01).within(fast).reaped()),
//!     ("garbage",           "stdio-framing",            Expect::fails(Req::Std03).saying("not JSON")),
//!     ("answers-late",      "no-response-after-cancel", Expect::warns(Req::Can05).at(ProtocolVersion::V2026_07_28)),
//!     ("wrong-result",      "unknown-method",           Expect::fails(On::Case).without(Req::Rpc04)),
//! ];
//! assert_eq!(table[2].2.to_string(), "outcome=fail finding=STD-01/Fail within=3s stretched reaped");
//! ```
//!
//! A test plays each row with [`Expect::options`] (calm, and again under
//! [`saturate_cpus`](super::saturate_cpus): the verdict must not depend on how busy the
//! machine is) and judges the report with [`Expect::check`], which says what did not hold and
//! explains the run. A finding is named by what it rests on ([`On`]: a [`Req`](crate::requirement::Req), or a kind of
//! finding that cites none), so a misspelt id does not compile; words may list alternatives as
//! `a|b`, and [`Expect::or_on`] gives a finding another thing it may rest on.

mod check;
mod on;

pub use check::{peak_rss_kib, Run, Unmet};
pub use on::On;

use crate::engine::Options;
use crate::era::ProtocolVersion;
use crate::outcome::{Outcome, Severity};
use std::fmt;
use std::time::Duration;

/// What a run must show, built row by row: `Expect::fails(Req::Std01).within(fast).reaped()`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expect {
    /// The run's outcome is exactly this.
    outcome: Option<Outcome>,
    /// A finding that must be there.
    finding: Option<Wanted>,
    /// No finding above a note rests on any of these.
    absent: Vec<On>,
    /// No finding above a note says this.
    never_saying: Option<&'static str>,
    /// Every finding is a note, and the case ran.
    clean: bool,
    /// The one line that says why the case did not pass contains this.
    headline: Option<&'static str>,
    /// The run ends faster than this.
    within: Option<Bound>,
    /// The test process's peak resident memory stays under this many MiB.
    small: Option<u64>,
    /// The report itself is bounded (see [`Expect::bounded`]).
    bounded: bool,
    /// No process the target reported starting is left.
    reaped: bool,
    /// The protocol version to run at.
    version: Option<ProtocolVersion>,
    /// The reply timeout to run with.
    reply_timeout: Option<Duration>,
    /// The startup allowance to run with.
    startup_timeout: Option<Duration>,
    /// The case limit to run with.
    case_timeout: Option<Duration>,
    /// A pass is accepted instead when the machine was busy and the harness said the timing
    /// cannot tell (see [`Expect::or_untimed`]).
    untimed: bool,
}

/// A finding a run must show.
#[derive(Clone, Debug, PartialEq)]
struct Wanted {
    /// What it rests on (any of these).
    on: Vec<On>,
    severity: Severity,
    /// Words its message contains (`a|b`: either; empty: any message).
    saying: &'static str,
}

impl Wanted {
    /// What it may rest on, as reports write it (`limit|case`: either).
    fn on_shown(&self) -> String {
        let on: Vec<String> = self.on.iter().map(On::to_string).collect();
        on.join("|")
    }
}

/// How long a run may take.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bound {
    /// On any machine, stretched as the harness stretches its waits while it is busy.
    Stretched(Duration),
    /// On a calm run only; a run with every core busy does not check it.
    Calm(Duration),
}

impl Expect {
    /// On a busy machine the run may pass instead, when the harness says why: the proof that
    /// the target read a cancel came after the work could have ended on its own ("the timing
    /// cannot tell"). Load can hide a late answer from the harness, never invent one; a calm
    /// run, or a pass without those words, is judged as the row says.
    pub fn or_untimed(mut self) -> Expect {
        self.untimed = true;
        self
    }

    /// The run's outcome is exactly `outcome`, whatever it found.
    pub fn outcome(outcome: Outcome) -> Expect {
        Expect::default().exactly(outcome)
    }

    /// The run fails, with a failure on `on` (a [`Req`](crate::requirement::Req), or [`On::Case`], …).
    pub fn fails(on: impl Into<On>) -> Expect {
        Expect::caught(on, Severity::Fail).exactly(Outcome::Fail)
    }

    /// The run warns, with a warning on `on`.
    pub fn warns(on: impl Into<On>) -> Expect {
        Expect::caught(on, Severity::Warn).exactly(Outcome::Warn)
    }

    /// A finding of `severity` on `on`, in a run that does not pass (unless
    /// [`exactly`](Expect::exactly) says it passes).
    pub fn caught(on: impl Into<On>, severity: Severity) -> Expect {
        Expect::default().noting(on, severity, "")
    }

    /// Nothing above a note was found, and the case ran.
    pub fn clean() -> Expect {
        Expect {
            clean: true,
            ..Expect::default()
        }
    }

    /// The run's outcome is exactly `outcome`.
    pub fn exactly(mut self, outcome: Outcome) -> Expect {
        self.outcome = Some(outcome);
        self
    }

    /// The expected finding's message contains `text` (`a|b`: either).
    ///
    /// # Panics
    /// When no finding is expected yet: a mistake in the table.
    pub fn saying(mut self, text: &'static str) -> Expect {
        let finding = self
            .finding
            .as_mut()
            .expect("saying() words a finding: caught, fails or warns first");
        finding.saying = text;
        self
    }

    /// The expected finding may rest on `on` instead (`Expect::fails(On::Limit).or_on(On::Case)`).
    ///
    /// # Panics
    /// When no finding is expected yet: a mistake in the table.
    pub fn or_on(mut self, on: impl Into<On>) -> Expect {
        let finding = self
            .finding
            .as_mut()
            .expect("or_on() widens a finding: caught, fails or warns first");
        finding.on.push(on.into());
        self
    }

    /// A finding of `severity` on `on` saying `text`, in a run otherwise as `self` says (the
    /// form for a note in a clean run).
    pub fn noting(mut self, on: impl Into<On>, severity: Severity, text: &'static str) -> Expect {
        self.finding = Some(Wanted {
            on: vec![on.into()],
            severity,
            saying: text,
        });
        self
    }

    /// No finding above a note rests on `on` (a [`Req`](crate::requirement::Req), or [`On::Case`], …).
    pub fn without(mut self, on: impl Into<On>) -> Expect {
        self.absent.push(on.into());
        self
    }

    /// No finding above a note says `text`.
    pub fn never_saying(mut self, text: &'static str) -> Expect {
        self.never_saying = Some(text);
        self
    }

    /// The headline (the line the console and JSON give for the case) contains `text`.
    pub fn headline(mut self, text: &'static str) -> Expect {
        self.headline = Some(text);
        self
    }

    /// The run ends faster than `limit` on a calm machine; on a busy one the limit stretches
    /// as the harness stretches its waits ([`crate::load::stretch`]) now or as the run
    /// stretched them at their most ([`crate::case_report::Report::stretched`]), calm or loaded.
    pub fn within(mut self, limit: Duration) -> Expect {
        self.within = Some(Bound::Stretched(limit));
        self
    }

    /// The run ends faster than `limit`, not stretched; a loaded run does not check it (only
    /// what it concludes).
    pub fn within_calm(mut self, limit: Duration) -> Expect {
        self.within = Some(Bound::Calm(limit));
        self
    }

    /// The test process's peak resident memory stays under `mib` MiB: what a target floods
    /// is not kept. The bound is on the whole process, all its runs together; a table plays
    /// such a row in a test process of its own.
    pub fn small(mut self, mib: u64) -> Expect {
        self.small = Some(mib);
        self
    }

    /// The report itself is bounded: the transcript within its budget with a note that it was
    /// cut, few findings kept, and an explanation of a few lines, written quickly.
    pub fn bounded(mut self) -> Expect {
        self.bounded = true;
        self
    }

    /// Every process the target reported starting ([`Run::pids`]) is gone after the run.
    pub fn reaped(mut self) -> Expect {
        self.reaped = true;
        self
    }

    /// The same expectation for a run on a shared target, whose processes outlive the run
    /// (the pool ends them): what the run concludes, not that they are gone after it.
    pub fn on_shared_target(mut self) -> Expect {
        self.reaped = false;
        self
    }

    /// The run speaks `version` (instead of the test's default).
    pub fn at(mut self, version: ProtocolVersion) -> Expect {
        self.version = Some(version);
        self
    }

    /// The run waits `timeout` for a reply (instead of the test's default).
    pub fn reply_timeout(mut self, timeout: Duration) -> Expect {
        self.reply_timeout = Some(timeout);
        self
    }

    /// The run allows the target `timeout` to start (instead of the test's default).
    pub fn startup_timeout(mut self, timeout: Duration) -> Expect {
        self.startup_timeout = Some(timeout);
        self
    }

    /// The run may take `timeout` in all (instead of the test's default): for a row whose
    /// verdict is the limit itself, the shortest that still shows it.
    pub fn case_timeout(mut self, timeout: Duration) -> Expect {
        self.case_timeout = Some(timeout);
        self
    }

    /// Whether the row bounds the test process's peak memory ([`Expect::small`]): a bound on
    /// the whole process, so a table plays such a row in a test process of its own.
    pub fn watches_memory(&self) -> bool {
        self.small.is_some()
    }

    /// Whether a run that passes may meet this row (no other outcome is asked for).
    pub fn may_pass(&self) -> bool {
        matches!(self.outcome, None | Some(Outcome::Pass))
    }

    /// The protocol version the row asks for, if any.
    pub fn version(&self) -> Option<ProtocolVersion> {
        self.version
    }

    /// `base` (the test's defaults) with what the row asks for: version and timeouts.
    pub fn options(&self, base: Options) -> Options {
        Options {
            protocol_version: self.version.unwrap_or(base.protocol_version),
            reply_timeout: self.reply_timeout.unwrap_or(base.reply_timeout),
            startup_timeout: self.startup_timeout.unwrap_or(base.startup_timeout),
            case_timeout: self.case_timeout.unwrap_or(base.case_timeout),
            ..base
        }
    }

    /// What the same run with every core busy must show: the same verdict, without the
    /// bounds that hold on a calm machine only.
    pub fn loaded(&self) -> Expect {
        Expect {
            within: self.within.filter(|b| matches!(b, Bound::Stretched(_))),
            ..self.clone()
        }
    }
}

/// One line with everything the row asks for, in a fixed order, to compare tables by.
impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outcome = match self.outcome {
            Some(outcome) => outcome.to_string(),
            None if self.finding.is_some() && !self.clean => "not-Pass".into(),
            None => "any".into(),
        };
        let mut parts = vec![format!("outcome={outcome}")];
        if let Some(w) = &self.finding {
            parts.push(format!("finding={}/{:?}", w.on_shown(), w.severity));
            if !w.saying.is_empty() {
                parts.push(format!("saying=`{}`", w.saying));
            }
        }
        if !self.absent.is_empty() {
            let absent: Vec<String> = self.absent.iter().map(On::to_string).collect();
            parts.push(format!("without={}", absent.join(",")));
        }
        if let Some(text) = self.never_saying {
            parts.push(format!("never-saying=`{text}`"));
        }
        if self.clean {
            parts.push("clean".into());
        }
        if let Some(text) = self.headline {
            parts.push(format!("headline=`{text}`"));
        }
        match self.within {
            Some(Bound::Stretched(limit)) => parts.push(format!("within={limit:?} stretched")),
            Some(Bound::Calm(limit)) => parts.push(format!("within={limit:?} calm")),
            None => {}
        }
        if let Some(mib) = self.small {
            parts.push(format!("small<{mib}MiB"));
        }
        if self.bounded {
            parts.push("bounded".into());
        }
        if self.reaped {
            parts.push("reaped".into());
        }
        if let Some(version) = self.version {
            parts.push(format!("at={version}"));
        }
        if let Some(timeout) = self.reply_timeout {
            parts.push(format!("reply={timeout:?}"));
        }
        if let Some(timeout) = self.startup_timeout {
            parts.push(format!("startup={timeout:?}"));
        }
        if let Some(timeout) = self.case_timeout {
            parts.push(format!("limit={timeout:?}"));
        }
        if self.untimed {
            parts.push("or-untimed".into());
        }
        f.write_str(&parts.join(" "))
    }
}
