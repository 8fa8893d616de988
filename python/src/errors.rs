//! The package's exception: what the engine refuses, in the command line's words.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    fairshare._fairshare,
    FairshareError,
    PyValueError,
    "An input or option the engine refuses; the message is the command line's (file, line, problem)."
);

/// A refused argument, before the engine runs.
pub fn usage_error(message: String) -> PyErr {
    FairshareError::new_err(message)
}
