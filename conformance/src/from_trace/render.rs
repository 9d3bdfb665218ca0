//! A [`Draft`] as case text, checked by the case parser before anyone reads it: a drafted case
//! that the harness would refuse is the drafter's bug, reported as such. Where the recorded
//! client sent something its session does not allow (a cancel of a request it never sent, a
//! line that is not JSON), the case replays it as recorded and says so in `@deviation`, as the
//! format asks.

use super::{Draft, DraftError, Line};
use crate::case::{self, Case};
use std::path::Path;

/// Comment lines wrap at this width.
const WIDTH: usize = 92;

/// The case text of `draft`, to be written at `path` (its id for the parser is the file's
/// stem). Fails only when the parser refuses the draft, which is a bug of the drafter.
pub fn render(draft: &Draft, path: &Path) -> Result<String, DraftError> {
    let shown = path.display().to_string();
    let id = path
        .file_stem()
        .map_or_else(|| "drafted".into(), |s| s.to_string_lossy().into_owned());
    let plain = text(draft, None);
    let first = match case::parse(&id, &shown, &plain) {
        Ok(_) => return Ok(plain),
        Err(e) => e,
    };
    // Refused: perhaps for a deviation the recorded client made. Ask the parser which.
    let probe = text(draft, Some("(probe)"));
    let deviation = case::parse(&id, &shown, &probe)
        .ok()
        .and_then(|case: Case| case::deviations(&case, &case.steps).into_iter().next());
    let Some((_, what)) = deviation else {
        return Err(bug(path, &first));
    };
    let said = format!("the recorded client sent {what}, and the case replays it as recorded");
    let deviating = text(draft, Some(&said));
    case::parse(&id, &shown, &deviating).map_err(|e| bug(path, &e))?;
    Ok(deviating)
}

fn bug(path: &Path, e: &case::CaseError) -> DraftError {
    DraftError {
        path: path.to_path_buf(),
        line: 0,
        what: format!(
            "the drafted case does not parse ({e}); this is a bug of `case from-trace`: please report it with the trace"
        ),
    }
}

fn text(draft: &Draft, deviation: Option<&str>) -> String {
    let mut out = String::new();
    comment(&mut out, &draft.intent);
    comment(&mut out, &draft.recorded);
    out.push_str("@role server\n");
    let ids: Vec<&str> = draft.requirements.iter().map(|r| r.as_str()).collect();
    out.push_str(&format!("@requirement {}\n", ids.join(" ")));
    out.push_str("@level should\n");
    // The era, not the version: a run picks the newest version of it the server speaks (the
    // recorded one is in the intent, for `--protocol-version`).
    if let Some(version) = draft.version {
        let era = if version.is_stateless() {
            "stateless"
        } else {
            "handshake"
        };
        out.push_str(&format!("@versions {era}\n"));
    }
    if draft.stdio_only {
        out.push_str("@transports stdio\n");
    }
    out.push_str(
        "@fresh it replays a recorded session: its ids and the server's state are the recording's\n",
    );
    if let Some(deviation) = deviation {
        out.push_str(&format!("@deviation {deviation}\n"));
    }
    out.push('\n');
    for line in &draft.lines {
        match line {
            Line::Send(text) => out.push_str(&format!("> {text}\n")),
            Line::Expect(text) => out.push_str(&format!("< {text}\n")),
            Line::Control(text) => out.push_str(&format!("! {text}\n")),
            Line::Comment(text) => comment(&mut out, text),
        }
    }
    out
}

/// `text` as `#` lines of at most [`WIDTH`] characters (a longer word stays whole).
fn comment(out: &mut String, text: &str) {
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() > 1 && line.len() + 1 + word.len() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}
