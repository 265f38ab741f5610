//! Writing a file whole, and sweeping up after writers that were killed: the
//! one rule for every file corral rewrites (`corral.lock`, the secret
//! store, the standing approvals, the component cache's entries, a pulled
//! plugin and its evidence).
//!
//! A file is written to a temporary file beside it, named
//! `.<name>.<pid>.<n>.tmp` (the writer's process id and a counter), created
//! exclusively (`O_CREAT | O_EXCL`, and `O_NOFOLLOW`): whatever is already at
//! that name, a symlink planted there included, is left alone and the next
//! name is tried. The data is fsynced, the file renamed over the target,
//! and the directory fsynced, so a reader sees the old contents or the new,
//! never a mix, and a power loss after the call returns keeps the new. A
//! writer that fails removes its temporary file. A writer that is killed
//! cannot, so [`sweep`] removes the temporary files of processes that are no
//! longer running (and those with this process's id that none of its writes
//! in progress made: an earlier process's with the same id); callers sweep
//! when they open a file or directory.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Whether a whole-file write is made durable before it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// The file's data and the directory entry are fsynced: the new
    /// contents survive a power loss once the write returns.
    Synced,
    /// Not synced: for files whose readers check them anyway (cache entries
    /// carry a checksum) and can be rebuilt.
    Unsynced,
}

/// How [`write_whole`] and [`WholeFile`] write: durability and the new
/// file's permission bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOptions {
    /// Synced or not; default synced.
    pub durability: Durability,
    /// The new file's mode (Unix permission bits, before the umask);
    /// default `0o644`. Secrets use `0o600`.
    pub mode: u32,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self::SYNCED
    }
}

impl WriteOptions {
    /// Synced, mode `0o644`: the default.
    pub const SYNCED: Self = Self {
        durability: Durability::Synced,
        mode: 0o644,
    };
    /// Synced, mode `0o600`: only the owner reads it (secrets).
    pub const PRIVATE: Self = Self {
        durability: Durability::Synced,
        mode: 0o600,
    };
    /// Not synced, mode `0o644`: rebuildable files that are checked on read.
    pub const UNSYNCED: Self = Self {
        durability: Durability::Unsynced,
        mode: 0o644,
    };
}

/// How many temporary names a write tries before it gives up: each one is
/// taken only when something is already there (a killed writer's leftover,
/// or a planted file).
const NAME_ATTEMPTS: usize = 16;

/// The temporary file beside `path` for this process's next write.
fn temporary(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    path.with_file_name(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The names of this process's temporary files that are being written
/// (unique in the process: the counter in them is). [`sweep`] leaves them
/// alone: they are another thread's write in progress (one process may build
/// several hosts over one cache directory at once), while a temporary file
/// with this process's id that is not here is a killed earlier process's
/// that had the same id (a container's first process gets the same id at
/// every start).
static IN_PROGRESS: Mutex<BTreeSet<OsString>> = Mutex::new(BTreeSet::new());

fn in_progress() -> MutexGuard<'static, BTreeSet<OsString>> {
    IN_PROGRESS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The write that made temporary file `tmp` is over (renamed into place, or
/// removed).
fn finished(tmp: &Path) {
    if let Some(name) = tmp.file_name() {
        in_progress().remove(name);
    }
}

/// Creates a new temporary file beside `path`: exclusively, without
/// following a symlink, with `mode`. It is in [`IN_PROGRESS`] until
/// [`finished`].
fn create_temporary(path: &Path, mode: u32) -> std::io::Result<(File, PathBuf)> {
    let mut last = None;
    for _ in 0..NAME_ATTEMPTS {
        let tmp = temporary(path);
        // Listed before it exists, so that no sweep sees it unlisted.
        if let Some(name) = tmp.file_name() {
            in_progress().insert(name.to_owned());
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options
                .mode(mode)
                .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
        }
        #[cfg(not(unix))]
        let _ = mode;
        match options.open(&tmp) {
            Ok(file) => return Ok((file, tmp)),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                finished(&tmp);
                last = Some(err);
            }
            Err(err) => {
                finished(&tmp);
                return Err(err);
            }
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary name")))
}

/// A file being written whole: write into it (it is a [`Write`]), then
/// [`commit`](Self::commit) to put it in place. Dropped without a commit,
/// it removes its temporary file and the target is as it was.
#[derive(Debug)]
pub struct WholeFile {
    file: Option<File>,
    tmp: PathBuf,
    path: PathBuf,
    options: WriteOptions,
}

impl WholeFile {
    /// Starts writing `path` whole, as `options` say.
    ///
    /// # Errors
    /// The I/O error of creating the temporary file beside `path` (the
    /// directory is missing or not writable, or every temporary name tried
    /// is taken).
    pub fn create(path: &Path, options: WriteOptions) -> std::io::Result<Self> {
        let (file, tmp) = create_temporary(path, options.mode)?;
        Ok(Self {
            file: Some(file),
            tmp,
            path: path.to_path_buf(),
            options,
        })
    }

    /// Syncs (as the options say), renames the file over the target, and
    /// syncs the directory.
    ///
    /// # Errors
    /// The I/O error of syncing or renaming; the temporary file is removed
    /// and the target is as it was. After the rename, a failed directory
    /// sync is an error too (the new contents are in place, not yet
    /// durable).
    pub fn commit(mut self) -> std::io::Result<()> {
        let file = self.file.take().expect("a WholeFile commits once");
        let synced = self.options.durability == Durability::Synced;
        let placed = (|| {
            if synced {
                file.sync_all()?;
            }
            drop(file);
            std::fs::rename(&self.tmp, &self.path)
        })();
        if let Err(err) = placed {
            let _ = std::fs::remove_file(&self.tmp);
            finished(&self.tmp);
            return Err(err);
        }
        finished(&self.tmp);
        if synced {
            sync_directory(&self.path)?;
        }
        Ok(())
    }
}

impl Write for WholeFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("not committed").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("not committed").flush()
    }
}

impl Drop for WholeFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
            finished(&self.tmp);
        }
    }
}

/// Fsyncs the directory that holds `path`, so a rename into it is durable.
fn sync_directory(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

/// Writes `bytes` to `path` whole, as `options` say (see the module docs).
///
/// # Errors
/// The I/O error of creating, writing, syncing or renaming; the temporary
/// file is removed and `path` is as it was.
pub fn write_whole(path: &Path, bytes: &[u8], options: WriteOptions) -> std::io::Result<()> {
    let mut file = WholeFile::create(path, options)?;
    file.write_all(bytes)?;
    file.commit()
}

/// The name of the file a temporary file is for, and its writer's process
/// id, if `file_name` is one of ours.
fn writer_of(file_name: &str) -> Option<(&str, u32)> {
    let rest = file_name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (rest, counter) = rest.rsplit_once('.')?;
    counter.parse::<u64>().ok()?;
    let (name, pid) = rest.rsplit_once('.')?;
    Some((name, pid.parse().ok()?))
}

/// Whether process `pid` is running on this machine (`kill(pid, 0)`); when
/// it cannot be told, it is taken as running.
fn running(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return false;
        };
        !matches!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        )
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Removes from `dir` the temporary files ([`write_whole`]'s) whose writer
/// is no longer running, or has this process's id but is not one of its
/// writes in progress (a killed earlier process's with the same id); only
/// those for the file named `only` when given (a directory corral does not
/// own); returns how many. Another thread's write in progress is left
/// alone. Best effort: an unreadable directory or a file that cannot be
/// removed is skipped.
pub fn sweep(dir: &Path, only: Option<&str>) -> usize {
    remove_temporaries(dir, |file_name, target, pid| {
        only.is_none_or(|only| only == target)
            && if pid == std::process::id() {
                !in_progress().contains(file_name)
            } else {
                !running(pid)
            }
    })
}

/// Removes from `dir` every temporary file for the file named `name`,
/// whoever wrote it. Only for a file whose writers hold a lock while they
/// write, by a caller holding it: then no write is in progress, and a
/// temporary file can only be a killed writer's, even one of another
/// machine sharing the directory, whose process ids [`sweep`] cannot see.
pub fn sweep_locked(dir: &Path, name: &str) -> usize {
    remove_temporaries(dir, |_, target, _| target == name)
}

/// Removes the temporary files in `dir` for which `remove(file_name,
/// target, pid)` holds; returns how many.
fn remove_temporaries(dir: &Path, remove: impl Fn(&OsString, &str, u32) -> bool) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some((target, pid)) = name.to_str().and_then(writer_of) else {
            continue;
        };
        if remove(&name, target, pid) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::info!(
            dir = %dir.display(),
            removed,
            "removed temporary files left by writers that were stopped"
        );
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_write_leaves_no_temporary_and_replaces_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("set.json");
        write_whole(&path, b"old", WriteOptions::SYNCED).unwrap();
        write_whole(&path, b"new", WriteOptions::UNSYNCED).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_write_removes_its_temporary() {
        let dir = tempfile::tempdir().unwrap();
        // Renaming a file over a directory fails after the write.
        let path = dir.path().join("taken");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), b"x").unwrap();
        assert!(write_whole(&path, b"new", WriteOptions::SYNCED).is_err());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "only the directory"
        );
    }

    #[test]
    fn a_sweep_leaves_a_write_in_progress_in_this_process_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry.bin");
        // Another thread's write, begun and not committed yet, as when one
        // process builds two hosts over one cache directory at once.
        let mut writing = WholeFile::create(&path, WriteOptions::UNSYNCED).unwrap();
        writing.write_all(b"half").unwrap();
        assert_eq!(sweep(dir.path(), None), 0);
        writing.write_all(b" and the rest").unwrap();
        writing.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"half and the rest");
        // A write that failed (dropped) is over too: nothing is left.
        let dropped = WholeFile::create(&path, WriteOptions::UNSYNCED).unwrap();
        drop(dropped);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(
            in_progress()
                .iter()
                .all(|n| !n.to_string_lossy().starts_with(".entry.bin."))
        );
    }

    #[test]
    fn the_sweep_removes_the_temporaries_of_writers_that_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        // A child that has exited: its pid is free (until reused).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let alive = std::os::unix::process::parent_id();
        for name in [
            format!(".set.json.{gone}.0.tmp"),
            // This process's id, and a counter no write of it has reached:
            // an earlier process's with the same id.
            format!(".set.json.{}.{}.tmp", std::process::id(), u64::MAX),
            format!(".set.json.{alive}.1.tmp"),
            "set.json".to_string(),
            ".hidden.tmp".to_string(),
            "x.tmp.1.2".to_string(),
        ] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        std::fs::write(dir.path().join(format!(".other.json.{gone}.0.tmp")), b"x").unwrap();
        assert_eq!(sweep(dir.path(), Some("set.json")), 2);
        assert_eq!(
            sweep(dir.path(), None),
            1,
            "another file's, when the directory is ours"
        );
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut kept = vec![
            format!(".set.json.{alive}.1.tmp"),
            ".hidden.tmp".to_string(),
            "set.json".to_string(),
            "x.tmp.1.2".to_string(),
        ];
        kept.sort();
        assert_eq!(left, kept);
    }

    #[test]
    fn only_our_temporary_names_are_read_as_ones() {
        assert_eq!(writer_of(".a.b.json.123.7.tmp"), Some(("a.b.json", 123)));
        assert_eq!(writer_of(".a.123.x.tmp"), None);
        assert_eq!(writer_of("a.123.7.tmp"), None);
        assert_eq!(writer_of(".123.7.tmp"), None);
    }

    /// A symlink planted at the name of the next temporary file (an
    /// attacker who can write the directory and guess the name) is never
    /// followed: its target is untouched. (With one name taken, the write
    /// takes the next; here every name it would try is taken.)
    #[cfg(unix)]
    #[test]
    fn a_symlink_planted_at_the_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let path = dir.path().join("corral.lock");
        // Every name this process's next writes could take (the counter is
        // per process; other tests may have used some).
        for n in 0..4096 {
            let planted = dir
                .path()
                .join(format!(".corral.lock.{}.{n}.tmp", std::process::id()));
            std::os::unix::fs::symlink(&victim, planted).unwrap();
        }
        // Every name it tries is taken: refused, nothing followed.
        let err = write_whole(&path, b"new", WriteOptions::SYNCED).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(!path.exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_private_file_is_created_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.toml");
        write_whole(&path, b"token = 1", WriteOptions::PRIVATE).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_streamed_file_appears_whole_on_commit_and_not_at_all_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plugin.wasm");
        let mut file = WholeFile::create(&path, WriteOptions::SYNCED).unwrap();
        file.write_all(b"\0asm").unwrap();
        assert!(!path.exists(), "not before the commit");
        file.write_all(b" rest").unwrap();
        file.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"\0asm rest");
        let mut dropped = WholeFile::create(&path, WriteOptions::SYNCED).unwrap();
        dropped.write_all(b"half").unwrap();
        drop(dropped);
        assert_eq!(std::fs::read(&path).unwrap(), b"\0asm rest");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
