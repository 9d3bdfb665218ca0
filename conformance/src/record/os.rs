//! The few system calls the stdio recorder needs that the standard library lacks: passing a
//! signal to the server, waiting for its end without reaping it (so a signal is never passed to
//! a reused pid), ending the recorder the way the server ended, and closing the recorder's end
//! of a pipe so the client sees what it would have seen from the server.

// libc calls the standard library lacks, each with its SAFETY note (the workspace denies
// `unsafe` elsewhere).
#![allow(unsafe_code)]

use std::io;

/// Sends `signal` to the process `pid`.
pub fn signal(pid: u32, signal: i32) {
    let Ok(pid) = i32::try_from(pid) else { return };
    // SAFETY: kill only sends a signal; the caller holds the child unreaped, so the pid is
    // still the server's.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Blocks until the child `pid` has ended, leaving it unreaped (`WNOWAIT`): the caller reaps
/// it after it stopped passing signals on.
///
/// # Errors
/// `waitid` failed other than by an interruption.
pub fn wait_ended(pid: u32) -> io::Result<()> {
    let pid = libc::id_t::from(pid);
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on our own child with a valid out-parameter.
        let done = unsafe {
            libc::waitid(
                libc::P_PID,
                pid,
                &raw mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if done == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Ends this process by `signal`, as the server was ended, without a core dump of its own;
/// exits with 128 + the signal if the signal does not end it.
pub fn die_by(signal: i32) -> ! {
    let none = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit, signal, sigprocmask and raise act on this process only, with valid
    // arguments; the process is ending.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &raw const none);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
        libc::raise(signal);
    }
    std::process::exit(128 + signal)
}

/// Replaces this process's file descriptor `fd` (0 or 1) by `/dev/null`, closing the pipe it
/// held: the client then sees the end it would have seen from the server (end of output, or
/// a write that fails).
pub fn detach(fd: i32) {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    // SAFETY: dup2 atomically replaces one of our own descriptors with a valid one.
    unsafe {
        libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd);
    }
}
