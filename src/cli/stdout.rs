//! Standard output: what a command prints, written whole, its errors named `<stdout>`.

use std::io::Write;

use fairshare_base::{Error, Result};

/// Writes `text` to stdout.
pub(crate) fn print(text: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text).and_then(|()| out.flush()).map_err(|e| Error::io("<stdout>", e))
}
