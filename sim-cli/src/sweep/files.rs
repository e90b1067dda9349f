//! How a sweep reports a bad input or a failed file operation, and writes a whole file.

use crate::scenario_file::CliError;
use std::path::Path;

pub(super) fn err(message: impl Into<String>) -> CliError {
    CliError::input(message.into())
}

pub(super) fn io(path: &Path, what: &str, e: std::io::Error) -> CliError {
    err(format!("{}: cannot {what}: {e}", path.display()))
}

/// Writes a whole file via a temporary beside it, so a reader never sees half of it.
pub(super) fn write_file(path: &Path, contents: &str) -> Result<(), CliError> {
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, contents).map_err(|e| io(&tmp, "write", e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, "write", e))
}
