//! The target file format's tests: loading from a folder with variables, the errors that
//! name the field and say what to do, and every target file of the repository.

use super::*;
use crate::era::ProtocolVersion;
use crate::fixtures::{FixtureNeed, Role};
use serde_json::json;

fn need(word: &str) -> FixtureNeed {
    FixtureNeed::parse(word).unwrap()
}

fn nothing_set(_: &str) -> Option<String> {
    None
}

/// Parses as a file in the current folder, with no variable set.
fn parse_here(value: &Value) -> Result<TargetFile, String> {
    let dir = std::env::current_dir().unwrap();
    parse(
        value,
        &Place {
            dir,
            lookup: &nothing_set,
        },
    )
    .map_err(|e| e.to_string())
}

/// A folder of its own for a test, with `bin/srv` in it.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("conformance-target-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("targets/.install/bin")).unwrap();
    std::fs::write(dir.join("targets/.install/bin/srv"), "").unwrap();
    std::fs::write(dir.join("targets/server.py"), "").unwrap();
    dir
}

#[test]
fn relative_paths_are_the_target_files_and_variables_expand() {
    let root = scratch("relative");
    let file = root.join("targets/t.json");
    std::fs::write(
        &file,
        json!({
            "command": ["${TARGETS:-.install}/bin/srv", "server.py", "--port", "{port}"],
            "cwd": ".",
            "env": {"HOME_DIR": "${HOME_DIR:-none}"},
            "url": "http://127.0.0.1:{port}/${MOUNT:-mcp}"
        })
        .to_string(),
    )
    .unwrap();
    let loaded = load_with(&file, &nothing_set).unwrap();
    let launch = loaded.launch.unwrap();
    let targets = root.join("targets");
    assert_eq!(launch.cwd.as_deref(), Some(targets.as_path()));
    assert_eq!(Path::new(&launch.argv[0]), targets.join(".install/bin/srv"));
    assert!(Path::new(&launch.argv[0]).is_absolute());
    assert_eq!(launch.argv[1..], ["server.py", "--port", "{port}"]);
    assert_eq!(launch.env, [("HOME_DIR".to_string(), "none".to_string())]);
    assert_eq!(loaded.url.as_deref(), Some("http://127.0.0.1:{port}/mcp"));

    // The variable, when set, wins over the default; an absolute value is taken as is.
    let elsewhere = root.join("targets/.install").display().to_string();
    let set = |name: &str| (name == "TARGETS").then(|| elsewhere.clone());
    let launch = load_with(&file, &set).unwrap().launch.unwrap();
    assert_eq!(launch.argv[0], format!("{elsewhere}/bin/srv"));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_missing_installed_path_says_where_and_how_to_install() {
    let root = scratch("missing");
    let file = root.join("targets/t.json");
    std::fs::write(
        &file,
        json!({
            "command": ["node", "${TARGETS:-.install}/app/server.mjs"],
            "cwd": ".",
            "install": "targets/install.sh app"
        })
        .to_string(),
    )
    .unwrap();
    let err = load_with(&file, &nothing_set).unwrap_err().to_string();
    let shown = file.display().to_string();
    assert!(err.starts_with(&format!("{shown}: command[1]: ")), "{err}");
    assert!(
        err.contains(".install/app/server.mjs does not exist"),
        "{err}"
    );
    assert!(
        err.contains("(from `${TARGETS:-.install}/app/server.mjs`; TARGETS is not set)"),
        "{err}"
    );
    assert!(
        err.contains(
            "install it with `targets/install.sh app`, or set TARGETS to where it is installed"
        ),
        "{err}"
    );

    // The program itself, without an `install` hint.
    std::fs::write(
        &file,
        json!({"command": ["bin/nothing-here"], "cwd": ".install"}).to_string(),
    )
    .unwrap();
    let err = load_with(&file, &nothing_set).unwrap_err().to_string();
    assert!(err.contains(": command[0]: "), "{err}");
    assert!(
        err.contains("install what the command needs, or correct the path"),
        "{err}"
    );

    // A cwd that is not there, and a variable that is not set.
    std::fs::write(
        &file,
        json!({"command": ["srv"], "cwd": "${WHERE:-gone}"}).to_string(),
    )
    .unwrap();
    let err = load_with(&file, &nothing_set).unwrap_err().to_string();
    assert!(
        err.contains(": cwd: ") && err.contains("gone is no folder"),
        "{err}"
    );
    std::fs::write(&file, json!({"command": ["srv", "${TOKEN}"]}).to_string()).unwrap();
    let err = load_with(&file, &nothing_set).unwrap_err().to_string();
    assert!(err.contains(": command[1]: `${TOKEN}` is not set"), "{err}");
    std::fs::write(&file, json!({"url": "http://h/${X"}).to_string()).unwrap();
    assert!(load_with(&file, &nothing_set)
        .unwrap_err()
        .to_string()
        .contains(": url: "));
    std::fs::write(
        &file,
        json!({"command": ["srv"], "env": {"A": "${}"}}).to_string(),
    )
    .unwrap();
    assert!(load_with(&file, &nothing_set)
        .unwrap_err()
        .to_string()
        .contains(": env.A: "));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn the_repositorys_target_files_parse() {
    // Every target file in `targets/`, with CONFORMANCE_TARGETS_DIR naming a scratch
    // folder in which each installed path they name is created: their variables, fields
    // and relative paths are right whatever is installed on this machine.
    let targets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../targets");
    let install = scratch("repository").join("install");
    let shown = install.display().to_string();
    let set = |name: &str| (name == "CONFORMANCE_TARGETS_DIR").then(|| shown.clone());
    let mut seen = 0;
    for entry in std::fs::read_dir(&targets).unwrap().flatten() {
        let path = entry.path();
        // The comparison's data (`conformance compare`) lives beside them.
        let not_targets = ["clients.json", "comparison.json"];
        if path.extension().is_none_or(|e| e != "json")
            || path
                .file_name()
                .is_some_and(|n| not_targets.iter().any(|t| n == *t))
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("/tmp/"), "{}: a fixed path", path.display());
        let value: Value = serde_json::from_str(&text).unwrap();
        for field in ["install", "sdk"] {
            assert!(
                value.get(field).is_some(),
                "{}: no `{field}`",
                path.display()
            );
        }
        for element in value["command"].as_array().unwrap() {
            let element = element.as_str().unwrap();
            if is_variable_path(element) {
                let made = PathBuf::from(expand(element, &set).unwrap().0);
                assert!(made.starts_with(&install), "{}: {element}", path.display());
                std::fs::create_dir_all(made.parent().unwrap()).unwrap();
                std::fs::write(&made, "").unwrap();
            }
        }
        let file = load_with(&path, &set).unwrap_or_else(|e| panic!("{e}"));
        let launch = file.launch.unwrap();
        // The scripts the interpreters run are the repository's own, found from `cwd`.
        for arg in launch
            .argv
            .iter()
            .filter(|a| a.ends_with(".py") || a.ends_with(".mjs"))
        {
            let cwd = launch.cwd.as_deref().unwrap_or(Path::new("."));
            assert!(
                cwd.join(arg).exists(),
                "{}: {arg} is not in {}",
                path.display(),
                cwd.display()
            );
        }
        seen += 1;
    }
    assert!(
        seen >= 16,
        "only {seen} target files in {}",
        targets.display()
    );
    std::fs::remove_dir_all(install.parent().unwrap()).unwrap();
}

#[test]
fn parses_a_target_file() {
    let file = parse_here(&json!({
        "command": ["srv", "--stdio"],
        "env": {"A": "1"},
        "fixtures": {"work": {"tool": "long", "arguments": {"d": 3600}}, "ticker": null}
    }))
    .unwrap();
    let launch = file.launch.unwrap();
    assert_eq!(launch.argv, ["srv", "--stdio"]);
    assert_eq!(launch.env, [("A".to_string(), "1".to_string())]);
    assert_eq!(file.url, None);
    let fixtures = file.fixtures.unwrap();
    assert!(fixtures.has(Role::Work));
    assert!(!fixtures.has(Role::Ticker));
    assert!(!fixtures.has(Role::Echo));
}

#[test]
fn lacks_names_absent_roles_and_tools_without_progress() {
    let file = parse_here(&json!({
        "command": ["srv"],
        "fixtures": {"work": {"tool": "long", "progress": false}, "echo": {"tool": "say"}}
    }))
    .unwrap();
    let fixtures = file.fixtures.unwrap();
    assert_eq!(
        fixtures.lacks(&need("echo"), ProtocolVersion::V2025_11_25),
        None
    );
    assert_eq!(
        fixtures.lacks(&need("work"), ProtocolVersion::V2025_11_25),
        None
    );
    assert!(fixtures
        .lacks(&need("work:progress"), ProtocolVersion::V2025_11_25)
        .unwrap()
        .contains("sends no progress"));
    assert!(fixtures
        .lacks(&need("ticker"), ProtocolVersion::V2025_11_25)
        .unwrap()
        .contains("needs a tool that plays `ticker`"));
    assert_eq!(
        fixtures.lacks(&need("cancellations"), ProtocolVersion::V2025_11_25),
        None
    );
    let noted = parse_here(&json!({"command": ["srv"], "fixtures": {
        "echo": {"tool": "say", "note": "checked"},
        "sleep": {"note": "no tool sleeps"}
    }}))
    .unwrap()
    .fixtures
    .unwrap();
    assert!(noted.has(Role::Echo));
    assert!(noted.roles.contains_key(&Role::Sleep) && !noted.has(Role::Sleep));
    assert!(
        parse_here(&json!({"command": ["x"], "fixtures": {"echo": {"tool": "e", "note": 1}}}))
            .unwrap_err()
            .contains("note")
    );
    assert!(parse_here(
        &json!({"command": ["x"], "fixtures": {"work": {"tool": "w", "progress": "no"}}})
    )
    .unwrap_err()
    .contains("progress"));
}

#[test]
fn http_targets_give_a_url() {
    let file = parse_here(&json!({
        "command": ["srv", "--port", "{port}"],
        "url": "http://127.0.0.1:{port}/mcp"
    }))
    .unwrap();
    assert_eq!(file.url.as_deref(), Some("http://127.0.0.1:{port}/mcp"));
    assert_eq!(file.launch.unwrap().argv[2], "{port}");
    let running = parse_here(&json!({"url": "http://127.0.0.1:8000/mcp"})).unwrap();
    assert!(running.launch.is_none());
    assert!(parse_here(&json!({"url": 8000}))
        .unwrap_err()
        .contains("`url`"));
    assert!(parse_here(&json!({}))
        .unwrap_err()
        .contains("needs only `url`"));
}

#[test]
fn errors_name_the_field() {
    assert!(parse_here(&json!({"command": []}))
        .unwrap_err()
        .contains("`command`"));
    assert!(
        parse_here(&json!({"command": ["x"], "fixtures": {"nap": null}}))
            .unwrap_err()
            .contains("nap")
    );
    assert!(parse_here(&json!({"command": ["x"], "colour": 1}))
        .unwrap_err()
        .contains("colour"));
    // `sdk` names the package and its exact version, or it is refused.
    assert!(
        parse_here(&json!({"command": ["x"], "sdk": {"name": "rmcp", "version": "3.11.0"}}))
            .is_ok()
    );
    for bad in [
        json!("rmcp"),
        json!({"name": "rmcp"}),
        json!({"name": "", "version": "1"}),
    ] {
        let error = parse_here(&json!({"command": ["x"], "sdk": bad})).unwrap_err();
        assert!(error.contains("`sdk` must be an object"), "{error}");
    }
}
