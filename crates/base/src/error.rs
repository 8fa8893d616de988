//! The library's one error type.
//!
//! Every input problem names the file, the line or row (1-based, when there is one) and what is
//! wrong, so a site operator can fix the input without reading code. The binary adds context and
//! turns any error into a non-zero exit status.

use std::fmt;
use std::path::{Path, PathBuf};

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input file is malformed or inconsistent.
    #[error("{}: {message}", Location { path, line: *line })]
    Input {
        /// The input file (or a stand-in such as `<embedded>`).
        path: PathBuf,
        /// 1-based line or row number, when the problem has one.
        line: Option<u64>,
        /// What is wrong, in the words of the input format.
        message: String,
    },
    /// An I/O error on a named file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file being read or written.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// A request that cannot be honoured (bad option combination, unknown field name, ...).
    #[error("{0}")]
    Usage(String),
    /// The caller asked a long computation to stop (a Python user's Ctrl-C); nothing was written.
    #[error("interrupted while {0}")]
    Interrupted(&'static str),
    /// Arrow, Parquet, SQLite or JSON failed while encoding or decoding a named file.
    #[error("{}: {source}", path.display())]
    Format {
        /// The file being read or written.
        path: PathBuf,
        /// The underlying library's error, kept as the cause (or a message saying what failed).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

struct Location<'a> {
    path: &'a Path,
    line: Option<u64>,
}

impl fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.path.display()),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

impl Error {
    /// An input error at a 1-based line of `path`.
    pub fn input(path: impl Into<PathBuf>, line: impl Into<Option<u64>>, message: impl Into<String>) -> Self {
        Error::Input { path: path.into(), line: line.into(), message: message.into() }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    /// An Arrow/Parquet/SQLite error on `path`; the error itself stays reachable as the cause
    /// ([`std::error::Error::source`]), a message (`String`) stands in for one.
    pub fn format(path: impl Into<PathBuf>, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::Format { path: path.into(), source: source.into() }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn a_format_error_keeps_its_cause_and_its_words() {
        let arrow = arrow::error::ArrowError::SchemaError("no column `id`".into());
        let e = Error::format("tree.parquet", arrow);
        assert_eq!(e.to_string(), "tree.parquet: Schema error: no column `id`");
        let cause = e.source().expect("the arrow error is the cause");
        assert!(cause.downcast_ref::<arrow::error::ArrowError>().is_some());
        let e = Error::format("db.sqlite", "flux-accounting database: no table `bank_table`".to_string());
        assert_eq!(e.to_string(), "db.sqlite: flux-accounting database: no table `bank_table`");
    }

    #[test]
    fn input_errors_name_the_file_and_line() {
        assert_eq!(Error::input("tree.csv", 7, "shares: -1").to_string(), "tree.csv:7: shares: -1");
        assert_eq!(Error::input("tree.csv", None, "empty").to_string(), "tree.csv: empty");
    }

    #[test]
    fn an_interruption_says_what_it_stopped() {
        assert_eq!(Error::Interrupted("charging job records").to_string(), "interrupted while charging job records");
    }
}
