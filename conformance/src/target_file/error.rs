//! Why a target file cannot be used, typed so a caller can tell the cases apart. Each message
//! is what the command line prints: it names the file and the field, and says what to write
//! or do instead.

use super::expand::{ExpandError, Used};
use crate::fixtures::Role;
use std::fmt;
use std::path::PathBuf;

/// Why [`super::load`] could not read a target file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file cannot be read.
    #[error("{path}: cannot read the target file: {source}")]
    Read {
        /// The file, as given.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{path}:{line}: the target file is not JSON: {source}", line = .source.line())]
    NotJson {
        /// The file, as given.
        path: String,
        /// What the JSON parser said, with the line.
        source: serde_json::Error,
    },
    /// The file's folder cannot be told (its relative paths are resolved against it).
    #[error("{path}: cannot tell which folder holds the target file")]
    NoFolder {
        /// The file, as given.
        path: String,
    },
    /// The file is JSON, but not a target file.
    #[error("{path}: {source}")]
    Invalid {
        /// The file, as given.
        path: String,
        /// What is wrong in it.
        source: FileError,
    },
}

/// What is wrong in a target file's JSON ([`super::parse`]).
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The JSON is not an object.
    #[error("a target file is a JSON object; see the README's target file section")]
    NotAnObject,
    /// A field the format does not have.
    #[error("unknown field `{key}`; known: {known}", known = super::FIELDS.join(", "))]
    UnknownField {
        /// The field, as written.
        key: String,
    },
    /// A field of the wrong type.
    #[error("`{field}` must be {want}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// What it must be, with an example where one helps.
        want: &'static str,
    },
    /// A value of `env` that is not a string.
    #[error("`env` values must be strings")]
    EnvValue,
    /// A `${…}` in a field that cannot be expanded.
    #[error("{field}: {source}")]
    Expand {
        /// The field (`url`, `cwd`, `env.NAME`, `command[i]`).
        field: String,
        /// What is wrong with the `${…}`.
        source: ExpandError,
    },
    /// A path the file names that is not there (boxed: it carries what the path was made of).
    #[error(transparent)]
    Missing(Box<MissingPath>),
    /// A role in `fixtures` the profile does not have.
    #[error("`fixtures.{role}` is no role of the profile; roles: {roles}, and for a server with tasks {tasks} and {as_tasks} (the tool a case calls as a task)",
        roles = Role::listed(&Role::PROFILE), tasks = Role::listed(&Role::TASK), as_tasks = Role::listed(&Role::AS_TASK))]
    UnknownRole {
        /// The role, as written.
        role: String,
    },
    /// A role's mapping, or a member of it, of the wrong type.
    #[error("`fixtures.{role}{member}` must be {want}")]
    WrongMapping {
        /// The role.
        role: Role,
        /// The member (`.tool`, `.note`, …), or empty for the mapping itself.
        member: &'static str,
        /// What it must be.
        want: &'static str,
    },
}

/// A path of the file that is not there: which field, which path, what it was made of, and
/// how to install what is missing.
#[derive(Debug, thiserror::Error)]
pub struct MissingPath {
    /// The field (`cwd`, `command[i]`).
    pub field: String,
    /// The element as the file writes it.
    pub written: String,
    /// The path it became.
    pub path: PathBuf,
    /// The variables it was made of.
    pub used: Vec<Used>,
    /// The file's `install` text.
    pub install: Option<String>,
    /// What is wrong with the path (`does not exist`, `is no folder`).
    pub what: &'static str,
}

impl fmt::Display for MissingPath {
    /// `FIELD: PATH WHAT (from `WRITTEN`; VAR=value…); how to install it`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut from = String::new();
        if self.written != self.path.to_string_lossy() {
            from = format!(" (from `{}`", self.written);
            for u in &self.used {
                match &u.value {
                    Some(v) => from.push_str(&format!("; {}={v}", u.name)),
                    None => from.push_str(&format!("; {} is not set", u.name)),
                }
            }
            from.push(')');
        }
        let mut next = match &self.install {
            Some(install) => format!("install it with `{install}`"),
            None => "install what the command needs, or correct the path".to_string(),
        };
        if let Some(unset) = self.used.iter().find(|u| u.value.is_none()) {
            next.push_str(&format!(", or set {} to where it is installed", unset.name));
        }
        write!(
            f,
            "{}: {} {}{from}; {next}",
            self.field,
            self.path.display(),
            self.what
        )
    }
}
