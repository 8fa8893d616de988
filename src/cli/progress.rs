//! Progress on stderr for work that can take more than a second: one line rewritten in place,
//! only when stderr is a terminal (a cron job's log or a pipe gets nothing), at most ten times a
//! second. Hand-written rather than a progress-bar crate: one line of text is all it draws.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A progress line; inert when stderr is not a terminal.
pub(crate) struct Progress {
    label: &'static str,
    /// When the line was last drawn (None: never); behind a lock because workers report it.
    drawn: Option<Mutex<Option<Instant>>>,
}

impl Progress {
    /// A progress line for `label`, such as `charging job records`.
    pub(crate) fn new(label: &'static str) -> Self {
        Progress { label, drawn: std::io::stderr().is_terminal().then(|| Mutex::new(None)) }
    }

    /// Reports `done` of `total` units (`unit`: `instants`, `jobs`); draws when a tenth of a
    /// second has passed since the last line, and always at the end.
    pub(crate) fn report(&self, done: u64, total: u64, unit: &str) {
        let Some(drawn) = &self.drawn else { return };
        let Ok(mut last) = drawn.lock() else { return };
        let now = Instant::now();
        let finished = done >= total;
        if !finished && last.is_some_and(|t| now - t < Duration::from_millis(100)) {
            return;
        }
        *last = Some(now);
        let pct = if total > 0 { 100.0 * done as f64 / total as f64 } else { 100.0 };
        let unit = if unit.is_empty() { String::new() } else { format!(" ({done}/{total} {unit})") };
        eprint!("\r\x1b[2Kfairshare: {} {pct:5.1}%{unit}", self.label);
        if finished {
            eprintln!();
        }
    }

    /// Says that an undivided step starts (`scoring 10000000 pending jobs`).
    pub(crate) fn start(&self, what: &str) {
        if self.drawn.is_some() {
            eprint!("\r\x1b[2Kfairshare: {what}…");
        }
    }

    /// Ends a line [`Progress::start`] began.
    pub(crate) fn done(&self) {
        if self.drawn.is_some() {
            eprintln!(" done");
        }
    }
}
