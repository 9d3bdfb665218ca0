//! The HTML report as a browser shows it: pages of the reference run and of a server that
//! ignores cancels (a filter drops every `notifications/cancelled` before the reference server
//! reads it) are rendered in headless Chromium, and the DOM after the page's script has run
//! must hold the matrix, a sequence diagram with its cancel marked, and the diff.
//!
//! Chromium is found as `$CHROMIUM`, else `chromium`, `chromium-browser` or `google-chrome`
//! on the PATH (Debian: `apt-get install -y chromium`). Without one the trials are ignored,
//! and the reason is printed. With `CONFORMANCE_SCREENSHOTS=DIR` the pages are also saved as
//! PNG screenshots there, to look at.

#![allow(unsafe_code)] // libc: kills the browser it starts

#[path = "support/cli.rs"]
pub mod cli;

use cli::{TempDir, CONFORMANCE};
use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long Chromium may take to load and dump a page.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| {
            ["chromium", "chromium-browser", "google-chrome"].map(|name| dir.join(name))
        })
        .find(|candidate| candidate.is_file())
}

/// Runs a command to its end within the browser's time limit, killing it past that.
fn run(command: &mut Command) -> Result<std::process::Output, Failed> {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {command:?}: {e}"))?;
    let pid = child.id();
    let started = Instant::now();
    let (done, waited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    loop {
        match waited.recv_timeout(Duration::from_millis(200)) {
            Ok(output) => return output.map_err(|e| format!("{e}").into()),
            Err(_) if started.elapsed() > BROWSER_TIMEOUT => {
                // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                return Err(
                    format!("{command:?} did not finish within {BROWSER_TIMEOUT:?}").into(),
                );
            }
            Err(_) => {}
        }
    }
}

/// The DOM of a page after its scripts ran, as headless Chromium sees it.
fn dom(
    browser: &Path,
    page: &Path,
    fragment: &str,
    screenshot: Option<PathBuf>,
) -> Result<String, Failed> {
    // A fresh profile for each start: two browsers cannot share one.
    static STARTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let profile = TempDir::new(&format!("profile-{n}"));
    let url = format!("file://{}{fragment}", page.display());
    let base = |command: &mut Command| {
        command.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ]);
        command.arg(format!("--user-data-dir={}", profile.path().display()));
    };
    let mut command = Command::new(browser);
    base(&mut command);
    let output = run(command.arg("--dump-dom").arg(&url))?;
    if let Some(png) = screenshot {
        let mut command = Command::new(browser);
        base(&mut command);
        run(command
            .args(["--hide-scrollbars", "--window-size=1280,2400"])
            .arg(format!("--screenshot={}", png.display()))
            .arg(&url))?;
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if !text.contains("</html>") {
        return Err(format!(
            "Chromium dumped no page for {url}: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(without_scripts(&text))
}

/// The page without its script elements, whose source names what they draw: what is left is
/// what the page shows.
fn without_scripts(page: &str) -> String {
    let mut shown = String::with_capacity(page.len());
    let mut rest = page;
    while let Some(start) = rest.find("<script") {
        shown.push_str(&rest[..start]);
        match rest[start..].find("</script>") {
            Some(end) => rest = &rest[start + end + "</script>".len()..],
            None => return shown,
        }
    }
    shown.push_str(rest);
    shown
}

/// Runs the harness with these arguments; it must exit with `code`.
fn harness(args: &[&str], code: i32) -> Result<(), Failed> {
    let output = run(Command::new(CONFORMANCE).args(args).env_remove("CI"))?;
    if output.status.code() != Some(code) {
        return Err(format!(
            "conformance {args:?} exited with {:?}, not {code}:\n{}{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(())
}

fn expect(dom: &str, what: &str, needle: &str) -> Result<(), Failed> {
    if dom.contains(needle) {
        Ok(())
    } else {
        Err(format!("the rendered page has no {what} (`{needle}`)").into())
    }
}

fn screenshot(name: &str) -> Option<PathBuf> {
    std::env::var_os("CONFORMANCE_SCREENSHOTS").map(|dir| PathBuf::from(dir).join(name))
}

fn reference_run(browser: &Path) -> Result<(), Failed> {
    let dir = TempDir::new("reference");
    let page = dir.file("reference.html");
    let json = dir.file("reference.json");
    harness(
        &[
            "server",
            "--json",
            &json.to_string_lossy(),
            "--html",
            &page.to_string_lossy(),
        ],
        0,
    )?;
    let shown = dom(browser, &page, "", screenshot("reference.png"))?;
    expect(&shown, "matrix", "<table class=\"matrix\">")?;
    expect(&shown, "passing cell", "<td class=\"cell pass\">")?;
    expect(
        &shown,
        "list of problems saying there are none",
        "Nothing failed or warned.",
    )?;
    // Nothing failed, so nothing is open: a case's diagram is drawn once it is opened.
    let opened = dom(browser, &page, "#c-r0-server-cancel-after-progress", None)?;
    expect(
        &opened,
        "sequence diagram of the opened case",
        "class=\"sequence\"",
    )?;
    expect(&opened, "cancel on the diagram", "class=\"arrow cancel\"")?;
    expect(
        &opened,
        "proof on the diagram",
        "class=\"arrow internal proof\"",
    )?;
    Ok(())
}

fn broken_run(browser: &Path) -> Result<(), Failed> {
    let dir = TempDir::new("broken");
    let page = dir.file("broken.html");
    let json = dir.file("broken.json");
    let server = format!(
        "grep --line-buffered -v notifications/cancelled | exec '{CONFORMANCE}' reference-server"
    );
    harness(
        &[
            "server",
            "no-response-after-cancel",
            "--json",
            &json.to_string_lossy(),
            "--html",
            &page.to_string_lossy(),
            "--",
            "sh",
            "-c",
            &server,
        ],
        1,
    )?;
    let shown = dom(browser, &page, "", screenshot("broken.png"))?;
    expect(&shown, "matrix", "<table class=\"matrix\">")?;
    expect(&shown, "failing cell", "<td class=\"cell fail\">")?;
    // A failing case is open when the page loads, its diagram drawn, its diff shown.
    expect(&shown, "sequence diagram", "class=\"sequence\"")?;
    expect(&shown, "cancel on the diagram", "class=\"arrow cancel\"")?;
    expect(&shown, "message after the cancel", "class=\"band ")?;
    expect(&shown, "diff", "<pre class=\"diff\">")?;
    expect(&shown, "added line in the diff", "<span class=\"add\">")?;
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let browser = chromium();
    if browser.is_none() {
        eprintln!(
            "browser: skipped: no Chromium (set CHROMIUM, or `apt-get install -y chromium`); the HTML report is not checked in a browser"
        );
    }
    let trial = |name: &str, check: fn(&Path) -> Result<(), Failed>| {
        let found = browser.clone();
        Trial::test(name, move || match &found {
            Some(browser) => check(browser),
            None => Ok(()),
        })
        .with_ignored_flag(browser.is_none())
    };
    let trials = vec![
        trial("reference run renders in Chromium", reference_run),
        trial("failing server renders in Chromium", broken_run),
    ];
    libtest_mimic::run(&args, trials).exit();
}
