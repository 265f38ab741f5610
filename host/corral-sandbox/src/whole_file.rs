//! Writing a file whole, and sweeping up after writers that were killed: the
//! one rule for every file corral rewrites (the standing approvals, the
//! component cache's entries).
//!
//! A file is written to a temporary file beside it, named
//! `.<name>.<pid>.<n>.tmp` (the writer's process id and a counter), then
//! renamed over it, so a reader sees the old contents or the new, never a
//! mix. A writer that fails removes its temporary file. A writer that is
//! killed cannot, so [`sweep`] removes the temporary files of processes that
//! are no longer running; callers sweep when they open a file or directory.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether [`write_whole`] syncs the file's data before the rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// Synced: the new contents survive a power loss once the call returns.
    Data,
    /// Not synced: for files whose readers check them anyway (cache entries
    /// carry a checksum) and can be rebuilt.
    None,
}

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

/// Writes `bytes` to `path` whole: to a temporary file beside it, synced as
/// `sync` says, then renamed over `path`.
///
/// # Errors
/// The I/O error of creating, writing, syncing or renaming; the temporary
/// file is removed and `path` is as it was.
pub fn write_whole(path: &Path, bytes: &[u8], sync: Sync) -> std::io::Result<()> {
    let tmp = temporary(path);
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        if sync == Sync::Data {
            file.sync_data()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
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
/// is no longer running, or is this process (whose writes in progress
/// cannot have started yet when it sweeps); only those for the file named
/// `only` when given (a directory corral does not own); returns how many.
/// Best effort: an unreadable directory or a file that cannot be removed is
/// skipped.
pub fn sweep(dir: &Path, only: Option<&str>) -> usize {
    remove_temporaries(dir, |target, pid| {
        only.is_none_or(|only| only == target) && (pid == std::process::id() || !running(pid))
    })
}

/// Removes from `dir` every temporary file for the file named `name`,
/// whoever wrote it. Only for a file whose writers hold a lock while they
/// write, by a caller holding it: then no write is in progress, and a
/// temporary file can only be a killed writer's, even one of another
/// machine sharing the directory, whose process ids [`sweep`] cannot see.
pub fn sweep_locked(dir: &Path, name: &str) -> usize {
    remove_temporaries(dir, |target, _| target == name)
}

/// Removes the temporary files in `dir` for which `remove(target, pid)`
/// holds; returns how many.
fn remove_temporaries(dir: &Path, remove: impl Fn(&str, u32) -> bool) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some((target, pid)) = name.to_str().and_then(writer_of) else {
            continue;
        };
        if remove(target, pid) && std::fs::remove_file(entry.path()).is_ok() {
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
        write_whole(&path, b"old", Sync::Data).unwrap();
        write_whole(&path, b"new", Sync::None).unwrap();
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
        assert!(write_whole(&path, b"new", Sync::Data).is_err());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "only the directory"
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
            format!(".set.json.{}.3.tmp", std::process::id()),
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
}
