//! Progress on stderr for work that can take more than a second: one line rewritten in place,
//! only when stderr is a terminal (a cron job's log or a pipe gets nothing), at most ten times a
//! second. Hand-written rather than a progress-bar crate: one line of text is all it draws.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fairshare_engine::pipeline::Observer;

/// A progress line.
struct Progress {
    label: &'static str,
    /// When the line was last drawn (None: never).
    drawn: Option<Instant>,
}

impl Progress {
    /// Reports `done` of `total` units (`unit`: `instants`, `jobs`; none: bytes); draws when a
    /// tenth of a second has passed since the last line, and always at the end.
    fn report(&mut self, done: u64, total: u64, unit: &str) {
        let now = Instant::now();
        let finished = done >= total;
        if !finished && self.drawn.is_some_and(|t| now - t < Duration::from_millis(100)) {
            return;
        }
        self.drawn = Some(now);
        let pct = if total > 0 { 100.0 * done as f64 / total as f64 } else { 100.0 };
        let unit = if unit.is_empty() { String::new() } else { format!(" ({done}/{total} {unit})") };
        eprint!("\r\x1b[2Kfairshare: {} {pct:5.1}%{unit}", self.label);
        if finished {
            eprintln!();
        }
    }
}

/// The command line's [`Observer`]: progress lines and stage timings on a terminal; what the
/// charging saw and the notes of the settings once the records are charged, and warnings, always.
pub(crate) struct Terminal {
    /// Whether stderr is a terminal (stage lines are for people watching).
    interactive: bool,
    /// Notes said once the job records are charged.
    notes: Vec<String>,
    /// One progress line per task; behind a lock because workers report progress.
    lines: Mutex<Vec<Progress>>,
}

impl Terminal {
    pub(crate) fn new(notes: Vec<String>) -> Self {
        Terminal { interactive: std::io::stderr().is_terminal(), notes, lines: Mutex::new(Vec::new()) }
    }

    /// Whether stderr is a terminal.
    pub(crate) fn interactive(&self) -> bool {
        self.interactive
    }
}

impl Observer for Terminal {
    fn stage(&self, name: &'static str, secs: f64, peak: Option<u64>, what: &str) {
        if self.interactive {
            let mem = peak.map(|b| format!("  peak {:.2} GB", b as f64 / 1e9)).unwrap_or_default();
            eprintln!("fairshare: {name:<10} {secs:>8.3} s{mem}  {what}");
        }
    }

    fn progress(&self, task: &'static str, done: u64, total: u64, unit: &'static str) {
        if !self.interactive {
            return;
        }
        let Ok(mut lines) = self.lines.lock() else { return };
        let k = match lines.iter().position(|p| p.label == task) {
            Some(k) => k,
            None => {
                lines.push(Progress { label: task, drawn: None });
                lines.len() - 1
            }
        };
        lines[k].report(done, total, unit);
    }

    fn step(&self, what: &str) {
        if self.interactive {
            eprint!("\r\x1b[2Kfairshare: {what}…");
        }
    }

    fn step_done(&self) {
        if self.interactive {
            eprintln!(" done");
        }
    }

    fn charged(&self, summary: &str) {
        eprintln!("fairshare: {summary}");
        for note in &self.notes {
            eprintln!("fairshare: {note}");
        }
    }

    fn warning(&self, message: &str) {
        eprintln!("fairshare: warning: {message}");
    }
}
