//! Property tests for the harness's untrusted-input parsers: the case parser and the pattern
//! matcher. `cargo test` runs a bounded number of cases; a long run sets `PROPTEST_CASES` (see
//! README, "Fuzzing"). The properties live in `props/`, shared with the libFuzzer targets in
//! `fuzz/`.

pub mod props;

use conformance::case;
use conformance::pattern::{self, Captures};
use props::{
    check_case, check_generalized, check_json_equal, check_pattern, check_substitute, Template,
};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use serde_json::{json, Value};

/// The number of cases: `PROPTEST_CASES` when set (for long runs), else `default`.
fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        // One generated message in ten holds a reference and is skipped where it must not.
        max_local_rejects: cases.max(65_536),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

/// Numbers that sit on the edges of "compare by value": the same number as integer and float,
/// integers just past what a float holds exactly, the ends of `i64` and `u64`.
fn edge_number() -> impl Strategy<Value = Value> {
    let exact = prop_oneof![
        Just(0i64),
        Just(1),
        Just(-1),
        Just((1 << 53) - 1),
        Just(1 << 53),
        Just((1 << 53) + 1),
        Just(i64::MAX),
        Just(i64::MIN),
        -3i64..4,
    ];
    prop_oneof![
        exact.clone().prop_map(Value::from),
        exact.prop_map(|i| Value::from(i as f64)),
        prop_oneof![Just(u64::MAX), Just((1 << 63) + 1), Just(1 << 63)].prop_map(Value::from),
        prop_oneof![
            Just(9_223_372_036_854_775_808_f64),
            Just(1.8446744073709552e19),
            Just(0.5)
        ]
        .prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        edge_number(),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(Value::from),
        prop_oneof![
            Just("{...}"),
            Just("{absent}"),
            Just("{string}"),
            Just("{integer}"),
            Just("{number}"),
            Just("{object}"),
            Just("{$a}"),
            Just("{$b}"),
            Just("{$}"),
        ]
        .prop_map(Value::from),
        "[a-c~/\\\\\"{}$.]{0,4}".prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map("[a-c~/]{0,2}|\\.\\.\\.", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn captures() -> impl Strategy<Value = Captures> {
    btree_map("[ab]|c[0-7]", json_value(), 0..3)
}

fn duration_word() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..1000, prop_oneof![Just("ms"), Just("s")]).prop_map(|(n, u)| format!("{n}{u}")),
        prop_oneof![
            Just("1.5s"),
            Just("-1s"),
            Just("1e2ms"),
            // Past what a `Duration` holds, and sweeps of millions of rounds: once bugs
            // (`known_case_bugs_*` below), now errors that name the line.
            Just("1e20s"),
            Just("1e300ms"),
            Just("100000s"),
            Just("{$d}"),
            Just("{$}"),
            Just("NaNs"),
            Just("infs"),
            Just("s"),
            Just("ms"),
            Just("soon"),
            Just(""),
        ]
        .prop_map(String::from),
    ]
}

fn case_line() -> impl Strategy<Value = String> {
    let d = duration_word;
    let json = || json_value().prop_map(|v| v.to_string());
    prop_oneof![
        Just("# intent".to_string()),
        Just(String::new()),
        "@requirement( [A-Z]{3}-[0-9]{2}){0,2}",
        prop_oneof![Just("must"), Just("should"), Just("info"), Just("")]
            .prop_map(|l| format!("@level {l}")),
        prop_oneof![Just("2025-06-18"), Just("2026-07-28"), Just("1999-01-01")]
            .prop_map(|v| format!("@versions {v}")),
        prop_oneof![Just("auto"), Just("none"), Just("x")].prop_map(|h| format!("@handshake {h}")),
        prop_oneof![Just("server"), Just("client"), Just("x")].prop_map(|r| format!("@role {r}")),
        d().prop_map(|d| format!("@timeout {d}")),
        prop_oneof![
            Just(r#"[{"connect":true},{"call":"work"}]"#.to_string()),
            Just(r#"[{"connect":true,"exit":true}]"#.to_string()),
            Just("[]".to_string()),
            json(),
        ]
        .prop_map(|a| format!("@actions {a}")),
        "(result|error|cancelled|timeout|done|\\*)( (result|\\*)){0,2}"
            .prop_map(|o| format!("@outcomes {o}")),
        "@[a-z]{0,6}",
        json().prop_map(|j| format!("> {j}")),
        json().prop_map(|j| format!("< {j}")),
        Just("! barrier".to_string()),
        d().prop_map(|d| format!("! after {d}")),
        d().prop_map(|d| format!("! wait {d}")),
        (
            prop_oneof![Just("1"), Just("\"a\""), Just("{$i}"), Just("x")],
            d()
        )
            .prop_map(|(id, d)| format!("! silent {id} {d}")),
        "! witness( (1|\"b\"|x|\\{\\$i\\})){0,3}",
        (d(), d()).prop_map(|(a, b)| format!("! arrives {a}..{b}")),
        Just("! close-stdin".to_string()),
        d().prop_map(|d| format!("! exit {d}")),
        "! repeat (0|1|3|-1|x|99999999999999999999)",
        (
            prop_oneof![Just("d"), Just("i"), Just("a-b")],
            d(),
            d(),
            d()
        )
            .prop_map(|(v, a, b, s)| format!("! sweep {v} {a}..{b} step {s}")),
        Just("! end".to_string()),
        "! [a-z-]{0,8}",
        ".{0,12}",
    ]
}

/// A case-shaped text: often a valid head, then lines of every kind, mixed line ends.
fn case_source() -> impl Strategy<Value = String> {
    let ending =
        prop_oneof![8 => Just("\n"), 2 => Just("\r\n"), 1 => Just(" \t\n"), 1 => Just("\r")];
    (
        proptest::bool::weighted(0.7),
        vec((case_line(), ending), 0..12),
        proptest::bool::weighted(0.8),
    )
        .prop_map(|(head, lines, last_newline)| {
            let mut text = String::new();
            if head {
                text.push_str("# Intent.\n@requirement CAN-05\n@level must\n");
            }
            let n = lines.len();
            for (i, (line, ending)) in lines.into_iter().enumerate() {
                text.push_str(&line);
                if i + 1 < n || last_newline {
                    text.push_str(ending);
                }
            }
            text
        })
}

/// Names that are captured, or not, and the text around them.
fn template() -> impl Strategy<Value = Template> {
    let name = "[ab]|c[0-3]";
    let text = "[a-z \"\\\\{}]{0,3}";
    prop_oneof![
        name.prop_map(Template::Whole),
        (text, name, text).prop_map(|(a, n, b)| Template::Inside(a, n, b)),
    ]
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn case_parse_never_panics_and_errors_name_a_line(
        source in case_source(),
        at in any::<usize>(),
        replacement in ".{0,6}",
    ) {
        check_case(&source, at, &replacement);
    }

    #[test]
    fn case_parse_survives_arbitrary_text(source in any::<String>(), at in any::<usize>()) {
        check_case(&source, at, "< {}");
    }

    #[test]
    fn json_equal_is_an_equivalence(a in json_value(), b in json_value(), c in json_value()) {
        check_json_equal(&a, &b, &c);
    }

    #[test]
    fn json_equal_on_edge_numbers(a in edge_number(), b in edge_number(), c in edge_number()) {
        check_json_equal(&a, &b, &c);
    }

    #[test]
    fn pattern_functions_agree_on_any_pair(
        pattern in json_value(),
        actual in json_value(),
        captures in captures(),
    ) {
        check_pattern(&pattern, &actual, &captures);
    }

    #[test]
    fn a_pattern_made_from_a_message_matches_it(
        value in json_value(),
        choices in vec(any::<u8>(), 0..64),
    ) {
        check_generalized(&value, &choices);
    }

    #[test]
    fn substitute_fills_every_reference(
        templates in vec(template(), 0..4),
        captures in btree_map("[ab]|c[0-3]", json_value(), 0..5),
        unrelated in json_value().prop_filter("no references", |v| !v.to_string().contains("{$")),
    ) {
        check_substitute(&templates, &captures, &unrelated);
    }

    #[test]
    fn substitute_never_panics(line in ".{0,40}", captures in captures()) {
        let _ = pattern::substitute(&line, &captures);
        let _ = pattern::fill_pattern(&line, &captures);
    }
}

// ---------------------------------------------------------------------------------------------
// Bounds that a generator would rarely reach
// ---------------------------------------------------------------------------------------------

#[test]
fn ten_thousand_levels_are_refused_where_json_is_read() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(pattern::fill_pattern(&deep, &Captures::new()).is_err());
    let head = "# Intent.\n@requirement CAN-05\n@level must\n";
    let e = case::parse("server/x", "x.mcpt", &format!("{head}< {deep}\n")).unwrap_err();
    assert_eq!(e.line, 4, "{e}");
    assert!(e.message.contains("not JSON"), "{e}");
    // `> ` lines are sent byte for byte, so a deep one is a valid step; one no reader takes
    // for JSON is what the case sends on purpose (`@deviation`).
    let deviating = format!("{head}@deviation it sends what no reader takes for JSON\n");
    assert!(case::parse("server/x", "x.mcpt", &format!("{deviating}> {deep}\n")).is_ok());
}

/// serde_json refuses more than 128 levels, so every value the pattern functions see is at
/// most that deep; they recurse, and at the deepest readable value they must work on a small
/// stack (a test thread or a tokio worker has 2 MiB; a quarter of that here, unoptimized).
#[test]
fn the_deepest_readable_value_fits_a_small_stack() {
    let mut depth = 0;
    for n in 1..200 {
        let text = format!("{}1{}", "[".repeat(n), "]".repeat(n));
        if serde_json::from_str::<Value>(&text).is_err() {
            break;
        }
        depth = n;
    }
    assert!(
        (100..200).contains(&depth),
        "serde_json reads {depth} levels"
    );
    let text = format!(
        "{}1{}",
        "[{\"a\":".repeat(depth / 2),
        "}]".repeat(depth / 2)
    );
    let value: Value = serde_json::from_str(&text).unwrap();
    let worker = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || {
            let mut captures = Captures::new();
            let mut pattern = value.clone();
            assert!(pattern::matches(&pattern, &value, &mut captures));
            assert!(pattern::json_equal(&pattern, &value));
            assert_eq!(
                pattern::canonical(&pattern::normalize(&pattern, &value, &captures)),
                pattern::canonical(&pattern)
            );
            *pattern.pointer_mut(&"/0/a".repeat(depth / 2 - 1)).unwrap() = json!(2);
            assert!(pattern::first_difference(&pattern, &value, &captures).is_some());
        })
        .unwrap();
    worker.join().expect("pattern functions on 128 levels");
}

// ---------------------------------------------------------------------------------------------
// Bugs the fuzzing found, now fixed: each reproducer stays as a regression test
// ---------------------------------------------------------------------------------------------

/// `case::parse_duration` checks that a duration is finite and not negative, but not that it
/// fits a `Duration`: `Duration::from_secs_f64` panics ("value is either too big or NaN")
/// for `1e20s`, so one line of a case file crashes the harness instead of naming the line.
#[test]
fn known_case_bugs_huge_duration() {
    let head = "# Intent.\n@requirement CAN-05\n@level must\n";
    for line in ["! wait 1e20s", "@timeout 1e300s", "! arrives 0ms..1e20s"] {
        let result =
            std::panic::catch_unwind(|| case::parse("server/x", "x", &format!("{head}{line}\n")));
        assert!(result.is_ok(), "{line} panics");
    }
}

/// `! sweep` expands its values when the case is parsed: a range of 10^12 ms at 1 ms steps
/// allocates 8 TB (the process dies), and one of 10^8 ms spends seconds and 800 MB.
#[test]
fn known_case_bugs_huge_sweep() {
    let head = "# Intent.\n@requirement CAN-05\n@level must\n";
    let started = std::time::Instant::now();
    let text = format!("{head}! sweep d 0ms..100000s step 1ms\n! barrier\n! end\n");
    let parsed = case::parse("server/x", "x", &text);
    assert!(parsed.is_err(), "a sweep of 10^8 rounds is accepted");
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
}

/// `! repeat N` takes any `usize`, and running the case collects one binding per round
/// (`StepKind::rounds`) before the first: `! repeat 18446744073709551615` panics with a
/// capacity overflow, `! repeat 1000000000` allocates tens of GB.
#[test]
fn known_case_bugs_huge_repeat() {
    let head = "# Intent.\n@requirement CAN-05\n@level must\n";
    let text = format!("{head}! repeat 1000000000\n! barrier\n! end\n");
    assert!(
        case::parse("server/x", "x", &text).is_err(),
        "a repeat of 10^9 rounds is accepted"
    );
}

/// Without its `float_roundtrip` feature serde_json reads some floats one unit in the last
/// place off: `9007199254740991.0` comes back as `9007199254740990.0`. So `canonical` text (a
/// transcript, a blessed case) would not always read back as the value it shows, and a case
/// blessed from a target's float could then differ from that target's next message. The root
/// Cargo.toml turns the feature on, and the properties above compare read-back floats exactly.
#[test]
fn known_float_read_back() {
    for text in [
        "9007199254740991.0",
        "1.2061563047713802e58",
        "9.8238356792877e-310",
    ] {
        let value: Value = serde_json::from_str(text).unwrap();
        let back: Value = serde_json::from_str(&pattern::canonical(&value)).unwrap();
        assert_eq!(
            value.as_f64(),
            text.parse::<f64>().ok(),
            "{text} read as {value}"
        );
        assert!(pattern::json_equal(&value, &back), "{text}");
    }
}
