//! Target files: how to test a third-party server as it is, without a purpose-built fixture
//! server.
//!
//! Cases call the fixture profile's tools by role (`work`, `ping`, `echo`, `sleep`, `ticker`,
//! `cancellations`). A target file says how to start the server and, per role, which of its
//! own tools plays it and with which arguments, or that the role is absent. Cases that need an
//! absent role are skipped with the reason; where only the `cancellations` witness is absent,
//! the harness judges on what it can observe and says so.
//!
//! ```json
//! {
//!   "command": ["npx", "-y", "@modelcontextprotocol/server-everything"],
//!   "env": {"DEBUG": "0"},
//!   "cwd": ".",
//!   "protocolVersion": "2025-06-18",
//!   "fixtures": {
//!     "work":  {"tool": "longRunningOperation", "arguments": {"duration": 3600, "steps": 3600}},
//!     "sleep": {"tool": "longRunningOperation", "arguments": {"duration": "{ms/1000}", "steps": 1}},
//!     "echo":  {"tool": "echo", "arguments": {"message": "{text}"}},
//!     "ping": null, "ticker": null, "cancellations": null
//!   }
//! }
//! ```
//!
//! In `arguments`, a string `"{name}"` is the case's argument `name`; `"{name/N}"` and
//! `"{name*N}"` divide or multiply it by N. A mapping may carry a `"note"` (a string for the
//! person reading the file: `conformance init` says there what it checked), and a role may be
//! only `{"note": "…"}`: absent, like `null`, with the reason. Without `fixtures`, the
//! server's own tools play the roles whose names and schemas they fit (see
//! [`crate::discovery`]).
//!
//! A file works wherever it is: `command`, `cwd`, `env` values and `url` may use `${VAR}` and
//! `${VAR:-default}` ([`expand`]); a relative `cwd` is the target file's folder joined with
//! it; a relative program path with a `/` is taken from the `cwd`, as a shell in it would.
//! The program and each element of `command` that starts with `${…}/` are paths that must
//! exist when the file is loaded; when one does not, the error names the file, the element,
//! the path and the variables it was made of, and gives the file's `install` text (how to
//! install what it needs).

mod error;
pub mod expand;

use crate::engine::server::Connect;
use crate::fixtures::{is_role, Fixtures, Mapping};
use crate::transport::http::HttpTarget;
use crate::transport::process::Launch;
pub use error::{FileError, LoadError, MissingPath};
use expand::{expand, is_variable_path, Used};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A parsed target file.
#[derive(Debug, Clone)]
pub struct TargetFile {
    /// How to start the server (for an HTTP server that is already running, none).
    pub launch: Option<Launch>,
    /// The server's MCP endpoint over Streamable HTTP (`{port}` is a free loopback port the
    /// harness picks and puts into the command too); `None` for a stdio server.
    pub url: Option<String>,
    /// The protocol version to request, if the file sets one.
    pub protocol_version: Option<String>,
    /// The fixture mapping; `None` means the server implements the profile itself.
    pub fixtures: Option<Fixtures>,
}

impl TargetFile {
    /// How the harness reaches the server the file describes.
    pub fn connect(&self) -> Connect {
        match (&self.url, &self.launch) {
            (Some(url), launch) => Connect::Http(HttpTarget {
                url: url.clone(),
                launch: launch.clone(),
            }),
            (None, Some(launch)) => Connect::Stdio(launch.clone()),
            (None, None) => unreachable!("a target file has a command or a url"),
        }
    }
}

/// Reads a target file, its variables from the environment. Errors name the file and the
/// field, and say what to write instead.
pub fn load(path: &Path) -> Result<TargetFile, LoadError> {
    load_with(path, &|name| std::env::var(name).ok())
}

/// Reads a target file, its variables through `lookup`.
pub fn load_with(
    path: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<TargetFile, LoadError> {
    let shown = || path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: shown(),
        source,
    })?;
    let value: Value = serde_json::from_str(&text).map_err(|source| LoadError::NotJson {
        path: shown(),
        source,
    })?;
    let dir = std::path::absolute(path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .ok_or_else(|| LoadError::NoFolder { path: shown() })?;
    parse(&value, &Place { dir, lookup }).map_err(|source| LoadError::Invalid {
        path: shown(),
        source,
    })
}

/// What a target file's relative paths and variables are resolved against.
pub struct Place<'a> {
    /// The folder that holds the target file (absolute).
    pub dir: PathBuf,
    /// Reads an environment variable.
    pub lookup: &'a dyn Fn(&str) -> Option<String>,
}

const FIELDS: [&str; 8] = [
    "command",
    "url",
    "env",
    "cwd",
    "protocolVersion",
    "fixtures",
    "description",
    "install",
];

/// Parses a target file's JSON, expanding its variables and resolving its paths at `place`.
pub fn parse(value: &Value, place: &Place) -> Result<TargetFile, FileError> {
    let object = value.as_object().ok_or(FileError::NotAnObject)?;
    if let Some(key) = object.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(FileError::UnknownField { key: key.clone() });
    }
    let install = string_field(
        object,
        "install",
        "a string: how to install what the command needs, e.g. \"targets/install.sh rmcp\"",
    )?
    .cloned();
    let url = string_field(
        object,
        "url",
        "a string, the MCP endpoint, e.g. \"http://127.0.0.1:{port}/mcp\"",
    )?
    .map(|url| expand_field(place, "url", url).map(|(url, _)| url))
    .transpose()?;
    let raw = command_of(object, url.is_some())?;
    let env = env_of(object, place)?;
    let cwd = string_field(object, "cwd", "a string")?
        .map(|dir| resolve_cwd(dir, place, install.as_deref()))
        .transpose()?;
    let argv = raw
        .map(|raw| resolve_command(&raw, cwd.as_deref(), place, install.as_deref()))
        .transpose()?;
    let protocol_version =
        string_field(object, "protocolVersion", "a string such as \"2025-06-18\"")?.cloned();
    let fixtures = match object.get("fixtures") {
        None => None,
        Some(Value::Object(map)) => Some(parse_fixtures(map)?),
        Some(_) => {
            return Err(FileError::WrongType {
                field: "fixtures",
                want: "an object of role → {tool, arguments} or null",
            })
        }
    };
    Ok(TargetFile {
        launch: argv.map(|argv| Launch { argv, env, cwd }),
        url,
        protocol_version,
        fixtures,
    })
}

/// A field that is a string when it is there; `want` says what it must be otherwise.
fn string_field<'a>(
    object: &'a Map<String, Value>,
    field: &'static str,
    want: &'static str,
) -> Result<Option<&'a String>, FileError> {
    match object.get(field) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(FileError::WrongType { field, want }),
    }
}

/// A field's text with its variables expanded, and the variables it read.
fn expand_field(place: &Place, field: &str, text: &str) -> Result<(String, Vec<Used>), FileError> {
    expand(text, place.lookup).map_err(|source| FileError::Expand {
        field: field.to_string(),
        source,
    })
}

/// `command` as written (not yet expanded); it may be left out only when there is a `url`.
fn command_of(
    object: &Map<String, Value>,
    has_url: bool,
) -> Result<Option<Vec<String>>, FileError> {
    match object.get("command") {
        None if has_url => Ok(None),
        command => command
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect())
            .map(Some)
            .ok_or(FileError::WrongType {
                field: "command",
                want: "a non-empty array of strings (the argv, run without a shell); a server over HTTP that is already running needs only `url`",
            }),
    }
}

/// `env`, each value expanded.
fn env_of(object: &Map<String, Value>, place: &Place) -> Result<Vec<(String, String)>, FileError> {
    match object.get("env") {
        None => Ok(vec![]),
        Some(Value::Object(map)) => {
            let mut env = vec![];
            for (k, v) in map {
                let v = v.as_str().ok_or(FileError::EnvValue)?;
                env.push((k.clone(), expand_field(place, &format!("env.{k}"), v)?.0));
            }
            Ok(env)
        }
        Some(_) => Err(FileError::WrongType {
            field: "env",
            want: "an object of strings",
        }),
    }
}

/// `cwd`, expanded and made absolute from the file's folder; it must be a folder.
fn resolve_cwd(dir: &str, place: &Place, install: Option<&str>) -> Result<PathBuf, FileError> {
    let (expanded, used) = expand_field(place, "cwd", dir)?;
    let resolved = tidy(&place.dir.join(&expanded));
    if !resolved.is_dir() {
        return Err(FileError::Missing(Box::new(MissingPath {
            field: "cwd".into(),
            written: dir.to_string(),
            path: resolved,
            used,
            install: install.map(str::to_string),
            what: "is no folder",
        })));
    }
    Ok(resolved)
}

/// Expands `command` and checks its paths: the program when it has a `/` (a relative one is
/// made absolute from `cwd`), and each argument that starts with `${…}/`.
fn resolve_command(
    raw: &[String],
    cwd: Option<&Path>,
    place: &Place,
    install: Option<&str>,
) -> Result<Vec<String>, FileError> {
    let mut argv = vec![];
    for (i, element) in raw.iter().enumerate() {
        let field = format!("command[{i}]");
        let (mut text, used) = expand_field(place, &field, element)?;
        let program = i == 0 && text.contains('/');
        if program || is_variable_path(element) {
            let path = match cwd {
                Some(dir) => tidy(&dir.join(&text)),
                None => PathBuf::from(&text),
            };
            if !path.exists() {
                return Err(FileError::Missing(Box::new(MissingPath {
                    field,
                    written: element.clone(),
                    path,
                    used,
                    install: install.map(str::to_string),
                    what: "does not exist",
                })));
            }
            if program {
                text = path.display().to_string();
            }
        }
        argv.push(text);
    }
    Ok(argv)
}

/// The path without its `.` components (`targets/./.install` is `targets/.install`).
fn tidy(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| *c != std::path::Component::CurDir)
        .collect()
}

/// The `fixtures` object: per role, the server's tool that plays it, or `null` (absent).
fn parse_fixtures(map: &Map<String, Value>) -> Result<Fixtures, FileError> {
    let mut roles = BTreeMap::new();
    for (role, spec) in map {
        if !is_role(role) {
            return Err(FileError::UnknownRole { role: role.clone() });
        }
        let wrong = |member, want| FileError::WrongMapping {
            role: role.clone(),
            member,
            want,
        };
        let mapping = match spec {
            Value::Null => None,
            Value::Object(o) => {
                if o.get("note").is_some_and(|n| !n.is_string()) {
                    return Err(wrong(".note", "a string"));
                }
                if o.get("tool").is_none() && o.contains_key("note") {
                    // A role left out, with the reason (`conformance init` writes these).
                    roles.insert(role.clone(), None);
                    continue;
                }
                let tool = o.get("tool").and_then(Value::as_str).ok_or_else(|| {
                    wrong(".tool", "the server's tool name (or leave the role out, or give only a `note` saying why)")
                })?;
                let arguments = o.get("arguments").cloned();
                if arguments.as_ref().is_some_and(|a| !a.is_object()) {
                    return Err(wrong(".arguments", "an object"));
                }
                let progress = match o.get("progress") {
                    None => true,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => return Err(wrong(".progress", "true or false")),
                };
                Some(Mapping {
                    tool: tool.to_string(),
                    arguments,
                    progress,
                })
            }
            _ => return Err(wrong("", "{\"tool\": …, \"arguments\": …} or null")),
        };
        roles.insert(role.clone(), mapping);
    }
    Ok(Fixtures {
        roles,
        source: crate::fixtures::Source::TargetFile,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(!text.contains("/tmp/"), "{}: a fixed path", path.display());
            let value: Value = serde_json::from_str(&text).unwrap();
            assert!(
                value.get("install").is_some(),
                "{}: no `install`",
                path.display()
            );
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
        assert!(fixtures.has("work"));
        assert!(!fixtures.has("ticker"));
        assert!(!fixtures.has("echo"));
    }

    #[test]
    fn lacks_names_absent_roles_and_tools_without_progress() {
        let file = parse_here(&json!({
            "command": ["srv"],
            "fixtures": {"work": {"tool": "long", "progress": false}, "echo": {"tool": "say"}}
        }))
        .unwrap();
        let fixtures = file.fixtures.unwrap();
        assert_eq!(fixtures.lacks("echo"), None);
        assert_eq!(fixtures.lacks("work"), None);
        assert!(fixtures
            .lacks("work:progress")
            .unwrap()
            .contains("sends no progress"));
        assert!(fixtures
            .lacks("ticker")
            .unwrap()
            .contains("needs a tool that plays `ticker`"));
        assert_eq!(fixtures.lacks("cancellations"), None);
        let noted = parse_here(&json!({"command": ["srv"], "fixtures": {
            "echo": {"tool": "say", "note": "checked"},
            "sleep": {"note": "no tool sleeps"}
        }}))
        .unwrap()
        .fixtures
        .unwrap();
        assert!(noted.has("echo"));
        assert!(noted.roles.contains_key("sleep") && !noted.has("sleep"));
        assert!(parse_here(
            &json!({"command": ["x"], "fixtures": {"echo": {"tool": "e", "note": 1}}})
        )
        .unwrap_err()
        .contains("note"));
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
    }
}
