//! What the tests of the `conformance` command line share: the binary, run without the
//! environment that changes how it behaves, and a folder of its own for each test.
//!
//! Declared `pub mod cli` by each test binary that uses it (cli, init, reports, browser), so a
//! binary that leaves some of it unused gets no dead-code warning.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `conformance` binary cargo built for this test run.
pub const CONFORMANCE: &str = env!("CARGO_BIN_EXE_conformance");

/// The `conformance` binary, without `CI` and `CONFORMANCE_BLESS` (which change what it
/// refuses and rewrites), killed if it runs past three minutes.
pub fn conformance() -> Command {
    let mut cmd = Command::new(CONFORMANCE);
    cmd.env_remove("CI")
        .env_remove("CONFORMANCE_BLESS")
        .timeout(Duration::from_secs(180));
    cmd
}

/// A folder of its own under the system temp dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new empty folder, named after the test binary, `name`, the process and the time.
    pub fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "conformance-{}-{}-{name}-{nanos}",
            env!("CARGO_CRATE_NAME"),
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The path of `name` in the folder.
    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes the case `server/<name>.mcpt` (the folder is then a `--cases` folder) and
    /// returns its path.
    pub fn case(&self, name: &str, text: &str) -> PathBuf {
        let dir = self.0.join("server");
        std::fs::create_dir_all(&dir).expect("cases folder");
        let path = dir.join(format!("{name}.mcpt"));
        std::fs::write(&path, text).expect("case written");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
