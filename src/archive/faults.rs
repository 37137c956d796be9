//! Fault points: named places in the commit sequence where a test can make the process die
//! as if killed, to prove that recovery leaves every archive whole.
//!
//! Compiled in only with the `fault-injection` cargo feature (the test suite enables it);
//! in a normal build [`point`] is an empty inline function. With the feature, setting
//! `BABEL_FAULT=<name>` aborts the process at that point (SIGABRT: no destructors, no
//! flushing, no unlock — the OS releases the lock as it does for a killed process).

/// The environment variable naming the point at which to abort.
pub const FAULT_ENV: &str = "BABEL_FAULT";

/// Every fault point of a write, in the order a write passes them.
pub const POINTS: [&str; 11] = [
    "lock-acquired",
    "journal-written",
    "data-partly-written",
    "data-written",
    "manifest-temp-written",
    "history-prepared",
    "commit-hash-journalled",
    "manifest-renamed",
    "directory-synced",
    "history-published",
    "journal-cleared",
];

/// Aborts the process if `BABEL_FAULT` names this point.
#[cfg(feature = "fault-injection")]
pub fn point(name: &str) {
    debug_assert!(POINTS.contains(&name), "unknown fault point {name}");
    if std::env::var(FAULT_ENV).is_ok_and(|wanted| wanted == name) {
        eprintln!("babel: fault injected at {name}");
        std::process::abort();
    }
}

/// Does nothing: fault injection is not compiled in.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn point(_name: &str) {}
