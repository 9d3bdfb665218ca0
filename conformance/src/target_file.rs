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
mod fixtures;

use crate::engine::server::Connect;
use crate::fixtures::Fixtures;
use crate::transport::http::HttpTarget;
use crate::transport::process::Launch;
pub use error::{FileError, LoadError, MissingPath};
use expand::{expand, is_variable_path, Used};
use fixtures::parse_fixtures;
use serde_json::{Map, Value};
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

const FIELDS: [&str; 9] = [
    "command",
    "url",
    "env",
    "cwd",
    "protocolVersion",
    "fixtures",
    "description",
    "install",
    "sdk",
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
    check_sdk(object)?;
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

/// `sdk`, which only `conformance compare` reads (which SDK the target is built on), must
/// name the package and its exact version when it is there.
fn check_sdk(object: &Map<String, Value>) -> Result<(), FileError> {
    let Some(sdk) = object.get("sdk") else {
        return Ok(());
    };
    let is_text = |key| {
        sdk.get(key)
            .is_some_and(|v: &Value| v.as_str().is_some_and(|s| !s.is_empty()))
    };
    if sdk.is_object() && is_text("name") && is_text("version") {
        Ok(())
    } else {
        Err(FileError::WrongType {
            field: "sdk",
            want: "an object {\"name\": package, \"version\": exact version}, e.g. {\"name\": \"rmcp\", \"version\": \"3.11.0\"}",
        })
    }
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

#[cfg(test)]
mod tests;
