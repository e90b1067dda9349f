//! Writing output directories safely.
//!
//! - **Whole or not at all**: everything goes into a hidden staging directory beside the
//!   target, renamed into place only when every file is complete.
//! - **Only what leasesim wrote is ever replaced**: each output directory carries a marker file
//!   ([`MARKER`]) naming the command and listing every file it wrote. An existing `--out` is
//!   replaced only if it is empty, or carries the marker of the same command and holds nothing
//!   but what the marker lists. Anything else — someone's site, notes added to a run folder — is
//!   refused, with the foreign entries named. A folder without the marker is never taken for
//!   leasesim's, whatever its files are called (`index.html`, `summary.json` and `rbac.yaml` are
//!   common names).
//! - **Nothing half-written is left behind**: staging directories are named after the process
//!   (`.leasesim-staging-<pid>-…`); an interrupt (SIGINT, SIGTERM) removes them before exiting,
//!   and the next write in the same parent removes those of processes that no longer exist
//!   (a `kill -9`). Every write into a staging directory and the swap of an output into place
//!   hold [`ACTIVE`]'s lock, which the interrupt takes before it removes anything: it never
//!   races a write, and never lands between moving the old output aside and the new one in.
//!   An old output set aside by a process killed in that gap is put back by the next write.
//!   A sweep's appends to `runs.csv` hold the same lock ([`hold_off_interrupt`]), so Ctrl-C
//!   never cuts a row in half and the count it reports is the file's.
//! - **A finished output is never thrown away**: if it cannot be moved into place (the target
//!   changed meanwhile, a bind mount), it is kept beside it as `<out>.new-<pid>` and the error
//!   says so. A mount point is refused as `--out` before anything runs.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// The file that marks a directory as a leasesim output.
pub const MARKER: &str = ".leasesim-output.json";
const STAGING_PREFIX: &str = ".leasesim-staging-";
const REPLACED_PREFIX: &str = ".leasesim-replaced-";

/// The commands that write output directories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Run,
    Reports,
    Lab,
    Merge,
    Hunt,
    Serve,
}

impl Command {
    pub fn name(self) -> &'static str {
        match self {
            Command::Run => "run",
            Command::Reports => "reports",
            Command::Lab => "lab",
            Command::Merge => "merge",
            Command::Hunt => "hunt",
            Command::Serve => "serve",
        }
    }
}

/// Every file under `dir`, relative to it, and every directory (with a trailing `/` marker in
/// the second set), without following symbolic links.
fn walk(dir: &Path) -> Result<(BTreeSet<PathBuf>, BTreeSet<PathBuf>), String> {
    let mut files = BTreeSet::new();
    let mut dirs = BTreeSet::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(relative) = stack.pop() {
        let here = dir.join(&relative);
        let entries = std::fs::read_dir(&here).map_err(|e| format!("cannot read {}: {e}", here.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", here.display()))?;
            let path = relative.join(entry.file_name());
            let kind = entry.file_type().map_err(|e| format!("cannot read {}: {e}", dir.join(&path).display()))?;
            if kind.is_dir() {
                dirs.insert(path.clone());
                stack.push(path);
            } else {
                files.insert(path);
            }
        }
    }
    Ok((files, dirs))
}

/// What the marker of `dir` says: the command and the files it wrote.
fn read_marker(dir: &Path) -> Option<(String, BTreeSet<PathBuf>)> {
    let text = std::fs::read_to_string(dir.join(MARKER)).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    if value["tool"] != "leasesim" {
        return None;
    }
    let command = value["command"].as_str()?.to_string();
    let files = value["files"].as_array()?.iter().filter_map(|f| f.as_str()).map(PathBuf::from).collect();
    Some((command, files))
}

/// Can `target` be replaced by the output of `command`? Only if it does not exist, is an empty
/// directory, or is `command`'s own earlier output with nothing added (see the module docs).
pub fn check_replaceable(target: &Path, command: Command) -> Result<(), String> {
    check_folder_path(target)?;
    check_replaceable_as(target, target, command)
}

/// `--out` can be a folder: neither it nor a folder on the way to it is a file.
pub fn check_folder_path(out: &Path) -> Result<(), String> {
    for at in out.ancestors().filter(|p| !p.as_os_str().is_empty()) {
        match std::fs::metadata(at) {
            Ok(meta) if !meta.is_dir() => {
                let what = if at == out { String::new() } else { format!(": {} is a file", at.display()) };
                return Err(format!(
                    "--out {}{what}: leasesim writes its output as a folder; choose another --out",
                    out.display()
                ));
            }
            Ok(_) => return Ok(()),
            Err(_) => {}
        }
    }
    Ok(())
}

/// [`check_replaceable`] of `dir`, named `shown` in the message (an old output just swapped
/// out to the staging path is still the user's `--out`).
fn check_replaceable_as(dir: &Path, shown: &Path, command: Command) -> Result<(), String> {
    // The output replaces the folder itself: `.` or `x/..` names a folder by the way to it, and
    // swapping it would leave the shell standing in a removed directory.
    // (`components` drops a `.` that is not first, so the text is looked at too.)
    let text = dir.to_string_lossy();
    let text = text.trim_end_matches('/');
    let dotted = text == "." || text.ends_with("/.");
    if dotted || matches!(dir.components().next_back(), None | Some(Component::CurDir | Component::ParentDir)) {
        return Err(format!(
            "--out {}: name the folder to write (for example --out ./out): leasesim writes its output as a \
             folder of its own and replaces it whole",
            shown.display()
        ));
    }
    let Ok(meta) = std::fs::symlink_metadata(dir) else { return Ok(()) };
    if meta.file_type().is_symlink() {
        return Err(format!(
            "{} is a symbolic link: leasesim replaces its output folder whole, which would replace the link, not \
             the folder it points to; give that folder's own path as --out",
            shown.display()
        ));
    }
    if !meta.is_dir() {
        return Err(format!(
            "--out {}: is a file; leasesim writes its output as a folder; choose another --out",
            shown.display()
        ));
    }
    if is_mount_point(dir, &meta) {
        return Err(format!(
            "--out {}: is a mount point, and leasesim replaces its output folder whole, which cannot be done to a \
             mount point; give a folder inside it, such as --out {}",
            shown.display(),
            shown.join("out").display()
        ));
    }
    let (files, dirs) = walk(dir)?;
    if files.is_empty() && dirs.is_empty() {
        return Ok(());
    }
    let foreign: Vec<String> = match read_marker(dir) {
        Some((marked_command, listed)) => {
            if marked_command != command.name() {
                return Err(format!(
                    "{} holds the output of `leasesim {marked_command}`, not of `leasesim {}`: refusing to replace it; \
                     choose another --out",
                    shown.display(),
                    command.name()
                ));
            }
            let needed_dirs: BTreeSet<PathBuf> =
                listed.iter().flat_map(|f| f.ancestors().skip(1).map(Path::to_path_buf).collect::<Vec<_>>()).collect();
            files
                .iter()
                .filter(|f| f.as_os_str() != MARKER && !listed.contains(*f))
                .chain(dirs.iter().filter(|d| !needed_dirs.contains(*d)))
                .map(|p| p.display().to_string())
                .collect()
        }
        // No marker: nothing in it is known to be leasesim's.
        None => files.iter().chain(dirs.iter()).map(|p| p.display().to_string()).collect(),
    };
    if foreign.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = foreign.iter().take(5).map(String::as_str).collect();
    let more = if foreign.len() > 5 { format!(" and {} more", foreign.len() - 5) } else { String::new() };
    Err(format!(
        "{} holds files leasesim did not write ({}{more}): refusing to replace it, which would delete them; \
         choose another --out, or move them away first",
        shown.display(),
        names.join(", ")
    ))
}

/// Staging directories this process is filling, removed if it is interrupted.
static ACTIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// What an interrupt says about the work kept (a sweep's rows and its `--resume` command).
type Note = Box<dyn Fn() -> String + Send>;
static INTERRUPT_NOTE: Mutex<Option<Note>> = Mutex::new(None);

/// While the guard lives, an interrupt prints `note()` (after removing staging directories).
pub fn note_on_interrupt(note: impl Fn() -> String + Send + 'static) -> InterruptNote {
    *INTERRUPT_NOTE.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(note));
    InterruptNote(())
}

/// Clears the interrupt note when dropped.
pub struct InterruptNote(());

impl Drop for InterruptNote {
    fn drop(&mut self) {
        *INTERRUPT_NOTE.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// Removes this process's staging directories and exits with 130 on SIGINT, SIGTERM or SIGHUP.
/// Call once, early in `main`.
pub fn install_interrupt_cleanup() {
    let _ = ctrlc::set_handler(|| {
        // Held until the process exits: a write or a swap in progress finishes first, and none
        // starts after.
        let active = lock_active();
        for dir in active.iter() {
            let _ = std::fs::remove_dir_all(dir);
        }
        if active.is_empty() {
            eprintln!("interrupted");
        } else {
            eprintln!("interrupted: the output being written was removed (nothing half-written is left)");
        }
        if let Some(note) = INTERRUPT_NOTE.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            eprintln!("{}", note());
        }
        std::process::exit(130);
    });
}

/// The staging directories, locked: whoever holds this may write into them (or swap one into
/// place) without the interrupt removing them underneath.
fn lock_active() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    ACTIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Holds an interrupt off while it lives: a write that must land whole (a sweep's rows and the
/// count its interrupt note reports) finishes first, and the interrupt exits after it.
pub struct InterruptHeldOff(#[allow(dead_code)] std::sync::MutexGuard<'static, Vec<PathBuf>>);

/// Holds an interrupt off until the returned guard is dropped; keep the write short. It takes
/// the staging lock, which is not re-entrant: never call it inside a staged write's closure.
pub fn hold_off_interrupt() -> InterruptHeldOff {
    InterruptHeldOff(lock_active())
}

fn forget(dir: &Path) {
    lock_active().retain(|d| d != dir);
}

/// Is process `pid` gone?
fn process_is_gone(pid: u32) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: signal 0 checks existence only; no signal is sent.
        let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
        rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

/// This process in the names of its staging directories: `<pid>@<host>`, the host name with
/// anything but letters, digits and dots made `_` (so that `-` still ends the owner).
fn owner_tag() -> String {
    format!("{}@{}", std::process::id(), this_host())
}

fn this_host() -> String {
    let mut buf = [0u8; 256];
    #[cfg(unix)]
    // SAFETY: gethostname writes at most `len` bytes into the buffer it is given.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len() - 1) } == 0;
    #[cfg(not(unix))]
    let ok = false;
    let len = if ok { buf.iter().position(|&b| b == 0).unwrap_or(0) } else { 0 };
    let host: String =
        buf[..len].iter().map(|&b| if b.is_ascii_alphanumeric() || b == b'.' { b as char } else { '_' }).collect();
    if host.is_empty() { "localhost".into() } else { host }
}

/// Removes staging (and set-aside) directories in `parent` left by processes of this machine
/// that are gone.
pub fn remove_stale_staging(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    let host = this_host();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix(STAGING_PREFIX).or_else(|| name.strip_prefix(REPLACED_PREFIX)) else {
            continue;
        };
        let owner = rest.split('-').next().unwrap_or("");
        let (pid, owner_host) = owner.split_once('@').map_or((owner, None), |(p, h)| (p, Some(h)));
        let Ok(pid) = pid.parse::<u32>() else { continue };
        // A process ID means something only on its own machine (a shared volume mounted by pods
        // in other PID namespaces holds their staging too): another host's is left alone.
        if owner_host.is_some_and(|h| h != host) {
            continue;
        }
        if pid != std::process::id() && process_is_gone(pid) && entry.file_type().is_ok_and(|t| t.is_dir()) {
            if name.starts_with(REPLACED_PREFIX) {
                restore_set_aside(parent, &entry.path());
            }
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Is `dir` (a directory, `meta` its metadata) where a file system is mounted? Its device
/// differs from its parent's. (A bind mount of the same file system is not seen: moving it then
/// fails, and the output is kept beside it; see [`StagedDir::commit`].)
fn is_mount_point(dir: &Path, meta: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::metadata(parent).is_ok_and(|p| p.dev() != meta.dev())
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, meta);
        false
    }
}

/// Swaps the two directories in one step (`renameat2` with `RENAME_EXCHANGE`, Linux 3.15+ on
/// most file systems). False if the system or file system cannot: the caller then renames in
/// two steps.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn exchange(a: &Path, b: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (Ok(a), Ok(b)) =
        (std::ffi::CString::new(a.as_os_str().as_bytes()), std::ffi::CString::new(b.as_os_str().as_bytes()))
    else {
        return false;
    };
    // SAFETY: two NUL-terminated paths that outlive the call; no memory is shared with it.
    unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) == 0 }
}

/// A dead process's set-aside directory holds the old output under its own name: if nothing
/// took its place (the process died between the two renames of a swap), it goes back.
fn restore_set_aside(parent: &Path, aside: &Path) {
    let Ok(entries) = std::fs::read_dir(aside) else { return };
    for entry in entries.flatten() {
        let home = parent.join(entry.file_name());
        if std::fs::symlink_metadata(&home).is_err() {
            let _ = std::fs::rename(entry.path(), home);
        }
    }
}

/// A directory being filled; [`StagedDir::commit`] moves it to its final place.
pub struct StagedDir {
    staging: Option<tempfile::TempDir>,
    target: PathBuf,
    command: Command,
}

impl StagedDir {
    /// Stages the output of `command` for `target`, which may exist only as this command's own
    /// earlier output ([`check_replaceable`]).
    pub fn new(target: &Path, command: Command) -> Result<StagedDir, String> {
        check_replaceable(target, command)?;
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        remove_stale_staging(&parent);
        let staging = tempfile::Builder::new()
            .prefix(&format!("{STAGING_PREFIX}{}-", owner_tag()))
            .tempdir_in(&parent)
            .map_err(|e| format!("cannot create a staging directory in {}: {e}", parent.display()))?;
        lock_active().push(staging.path().to_path_buf());
        Ok(StagedDir { staging: Some(staging), target: target.to_path_buf(), command })
    }

    pub fn path(&self) -> &Path {
        self.staging.as_ref().expect("staged until committed").path()
    }

    fn file(&mut self, name: &str) -> Result<PathBuf, String> {
        let path = self.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        Ok(path)
    }

    /// Runs `fill` with the staging directory's path, under the lock its writes take (for an
    /// output written by code of its own, such as a merge's streamed rows and plots).
    pub fn with_lock<R>(&mut self, fill: impl FnOnce(&Path) -> R) -> R {
        let _writing = lock_active();
        fill(self.path())
    }

    pub fn write(&mut self, name: &str, contents: impl AsRef<[u8]>) -> Result<(), String> {
        let _writing = lock_active();
        let path = self.file(name)?;
        std::fs::write(&path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Writes one file through a buffered writer (for outputs too large to build in memory).
    pub fn write_with(
        &mut self,
        name: &str,
        fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> Result<(), String> {
        let _writing = lock_active();
        let path = self.file(name)?;
        let file = std::fs::File::create(&path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let mut w = std::io::BufWriter::new(file);
        fill(&mut w)
            .and_then(|()| std::io::Write::flush(&mut w))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Writes the marker (listing every file staged) and replaces `target` (if it exists) with
    /// the staged directory.
    pub fn commit(mut self) -> Result<PathBuf, String> {
        let mut active = lock_active();
        let (files, _) = walk(self.path())?;
        let files: Vec<String> = files.iter().map(|f| f.to_string_lossy().replace('\\', "/")).collect();
        let marker = serde_json::json!({
            "tool": "leasesim",
            "version": env!("CARGO_PKG_VERSION"),
            "command": self.command.name(),
            "files": files,
        });
        let mut text = serde_json::to_string_pretty(&marker).expect("json");
        text.push('\n');
        std::fs::write(self.path().join(MARKER), text).map_err(|e| format!("cannot write the output marker: {e}"))?;
        let staging = self.staging.take().expect("staged until committed");
        let staged = staging.keep();
        let result = self.move_into_place(&staged);
        active.retain(|d| d != &staged);
        match result {
            Ok(()) => Ok(self.target.clone()),
            // The output is complete: it is kept beside the target, never thrown away.
            Err(e) if !staged.exists() => Err(e),
            Err(e) => {
                let mut kept = self.target.clone().into_os_string();
                kept.push(format!(".new-{}", std::process::id()));
                let kept = PathBuf::from(kept);
                match std::fs::rename(&staged, &kept) {
                    Ok(()) => Err(format!("{e}; the new output is kept in {}", kept.display())),
                    Err(_) => Err(format!("{e}; the new output is kept in {}", staged.display())),
                }
            }
        }
    }

    fn move_into_place(&self, staged: &Path) -> Result<(), String> {
        if std::fs::symlink_metadata(&self.target).is_err() {
            return std::fs::rename(staged, &self.target).map_err(|e| format!("cannot move output into place: {e}"));
        }
        // Checked again right before replacing: something may have been added meanwhile.
        check_replaceable(&self.target, self.command)?;
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        if exchange(staged, &self.target) {
            // One atomic step: the new output is in place and the old one at `staged`. A file
            // added to the old one between the check above and the exchange went with it: it
            // is looked for now, and if found the exchange is undone.
            if let Err(e) = check_replaceable_as(staged, &self.target, self.command) {
                if exchange(staged, &self.target) {
                    return Err(e);
                }
                // Could not be swapped back (it just was, so hardly ever): the old output is
                // kept beside the new one under a name no cleanup touches, never deleted with
                // the staging directory.
                let mut kept = self.target.clone().into_os_string();
                kept.push(format!(".old-{}", std::process::id()));
                let kept = PathBuf::from(kept);
                let _ = std::fs::rename(staged, &kept);
                return Err(format!("{e} (the new output is in place; the old one is kept in {})", kept.display()));
            }
            let _ = std::fs::remove_dir_all(staged);
            return Ok(());
        }
        let parent = staged.parent().unwrap_or(Path::new("."));
        let aside = tempfile::Builder::new()
            .prefix(&format!("{REPLACED_PREFIX}{}-", owner_tag()))
            .tempdir_in(parent)
            .map_err(|e| format!("cannot set the old output aside in {}: {e}", parent.display()))?
            .keep();
        // Under the target's own name, so that a process killed before the new output is in
        // place leaves the old one where the next write puts it back (`restore_set_aside`).
        let old = aside.join(self.target.file_name().unwrap_or(std::ffi::OsStr::new("old")));
        if let Err(e) = std::fs::rename(&self.target, &old) {
            let _ = std::fs::remove_dir_all(&aside);
            return Err(format!("cannot move the old {} aside: {e}", self.target.display()));
        }
        if let Err(e) = std::fs::rename(staged, &self.target) {
            // Put the old output back: leave things as they were.
            let _ = std::fs::rename(&old, &self.target);
            let _ = std::fs::remove_dir_all(&aside);
            return Err(format!("cannot move output into place: {e}"));
        }
        let _ = std::fs::remove_dir_all(&aside);
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if let Some(staging) = &self.staging {
            forget(staging.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_commands_own_output_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let mut staged = StagedDir::new(&out, Command::Run).unwrap();
        staged.write("summary.json", "{}").unwrap();
        staged.commit().unwrap();
        assert!(check_replaceable(&out, Command::Run).is_ok());
        assert!(check_replaceable(&out, Command::Lab).unwrap_err().contains("output of `leasesim run`"));
        std::fs::write(out.join("notes.md"), "mine").unwrap();
        let e = check_replaceable(&out, Command::Run).unwrap_err();
        assert!(e.contains("notes.md") && e.contains("did not write"), "{e}");
    }

    #[test]
    fn a_site_with_an_index_is_not_taken_for_reports() {
        let tmp = tempfile::tempdir().unwrap();
        let site = tmp.path().join("site");
        std::fs::create_dir_all(site.join("css")).unwrap();
        std::fs::write(site.join("index.html"), "<h1>mine</h1>").unwrap();
        std::fs::write(site.join("blog.md"), "mine").unwrap();
        std::fs::write(site.join("css/site.css"), "mine").unwrap();
        let e = check_replaceable(&site, Command::Reports).unwrap_err();
        assert!(e.contains("blog.md") && e.contains("css"), "{e}");
        // Names leasesim writes do not make a folder leasesim's: without the marker it is
        // refused (a site of `index.html` and `README.md`, a folder holding a `summary.json`).
        let named_alike = tmp.path().join("named-alike");
        std::fs::create_dir_all(&named_alike).unwrap();
        std::fs::write(named_alike.join("index.html"), "<h1>mine</h1>").unwrap();
        std::fs::write(named_alike.join("README.md"), "mine").unwrap();
        let e = check_replaceable(&named_alike, Command::Reports).unwrap_err();
        assert!(e.contains("index.html") && e.contains("README.md"), "{e}");
        std::fs::remove_file(named_alike.join("index.html")).unwrap();
        std::fs::remove_file(named_alike.join("README.md")).unwrap();
        std::fs::write(named_alike.join("summary.json"), "{}").unwrap();
        assert!(check_replaceable(&named_alike, Command::Run).unwrap_err().contains("summary.json"));
    }

    #[test]
    fn a_folder_named_by_dot_or_a_symbolic_link_is_refused_before_anything_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        for out in [PathBuf::from("."), tmp.path().join("x/.."), tmp.path().join(".")] {
            let e = check_replaceable(&out, Command::Run).unwrap_err();
            assert!(e.contains("name the folder to write"), "{e}");
        }
        let real = tmp.path().join("real");
        std::fs::create_dir_all(&real).unwrap();
        #[cfg(unix)]
        {
            let link = tmp.path().join("link");
            std::os::unix::fs::symlink(&real, &link).unwrap();
            assert!(check_replaceable(&link, Command::Run).unwrap_err().contains("is a symbolic link"));
        }
        assert!(!tmp.path().join("x").exists());
    }

    #[test]
    fn a_run_replaces_its_own_earlier_output_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        for (i, name) in ["a.json", "b.json"].iter().enumerate() {
            let mut staged = StagedDir::new(&out, Command::Run).unwrap();
            staged.write(name, format!("{i}")).unwrap();
            staged.commit().unwrap();
        }
        // The second output only: the first one's file is gone with it, nothing else is left.
        assert!(!out.join("a.json").exists());
        assert_eq!(std::fs::read_to_string(out.join("b.json")).unwrap(), "1");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, [std::ffi::OsString::from("out")]);
    }

    #[test]
    fn an_old_output_set_aside_by_a_process_killed_mid_swap_is_put_back() {
        let tmp = tempfile::tempdir().unwrap();
        // The process died after moving `out` aside and before moving the new one in.
        let aside = tmp.path().join(format!("{REPLACED_PREFIX}4194303-abc"));
        std::fs::create_dir_all(aside.join("out")).unwrap();
        std::fs::write(aside.join("out/summary.json"), "old").unwrap();
        // Died after the new one was in place: the old one is dropped, the new one kept.
        let aside2 = tmp.path().join(format!("{REPLACED_PREFIX}4194302-abc"));
        std::fs::create_dir_all(aside2.join("done")).unwrap();
        std::fs::write(aside2.join("done/summary.json"), "old").unwrap();
        std::fs::create_dir_all(tmp.path().join("done")).unwrap();
        std::fs::write(tmp.path().join("done/summary.json"), "new").unwrap();
        remove_stale_staging(tmp.path());
        assert_eq!(std::fs::read_to_string(tmp.path().join("out/summary.json")).unwrap(), "old");
        assert_eq!(std::fs::read_to_string(tmp.path().join("done/summary.json")).unwrap(), "new");
        assert!(!aside.exists() && !aside2.exists());
    }

    #[test]
    fn staging_left_by_a_dead_process_is_removed_and_a_live_ones_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        // PIDs are below 2^22 on Linux; this one is not in use.
        let dead = tmp.path().join(format!("{STAGING_PREFIX}4194303-abc"));
        let mine = tmp.path().join(format!("{STAGING_PREFIX}{}-abc", std::process::id()));
        let someone = tmp.path().join("someone-elses");
        for d in [&dead, &mine, &someone] {
            std::fs::create_dir_all(d).unwrap();
        }
        // Another machine's (a shared volume): its process IDs are not ours to judge.
        let elsewhere = tmp.path().join(format!("{STAGING_PREFIX}4194303@another_host-abc"));
        let dead_here = tmp.path().join(format!("{STAGING_PREFIX}4194303@{}-abc", this_host()));
        for d in [&elsewhere, &dead_here] {
            std::fs::create_dir_all(d).unwrap();
        }
        remove_stale_staging(tmp.path());
        assert!(!dead.exists() && mine.exists() && someone.exists());
        assert!(elsewhere.exists() && !dead_here.exists());
    }
}
