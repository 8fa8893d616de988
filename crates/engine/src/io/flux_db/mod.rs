//! `flux-db`: a flux-accounting SQLite database, the one place it is opened.
//!
//! Every reader opens it with [`open_read`], which never leaves files beside the database; the
//! usage write-back opens it with `open_write`. SQLite's errors all read
//! `flux-accounting database: ...` (`db_err`). The parts:
//!
//! | module | what |
//! |---|---|
//! | [`tree`] | `bank_table` and `association_table` as an association tree |
//! | [`priority`] | the priority plugin's weight, queue and bank tables |
//!
//! The `jobs` table as job records and the usage state `flux account-update-usage` reads and
//! writes are the usage stage's ([`crate::usage::flux_db`]); they open the database here.

pub mod priority;
pub mod tree;

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use fairshare_base::error::{Error, Result};

/// Maps SQLite's errors on the database at `path` to the crate's.
pub(crate) fn db_err(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| Error::format(path, format!("flux-accounting database: {e}"))
}

/// Opens a flux-accounting database for reading, leaving nothing beside it.
///
/// A read-only connection to a WAL-mode database creates its `-wal` and `-shm` files but, unable
/// to checkpoint, never removes them. So when neither exists, the database is opened read-write
/// with `query_only` set (nothing is written): closing the last connection then removes both
/// under SQLite's exclusive lock, which it gets only if no other process opened the database
/// meanwhile. Files that existed before belong to another process, or hold transactions not yet
/// checkpointed: the connection is then read-only and they are left as they are.
///
/// # Errors
/// The file is `-` or a stream, or SQLite cannot open it.
pub fn open_read(path: &Path) -> Result<Connection> {
    let err = db_err(path);
    fairshare_base::read::source::require_file(path, "a flux-accounting database")?;
    // Header bytes 18 and 19 (file format write and read versions) are 2 in WAL mode. A file that
    // cannot be read is left to SQLite to report.
    let wal_mode = fairshare_base::read::source::head(path, 20).is_ok_and(|h| h.get(18..20) == Some(&[2, 2][..]));
    let absent = |suffix: &str| {
        let mut beside = path.as_os_str().to_owned();
        beside.push(suffix);
        std::fs::symlink_metadata(beside).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    };
    let access = if wal_mode && absent("-wal") && absent("-shm") {
        OpenFlags::SQLITE_OPEN_READ_WRITE
    } else {
        OpenFlags::SQLITE_OPEN_READ_ONLY
    };
    let conn = Connection::open_with_flags(path, access | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(&err)?;
    conn.pragma_update(None, "query_only", true).map_err(&err)?;
    Ok(conn)
}

/// Opens a flux-accounting database for writing.
///
/// # Errors
/// SQLite cannot open it read-write.
pub(crate) fn open_write(path: &Path) -> Result<Connection> {
    let err = db_err(path);
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(&err)?;
    // flux's own writers wait 30 s for the cron jobs' locks.
    conn.busy_timeout(Duration::from_secs(30)).map_err(&err)?;
    Ok(conn)
}
