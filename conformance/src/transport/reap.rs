//! Making sure no process a target started outlives the run.
//!
//! Killing a target's process group catches its ordinary children, but not a daemon that
//! double-forked and called `setsid()`: that one is in a group and session of its own. Two
//! things catch those on Linux:
//!
//! - every target is started with [`TAG_ENV`] set to a tag of its own, which descendants
//!   inherit; when the target ends, every process whose environment carries the tag is killed
//!   (found through `/proc/<pid>/environ`, readable for the harness's own user);
//! - the harness makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), so an orphaned
//!   descendant is reparented to the harness rather than to init: it can be reaped, and one
//!   that cleared its environment is still found among the harness's children at the end.
//!
//! Limits: a descendant that both clears its environment and is started while the harness is
//! not its subreaper (another subreaper between them, or a container's init), or that leaves
//! through a service manager (`systemd-run`, `ssh`), is not found. Every live process group
//! is also listed here, so an interrupted harness can kill them all; once it is interrupted,
//! no target starts any more (the check and the start happen under the registry's lock, so a
//! start cannot slip in between the kill and the harness's exit).

// The one module of the harness that needs `unsafe`: the libc calls of process groups,
// signals and the subreaper, each with its SAFETY note (the workspace denies it elsewhere).
#![allow(unsafe_code)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The environment variable that tags every process a target starts.
pub const TAG_ENV: &str = "CONFORMANCE_TARGET_TAG";

/// The targets of this harness: the process groups alive right now, and whether the harness
/// was interrupted (then nothing starts any more).
struct Registry {
    groups: BTreeSet<i32>,
    interrupted: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    groups: BTreeSet::new(),
    interrupted: false,
});
/// The same flag as `Registry::interrupted`, readable without the lock (by the console).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Numbers the tags of this harness process.
static NEXT_TAG: AtomicU64 = AtomicU64::new(1);

/// This harness's tag prefix: every tag it hands out starts with it.
pub fn prefix() -> String {
    format!("{}-", std::process::id())
}

/// A fresh tag for one target.
pub fn new_tag() -> String {
    format!("{}{}", prefix(), NEXT_TAG.fetch_add(1, Ordering::Relaxed))
}

/// Makes the harness the child subreaper of everything it starts (Linux). Returns whether it
/// could.
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag of this process.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts a target with `spawn` (which returns the process and its group id) and lists its
/// group, under the registry's lock; refuses once the harness was interrupted.
pub(crate) fn start<C>(spawn: impl FnOnce() -> std::io::Result<(C, i32)>) -> std::io::Result<C> {
    let mut registry = registry();
    if registry.interrupted {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "the harness was interrupted, so no target starts any more",
        ));
    }
    let (child, pgid) = spawn()?;
    if pgid > 0 {
        registry.groups.insert(pgid);
    }
    Ok(child)
}

/// Forgets a process group that has been killed for good.
pub(crate) fn discharge(pgid: i32) {
    registry().groups.remove(&pgid);
}

/// Whether the harness was interrupted (see [`interrupt`]).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Kills a process group.
pub(crate) fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: killpg only sends a signal; the group was created for a target.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// The processes of this machine: (pid, parent pid).
fn processes() -> Vec<(i32, i32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let after = stat.rsplit_once(')')?.1;
            let ppid = after.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// Whether a process's environment carries a tag that starts with `tag` (the whole tag, or a
/// harness's prefix).
fn tagged(pid: i32, tag: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{TAG_ENV}={tag}");
    environ.split(|b| *b == 0).any(|entry| {
        entry.starts_with(wanted.as_bytes()) && (tag.ends_with('-') || entry.len() == wanted.len())
    })
}

/// Kills every process tagged `tag` (or, for a prefix, any tag of this harness) except
/// `spare` (a target leader the runtime reaps itself), and reaps those that were reparented
/// to the harness. Returns how many it killed.
pub fn kill_tagged(tag: &str, spare: i32) -> usize {
    let me = std::process::id() as i32;
    let mut killed = 0;
    // Twice: a process may have forked while the first round killed its parent.
    for _ in 0..2 {
        for (pid, ppid) in processes() {
            if pid == me || pid == spare || !tagged(pid, tag) {
                continue;
            }
            // SAFETY: kill only sends a signal to a process the target started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            killed += 1;
            if ppid == me {
                reap(pid);
            }
        }
    }
    killed
}

/// Waits for a killed child of the harness that no runtime waits for (one reparented to the
/// subreaper), on a thread of its own so no caller blocks.
fn reap(pid: i32) {
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: waitpid on a specific pid that was killed; it is the harness's child.
        unsafe {
            libc::waitpid(pid, &mut status, 0);
        }
    });
}

/// For an interrupted harness: from now on no target starts, and every target that runs is
/// killed as [`kill_everything`] does. The harness should exit right after.
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
    let mut registry = registry();
    registry.interrupted = true;
    kill_all(&registry);
}

/// For a finishing harness: kills every live target group, every tagged process of this
/// harness, and every child reparented to it, and reaps what it can.
pub fn kill_everything() {
    kill_all(&registry());
}

/// Kills everything; the caller holds the registry's lock, so nothing starts meanwhile.
fn kill_all(registry: &Registry) {
    for pgid in &registry.groups {
        kill_group(*pgid);
    }
    kill_tagged(&prefix(), 0);
    let me = std::process::id() as i32;
    for (pid, ppid) in processes() {
        if ppid == me && pid != me {
            // SAFETY: a child of the harness: a target leader or a reparented descendant.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
    std::thread::sleep(Duration::from_millis(20));
}
