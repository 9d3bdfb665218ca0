//! One `!` line at a time: the control lines and the durations, ids and spans they name,
//! each understood or an error at `path:line`.

use super::super::*;

/// The longest duration a case or an option may name: a case that waits longer tests nothing
/// a person would wait for.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);
/// The most rounds a `! repeat` or `! sweep` may have.
pub const MAX_ROUNDS: usize = 10_000;

/// Parses a duration such as `250ms`, `2s` or `1.5s`, of at most [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Option<Duration> {
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else {
        return None;
    };
    let value: f64 = number.parse().ok()?;
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(value * scale)
        .ok()
        .filter(|d| *d <= MAX_DURATION)
}

pub(super) fn parse_span(text: &str) -> Option<Span> {
    if let Some(name) = text.strip_prefix("{$").and_then(|t| t.strip_suffix('}')) {
        return Some(Span::Var(name.to_string()));
    }
    parse_duration(text).map(Span::Fixed)
}

pub(super) fn parse_ms(text: &str) -> Option<u64> {
    parse_duration(text).map(|d| d.as_millis() as u64)
}

pub(super) struct Parser<'a> {
    pub(super) path: &'a str,
}

impl Parser<'_> {
    pub(super) fn error(&self, line: usize, message: impl Into<String>) -> CaseError {
        CaseError {
            path: self.path.to_string(),
            line,
            message: message.into(),
        }
    }

    /// Parses one `!` line. Blocks are returned open and closed by the caller.
    pub(super) fn control(&self, line: usize, text: &str) -> Result<Control, CaseError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            ["repeat", n] => self.repeat(line, n),
            ["sweep", var, range, "step", by] => self.sweep(line, var, range, by),
            ["poll", n, "every", every] => self.poll(line, n, every),
            ["end"] => Ok(Control::End),
            _ => self.step(line, text, &words).map(Control::Step),
        }
    }

    /// A `!` line that is one step (not a block).
    fn step(&self, line: usize, text: &str, words: &[&str]) -> Result<StepKind, CaseError> {
        Ok(match words {
            ["barrier"] => StepKind::Barrier,
            ["alive", ..] => {
                // The id may be a string with spaces: the rest of the line is the id.
                let id = text.trim_start().strip_prefix("alive").unwrap_or("").trim();
                self.check_id(line, id)?;
                StepKind::Alive(id.to_string())
            }
            ["after", rest @ ..] if rest.len() == 1 => {
                StepKind::After(self.span(line, rest.first(), "after")?)
            }
            ["wait", rest @ ..] if rest.len() == 1 => {
                StepKind::Wait(self.span(line, rest.first(), "wait")?)
            }
            ["silent", id, window] => {
                self.check_id(line, id)?;
                StepKind::Silent {
                    id: id.to_string(),
                    window: self.span(line, Some(window), "silent ID")?,
                }
            }
            ["witness", "not", ids @ ..] if !ids.is_empty() => {
                StepKind::Unwitnessed(self.ids(line, ids)?)
            }
            ["witness", ids @ ..] if !ids.is_empty() => StepKind::Witness(self.ids(line, ids)?),
            ["close-stdin"] => StepKind::CloseStdin,
            ["header", ..] => self.header(line, text)?,
            ["status", codes] => self.status(line, codes)?,
            ["cancelled", id] => {
                self.check_id(line, id)?;
                StepKind::Cancelled(id.to_string())
            }
            ["disconnect", id] => {
                self.check_id(line, id)?;
                StepKind::Disconnect(id.to_string())
            }
            ["session", name]
                if name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
            {
                StepKind::Session(name.to_string())
            }
            ["delete-session"] => StepKind::DeleteSession,
            ["listen"] => StepKind::Listen,
            ["server-exit"] => StepKind::ServerExit,
            ["expire-session"] => StepKind::ExpireSession,
            ["cancel", id, ..] => self.cancel(line, text, id)?,
            ["arrives", range] => self.arrives(line, range)?,
            ["exit", within] => StepKind::Exit(self.span(line, Some(within), "exit")?),
            _ => {
                return Err(self.error(
                    line,
                    format!(
                        "unknown control `! {text}`; known: barrier, cancel, after, wait, silent, \
                         witness, arrives, close-stdin, exit, repeat, sweep, poll, end; in client \
                         cases also cancelled, server-exit; over HTTP header, status, disconnect, session, \
                         delete-session, listen, and in client cases expire-session (see \
                         cases/README.md)"
                    ),
                ))
            }
        })
    }

    /// The span a control's word names (a duration, or `{$var}`).
    fn span(&self, line: usize, word: Option<&&str>, what: &str) -> Result<Span, CaseError> {
        word.and_then(|w| parse_span(w)).ok_or_else(|| {
            self.error(
                line,
                format!("`! {what}` needs a duration such as `200ms` or `{{$d}}` (at most 1 hour)"),
            )
        })
    }

    /// Request ids, each checked.
    fn ids(&self, line: usize, ids: &[&str]) -> Result<Vec<String>, CaseError> {
        for id in ids {
            self.check_id(line, id)?;
        }
        Ok(ids.iter().map(|s| s.to_string()).collect())
    }

    /// `! header NAME: VALUE` (an empty value removes the header).
    fn header(&self, line: usize, text: &str) -> Result<StepKind, CaseError> {
        let rest = text
            .trim_start()
            .strip_prefix("header")
            .unwrap_or("")
            .trim();
        let (name, value) = rest
            .split_once(':')
            .filter(|(name, _)| !name.trim().is_empty() && !name.contains(char::is_whitespace))
            .ok_or_else(|| {
                self.error(
                    line,
                    "write `! header NAME: VALUE` (an empty VALUE removes the header)",
                )
            })?;
        Ok(StepKind::Header {
            name: name.trim().to_string(),
            value: value.trim().to_string(),
        })
    }

    /// `! status 202` or `! status 202|4xx`.
    fn status(&self, line: usize, codes: &str) -> Result<StepKind, CaseError> {
        let codes: Vec<String> = codes.split('|').map(str::to_string).collect();
        let valid = |c: &String| {
            c.len() == 3
                && c.as_bytes()[0].is_ascii_digit()
                && (c[1..].bytes().all(|b| b.is_ascii_digit()) || &c[1..] == "xx")
        };
        if !codes.iter().all(valid) {
            return Err(self.error(line, "write `! status 202` or `! status 202|4xx`"));
        }
        Ok(StepKind::Status(codes))
    }

    /// `! cancel ID [REASON]`: the rest of the line after the id is the reason.
    fn cancel(&self, line: usize, text: &str, id: &str) -> Result<StepKind, CaseError> {
        self.check_id(line, id)?;
        let reason = text
            .trim_start()
            .strip_prefix("cancel")
            .map(str::trim_start)
            .and_then(|rest| rest.strip_prefix(id))
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_string);
        Ok(StepKind::Cancel {
            id: id.to_string(),
            reason,
        })
    }

    /// `! arrives 50ms..550ms`.
    fn arrives(&self, line: usize, range: &str) -> Result<StepKind, CaseError> {
        let bad = || self.error(line, "write `! arrives 50ms..550ms`");
        let (from, to) = range.split_once("..").ok_or_else(bad)?;
        let from = parse_duration(from).ok_or_else(bad)?;
        let to = parse_duration(to).ok_or_else(bad)?;
        if from > to {
            return Err(bad());
        }
        Ok(StepKind::Arrives(Arrival { from, to, line }))
    }

    /// `! repeat N`, opened.
    fn repeat(&self, line: usize, n: &str) -> Result<Control, CaseError> {
        let count = n
            .parse()
            .ok()
            .filter(|c| *c > 0 && *c <= MAX_ROUNDS)
            .ok_or_else(|| {
                self.error(
                    line,
                    format!("`! repeat` needs a count from 1 to {MAX_ROUNDS}"),
                )
            })?;
        Ok(Control::Open(StepKind::Repeat {
            count,
            steps: vec![],
        }))
    }

    /// `! sweep VAR FROM..TO step BY`, opened.
    fn sweep(&self, line: usize, var: &str, range: &str, by: &str) -> Result<Control, CaseError> {
        let bad = || self.error(line, "write a sweep as `! sweep d 0ms..80ms step 10ms`");
        let (from, to) = range.split_once("..").ok_or_else(bad)?;
        let (from, to, by) = (
            parse_ms(from).ok_or_else(bad)?,
            parse_ms(to).ok_or_else(bad)?,
            parse_ms(by).filter(|b| *b > 0).ok_or_else(bad)?,
        );
        if from > to || !var.chars().all(|c| c.is_alphanumeric() || c == '_') || var == "i" {
            return Err(bad());
        }
        if (to - from) / by >= MAX_ROUNDS as u64 {
            return Err(self.error(
                line,
                format!("this sweep has more than {MAX_ROUNDS} rounds; take larger steps or a shorter range"),
            ));
        }
        let values = (from..=to).step_by(by as usize).collect();
        Ok(Control::Open(StepKind::Sweep {
            var: var.to_string(),
            values,
            steps: vec![],
        }))
    }

    /// `! poll N every DURATION`, opened.
    fn poll(&self, line: usize, n: &str, every: &str) -> Result<Control, CaseError> {
        let bad = || {
            self.error(
                line,
                format!("write a poll as `! poll 50 every 100ms` (1 to {MAX_ROUNDS} rounds, a duration between them)"),
            )
        };
        let rounds = n
            .parse()
            .ok()
            .filter(|c| *c > 0 && *c <= MAX_ROUNDS)
            .ok_or_else(bad)?;
        let every = parse_duration(every).ok_or_else(bad)?;
        Ok(Control::Open(StepKind::Poll(Poll {
            rounds,
            every,
            steps: vec![],
        })))
    }

    /// A request id in a control line must be JSON (after loop variables are filled in).
    pub(super) fn check_id(&self, line: usize, id: &str) -> Result<(), CaseError> {
        let probe = id.replace("{$", "").replace('}', "");
        serde_json::from_str::<Value>(&probe)
            .ok()
            .filter(|v| v.is_string() || v.is_number())
            .map(|_| ())
            .ok_or_else(|| {
                self.error(
                    line,
                    format!("`{id}` is not a request id; write a JSON integer or string"),
                )
            })
    }
}

pub(super) enum Control {
    Step(StepKind),
    Open(StepKind),
    End,
}
