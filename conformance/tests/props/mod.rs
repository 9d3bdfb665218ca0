//! The properties of the harness's untrusted-input parsers, written once and driven by two
//! engines: the bounded proptest run in `tests/fuzz.rs` (part of `cargo test`) and the
//! libFuzzer targets in `fuzz/` (long runs, nightly features). Case files and the messages a
//! target sends are both untrusted: a case can come from anyone's pull request, a message from
//! any implementation. Each `check_*` function panics with a message naming the broken property.

// Each engine uses its own subset, and declares this module `pub mod props` so the rest is no
// dead code.

use conformance::case::{self, Case, Step, StepKind};
use conformance::pattern::{
    canonical, fill_pattern, first_difference, json_equal, matches, normalize, substitute, Captures,
};
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------------
// Case files
// ---------------------------------------------------------------------------------------------

fn visit<'a>(steps: &'a [Step], out: &mut Vec<&'a Step>) {
    for step in steps {
        out.push(step);
        if let StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. } = &step.kind {
            visit(steps, out);
        }
    }
}

/// A line's text without its line ending, as `rewrite_lines` counts lines.
fn raw_lines(source: &str) -> Vec<&str> {
    source
        .split_inclusive('\n')
        .map(|l| {
            l.strip_suffix("\r\n")
                .or_else(|| l.strip_suffix('\n'))
                .unwrap_or(l)
        })
        .collect()
}

fn check_parsed(source: &str, case: &Case) {
    let lines: Vec<&str> = source.lines().collect();
    assert_eq!(case.source, source, "the case keeps its text");
    assert!(!case.intent.is_empty() && !case.requirements.is_empty());
    let mut steps = Vec::new();
    visit(&case.steps, &mut steps);
    let mut previous = 0;
    for step in steps {
        assert!(
            step.line > previous && step.line <= lines.len(),
            "step line {} out of order or outside the file",
            step.line
        );
        previous = step.line;
        let text = lines[step.line - 1].trim_end();
        let (sent, expected) = match case.role {
            case::Role::Server => ("> ", "< "),
            case::Role::Client => ("< ", "> "),
        };
        match &step.kind {
            StepKind::Send(body) => assert_eq!(text, format!("{sent}{body}")),
            StepKind::Expect(body) => {
                assert_eq!(text, format!("{expected}{body}"));
                let probe = body.replace("{$", "{");
                assert!(serde_json::from_str::<Value>(&probe).is_ok(), "{body}");
            }
            _ => assert!(text.starts_with("! "), "control step from {text:?}"),
        }
    }
}

/// `case::parse` never panics; an error names the file and a line inside it; a parsed case's
/// steps point at the lines they came from, in order; `rewrite_lines` with nothing to replace
/// is the identity, and replacing line `n` changes that line only.
pub fn check_case(source: &str, replace_at: usize, replacement: &str) {
    let count = source.lines().count();
    for (id, path) in [
        ("server/fuzz", "cases/server/fuzz.mcpt"),
        ("client/fuzz", "c.mcpt"),
    ] {
        match case::parse(id, path, source) {
            Ok(case) => check_parsed(source, &case),
            Err(e) => {
                assert_eq!(e.path, path);
                assert!(!e.message.is_empty(), "an error without a message");
                // Line 1 of an empty file is where the missing intent belongs.
                assert!(
                    e.line <= count.max(1),
                    "error at line {} of a {count}-line file: {e}",
                    e.line
                );
                assert!(e.to_string().starts_with(path));
            }
        }
    }

    assert_eq!(
        case::rewrite_lines(source, &[]),
        source,
        "rewrite with nothing"
    );
    let before = raw_lines(source);
    if before.is_empty() {
        return;
    }
    let n = replace_at % before.len() + 1;
    let same = case::rewrite_lines(source, &[(n, before[n - 1].to_string())]);
    assert_eq!(same, source, "rewriting line {n} with its own text");
    let replacement: String = replacement.chars().filter(|c| *c != '\n').collect();
    let rewritten = case::rewrite_lines(source, &[(n, replacement.clone())]);
    let mut after = raw_lines(&rewritten);
    if after.len() + 1 == before.len() && n == before.len() && replacement.is_empty() {
        after.push(""); // an emptied last line without a newline is no line at all
    }
    assert_eq!(after.len(), before.len(), "line count changed");
    for (i, (a, b)) in before.iter().zip(&after).enumerate() {
        if i + 1 == n {
            // A replacement that ends in `\r` on a `\n` line reads back as a `\r\n` line end.
            assert!(
                *b == replacement || replacement.strip_suffix('\r') == Some(b),
                "line {n} is {b:?}, not {replacement:?}"
            );
        } else {
            assert_eq!(a, b, "line {} changed", i + 1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Patterns
// ---------------------------------------------------------------------------------------------

/// `json_equal` is an equivalence (reflexive, symmetric, transitive), agrees with `canonical`
/// where the text is the same, and `canonical` text reads back as an equal value.
pub fn check_json_equal(a: &Value, b: &Value, c: &Value) {
    for v in [a, b, c] {
        assert!(json_equal(v, v), "not reflexive: {v}");
        let text = canonical(v);
        let back: Value = serde_json::from_str(&text).expect("canonical text is JSON");
        assert!(json_equal(v, &back), "canonical {text} reads back unequal");
    }
    for (x, y) in [(a, b), (b, c), (a, c)] {
        assert_eq!(json_equal(x, y), json_equal(y, x), "not symmetric: {x} {y}");
        if canonical(x) == canonical(y) {
            assert!(json_equal(x, y), "same canonical text, unequal: {x} {y}");
        }
    }
    if json_equal(a, b) && json_equal(b, c) {
        assert!(
            json_equal(a, c),
            "not transitive: {a} = {b} = {c} but {a} != {c}"
        );
    }
}

/// For any pattern and message: `matches` and `first_difference` agree; a failed match leaves
/// the captures as they were and a successful one only adds to them; a difference points at
/// the place in the message it reports; `normalize` of a matching message is the pattern
/// itself (so blessing a passing case changes nothing).
pub fn check_pattern(pattern: &Value, actual: &Value, captures: &Captures) {
    let mut after = captures.clone();
    let ok = matches(pattern, actual, &mut after);
    let diff = first_difference(pattern, actual, captures);
    assert_eq!(ok, diff.is_none(), "matches says {ok}, difference {diff:?}");
    let shown = normalize(pattern, actual, &after);
    match diff {
        None => {
            for (name, value) in captures {
                assert_eq!(after.get(name), Some(value), "capture ${name} changed");
            }
            assert_eq!(
                canonical(&shown),
                canonical(pattern),
                "normalizing a match of {pattern} against {actual}"
            );
            // Matching again with the captures made is still a match.
            assert!(matches(pattern, actual, &mut after.clone()), "rematch");
        }
        Some(d) => {
            assert_eq!(&after, captures, "failed match kept its captures");
            let at = actual.pointer(&d.pointer);
            if d.actual == "absent" {
                assert!(at.is_none(), "{d}: but the key is there");
                let parent = &d.pointer[..d.pointer.rfind('/').expect("a member pointer")];
                assert!(actual.pointer(parent).is_some_and(Value::is_object), "{d}");
            } else if d.expected.starts_with("an array of ") {
                assert!(at.is_some_and(Value::is_array), "{d}");
            } else {
                let at = at.unwrap_or_else(|| panic!("{d}: pointer leads nowhere in {actual}"));
                assert_eq!(canonical(at), d.actual, "{d}");
            }
        }
    }
}

/// A source of choices: bytes from the fuzzer or from proptest, then zeros.
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    /// The next byte, or 0 once they are used up.
    fn next(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
}

/// Is this string read as a token by the matcher? (Such strings cannot be matched literally.)
fn looks_like_token(s: &str) -> bool {
    let Some(inner) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else {
        return false;
    };
    matches!(
        inner,
        "..." | "absent" | "string" | "number" | "integer" | "bool" | "object" | "array"
    ) || inner
        .strip_prefix('$')
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_'))
}

/// A pattern that `value` must match: parts become wildcards, type tokens or captures (a name
/// reused only for equal values), object keys are dropped or declared absent, integers are
/// written as floats.
fn generalize(value: &Value, choices: &mut Choices, captures: &mut Captures) -> Value {
    let choice = choices.next();
    match choice % 8 {
        0 => return Value::from("{...}"),
        1 => {
            let ty = match value {
                Value::String(_) => "string",
                Value::Number(n) if (n.is_i64() || n.is_u64()) && choice & 0x80 != 0 => "integer",
                Value::Number(_) => "number",
                Value::Bool(_) => "bool",
                Value::Object(_) => "object",
                Value::Array(_) => "array",
                Value::Null => "...",
            };
            return Value::from(format!("{{{ty}}}"));
        }
        2 => {
            let name = format!("c{}", choice >> 5);
            match captures.get(&name) {
                Some(bound) if !json_equal(bound, value) => {}
                Some(_) => return Value::from(format!("{{${name}}}")),
                None => {
                    captures.insert(name.clone(), value.clone());
                    return Value::from(format!("{{${name}}}"));
                }
            }
        }
        _ => {}
    }
    match value {
        Value::Object(members) => {
            let mut out = Map::new();
            for (key, member) in members {
                if choices.next() % 4 != 0 {
                    out.insert(key.clone(), generalize(member, choices, captures));
                }
            }
            let extra = choices.next();
            if extra % 3 == 0 {
                out.insert("...".into(), Value::from("{...}"));
            }
            let absent = format!("zz{extra}");
            if extra % 5 == 0 && !members.contains_key(&absent) {
                out.insert(absent, Value::from("{absent}"));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| generalize(item, choices, captures))
                .collect(),
        ),
        Value::Number(n) if choice & 0x40 != 0 => match n.as_i64() {
            Some(i) if i.unsigned_abs() < 1 << 53 => Value::from(i as f64),
            _ => value.clone(),
        },
        Value::String(s) if looks_like_token(s) => Value::from("{string}"),
        _ => value.clone(),
    }
}

/// A pattern made from a message matches that message, with or without an earlier capture of
/// the same names bound to the values it stands for.
pub fn check_generalized(value: &Value, choices: &[u8]) {
    let mut bound = Captures::new();
    let pattern = generalize(value, &mut Choices(choices), &mut bound);
    let mut fresh = Captures::new();
    assert!(
        matches(&pattern, value, &mut fresh),
        "{pattern} does not match {value}: {:?}",
        first_difference(&pattern, value, &Captures::new())
    );
    for (name, v) in &fresh {
        assert!(json_equal(v, &bound[name]), "captured ${name} = {v}");
    }
    assert!(
        matches(&pattern, value, &mut bound),
        "with the captures bound"
    );
    check_pattern(&pattern, value, &Captures::new());
}

/// A reference in a line the harness sends or expects.
#[derive(Debug, Clone)]
pub enum Template {
    /// The JSON string `"{$name}"`: the captured value itself, type kept.
    Whole(String),
    /// `"pre{$name}post"`: the value's text inside a string.
    Inside(String, String, String),
}

/// The text a reference inside a string stands for.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `substitute` fills every reference of a JSON line: the result is JSON, a whole-string
/// reference became the value and a reference inside a string became its text; an unbound
/// reference is reported by name. `fill_pattern` fills the bound references inside strings
/// and leaves whole-string ones (tokens for the matcher) and unbound ones as written.
pub fn check_substitute(templates: &[Template], captures: &Captures, unrelated: &Value) {
    // `"{$name}"` with nothing around it is a whole-string reference, however it was made.
    let templates: Vec<Template> = templates
        .iter()
        .map(|t| match t {
            Template::Inside(pre, name, post) if pre.is_empty() && post.is_empty() => {
                Template::Whole(name.clone())
            }
            other => other.clone(),
        })
        .collect();
    let templates = &templates[..];
    let render = |t: &Template| match t {
        Template::Whole(name) => format!("{{${name}}}"),
        Template::Inside(pre, name, post) => format!("{pre}{{${name}}}{post}"),
    };
    let line = Value::Array(
        std::iter::once(unrelated.clone())
            .chain(templates.iter().map(|t| Value::from(render(t))))
            .collect(),
    )
    .to_string();
    let unbound = templates.iter().find_map(|t| {
        let name = match t {
            Template::Whole(n) | Template::Inside(_, n, _) => n,
        };
        (!captures.contains_key(name)).then(|| name.clone())
    });
    match (substitute(&line, captures), &unbound) {
        (Err(name), Some(first)) => assert_eq!(&name, first, "reported unbound name"),
        (Err(name), None) => panic!("{line}: ${name} reported unbound"),
        (Ok(out), Some(first)) => panic!("{line}: ${first} unbound, yet filled as {out}"),
        (Ok(out), None) => {
            let got: Value = serde_json::from_str(&out)
                .unwrap_or_else(|e| panic!("{line} filled to {out}, not JSON: {e}"));
            let want = Value::Array(
                std::iter::once(unrelated.clone())
                    .chain(templates.iter().map(|t| match t {
                        Template::Whole(name) => captures[name].clone(),
                        Template::Inside(pre, name, post) => {
                            Value::from(format!("{pre}{}{post}", text_of(&captures[name])))
                        }
                    }))
                    .collect(),
            );
            assert!(
                json_equal(&got, &want),
                "{line} filled to {out}, want {want}"
            );
        }
    }
    // `fill_pattern` fills what it can inside strings and leaves the rest as written.
    let got = fill_pattern(&line, captures)
        .unwrap_or_else(|e| panic!("fill_pattern({line}) is not JSON: {e}"));
    let want = Value::Array(
        std::iter::once(unrelated.clone())
            .chain(templates.iter().map(|t| match t {
                Template::Inside(pre, name, post) if captures.contains_key(name) => {
                    Value::from(format!("{pre}{}{post}", text_of(&captures[name])))
                }
                _ => Value::from(render(t)),
            }))
            .collect(),
    );
    assert!(
        json_equal(&got, &want),
        "fill_pattern({line}) = {got}, want {want}"
    );
}
