//! Writing output directories atomically: everything goes into a temporary directory beside
//! the target, which is renamed into place only when every file is complete. A failed run
//! leaves nothing behind.

use std::path::{Path, PathBuf};

/// A directory being filled; [`StagedDir::commit`] moves it to its final place.
pub struct StagedDir {
    staging: tempfile::TempDir,
    target: PathBuf,
}

impl StagedDir {
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
