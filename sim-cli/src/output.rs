//! Writing output directories atomically: everything goes into a temporary directory beside
//! the target, which is renamed into place only when every file is complete. A failed run
//! leaves nothing behind.

use std::path::{Path, PathBuf};

/// Can `target` be replaced by a command whose outputs include `marker`? Only if it does not
/// exist, or is an empty directory, or a directory holding `marker` (its own earlier output).
pub fn check_replaceable(target: &Path, marker: &str) -> Result<(), String> {
    if !target.exists() {
        return Ok(());
    }
    if !target.is_dir() {
        return Err(format!("{} exists and is not a directory: choose another output directory", target.display()));
    }
    let mut entries = std::fs::read_dir(target).map_err(|e| format!("cannot read {}: {e}", target.display()))?;
    if entries.next().is_some() && !target.join(marker).exists() {
        return Err(format!(
            "{} already holds files that are not leasesim output (no {marker}): refusing to replace it; choose another output directory or empty it",
            target.display()
        ));
    }
    Ok(())
}

/// A directory being filled; [`StagedDir::commit`] moves it to its final place.
pub struct StagedDir {
    staging: tempfile::TempDir,
    target: PathBuf,
}

impl StagedDir {
    /// Stages a new `target`. An existing `target` is only ever replaced if it is a directory
    /// that is empty or holds `marker` (a file this command writes, so it is this command's own
    /// earlier output): `--out docs` must not wipe someone's folder.
    pub fn new_replacing(target: &Path, marker: &str) -> Result<StagedDir, String> {
        check_replaceable(target, marker)?;
        Self::new(target)
    }

    pub fn new(target: &Path) -> Result<StagedDir, String> {
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        let staging = tempfile::Builder::new()
            .prefix(".leasesim-staging-")
            .tempdir_in(&parent)
            .map_err(|e| format!("cannot create a staging directory in {}: {e}", parent.display()))?;
        Ok(StagedDir { staging, target: target.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        self.staging.path()
    }

    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> Result<(), String> {
        let path = self.staging.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Writes one file through a buffered writer (for outputs too large to build in memory).
    pub fn write_with(
        &self,
        name: &str,
        fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> Result<(), String> {
        let path = self.staging.path().join(name);
        let file = std::fs::File::create(&path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let mut w = std::io::BufWriter::new(file);
        fill(&mut w)
            .and_then(|()| std::io::Write::flush(&mut w))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Replaces `target` (if it exists) with the staged directory.
    pub fn commit(self) -> Result<PathBuf, String> {
        let staged = self.staging.keep();
        if self.target.exists() {
            let old = self.target.with_extension("leasesim-old");
            let _ = std::fs::remove_dir_all(&old);
            std::fs::rename(&self.target, &old)
                .map_err(|e| format!("cannot move the old {} aside: {e}", self.target.display()))?;
            std::fs::rename(&staged, &self.target).map_err(|e| format!("cannot move output into place: {e}"))?;
            let _ = std::fs::remove_dir_all(&old);
        } else {
            std::fs::rename(&staged, &self.target).map_err(|e| format!("cannot move output into place: {e}"))?;
        }
        Ok(self.target)
    }
}
