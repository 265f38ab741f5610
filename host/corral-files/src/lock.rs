//! The two locks on files:
//!
//! - the locked read-modify-write ([`update_locked`]), the one rule for
//!   every file that several writers change in place (`corral.lock`, which
//!   each `corral pull` edits; the standing approvals, which replicas on a
//!   shared volume add to): take the file's exclusive lock, read the file
//!   again, change it, write it whole ([`crate::write_whole`]), let go;
//! - the make-once lock ([`produce_once`]), for a file that is expensive to
//!   make and the same whoever makes it (a compiled component in the
//!   cache): whoever comes second waits for the first, then finds the file
//!   made instead of making it again.
//!
//! Both are `flock(2)` (through `std::fs::File::lock`) on a file beside the
//! target, opened for writing: unlike a lock on the directory, that also
//! works where `flock` is emulated with byte-range locks (NFS), and since a
//! lock belongs to an open file, two threads of one process take turns as
//! two processes do. The read-modify-write's lock file, `.<name>.lock`, is
//! created when missing and never removed, since removing it would let two
//! writers hold locks on two different files. While it is held no other
//! writer is writing, so any temporary file of the target is a killed
//! writer's and is swept ([`crate::sweep_locked`]).

use std::fs::File;
use std::io;
use std::path::Path;

/// Runs `update` (read `path`, change it, write it whole) while holding
/// `path`'s exclusive lock, after sweeping the temporary files that killed
/// writers of `path` left. Another writer waits for the lock, then reads
/// what this one wrote. Answers what `update` answered.
///
/// The directory of `path` must exist.
///
/// # Errors
/// `lock_error` of the [`io::Error`] when the lock file cannot be created
/// or locked (a read-only or missing directory); else what `update`
/// returned.
pub fn update_locked<T, E>(
    path: &Path,
    update: impl FnOnce() -> Result<T, E>,
    lock_error: impl FnOnce(io::Error) -> E,
) -> Result<T, E> {
    let lock = take(path).map_err(lock_error)?;
    let answer = update();
    drop(lock);
    answer
}

/// The exclusive lock of `path` (released when the file is dropped), with
/// the killed writers' temporary files swept.
fn take(path: &Path) -> io::Result<File> {
    let (dir, name) = split(path)?;
    let file = lock_file(&dir.join(format!(".{name}.lock")))?;
    file.lock()?;
    crate::sweep_locked(dir, name);
    Ok(file)
}

/// `path`'s directory (`.` for a bare name) and file name.
fn split(path: &Path) -> io::Result<(&Path, &str)> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::other(format!("{} names no file", path.display())))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    Ok((dir, name))
}

/// Opens (creating when missing) the lock file `path`, for writing.
fn lock_file(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}

/// Answers `ready()` when it has an answer (the file at `path` is made
/// already), else runs `produce` (make it) while holding `path`'s make-once
/// lock, so that of the processes and threads that want `path` at the same
/// time one makes it and the others wait, then find it with `ready`.
///
/// The lock file, `.<name>.producing` beside `path`, is removed when
/// `produce` returns, so nothing of it stays beside a made file (or beside
/// none, when making it failed). That is safe because `ready` is asked
/// under the lock before anything is made: a waiter, or a newcomer that
/// locks a new lock file, finds what was made. The lock only saves work,
/// and where it cannot be taken (a read-only directory, where nothing can
/// be written anyway) `produce` runs unlocked.
///
/// # Errors
/// What `produce` returned; the lock's own failures are not errors.
pub fn produce_once<T, E>(
    path: &Path,
    ready: impl FnOnce() -> Option<T>,
    produce: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    let Ok((dir, name)) = split(path) else {
        return produce();
    };
    let lock_path = dir.join(format!(".{name}.producing"));
    let lock = match lock_file(&lock_path).and_then(|file| file.lock().map(|()| file)) {
        Ok(lock) => lock,
        Err(err) => {
            tracing::debug!(path = %lock_path.display(), "no make-once lock, making it unlocked: {err}");
            return produce();
        }
    };
    let answer = match ready() {
        Some(made) => Ok(made),
        None => produce(),
    };
    // Remove the lock file while still holding it, and only when it is still
    // the one locked: a waiter that locked the same file after an earlier
    // holder removed it must not remove a newcomer's.
    if same_file(&lock, &lock_path) {
        let _ = std::fs::remove_file(&lock_path);
    }
    drop(lock);
    answer
}

/// Whether `path` still names the open file `file`.
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    #[test]
    fn writers_of_one_file_take_turns_and_lose_no_change() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("counter");
        std::fs::write(&path, "0").expect("write");
        let threads = 8;
        let start = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    for _ in 0..25 {
                        update_locked(
                            &path,
                            || {
                                let n: u32 = std::fs::read_to_string(&path)?.parse().unwrap();
                                crate::write_whole(
                                    &path,
                                    (n + 1).to_string().as_bytes(),
                                    crate::WriteOptions::UNSYNCED,
                                )
                            },
                            |e| e,
                        )
                        .expect("update");
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().expect("writer");
        }
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "200");
        assert!(dir.path().join(".counter.lock").is_file());
    }

    #[test]
    fn a_killed_writers_temporary_file_is_swept_under_the_lock() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("state.json");
        // A temporary name of a writer that is running (this process), so
        // only the locked sweep may remove it.
        let stale = dir
            .path()
            .join(format!(".state.json.{}.7.tmp", std::process::id()));
        std::fs::write(&stale, "half").expect("write");
        update_locked(&path, || Ok::<_, io::Error>(()), |e| e).expect("update");
        assert!(!stale.exists());
    }

    #[test]
    fn a_directory_that_cannot_hold_the_lock_file_is_the_lock_error() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("missing/state.json");
        let err =
            update_locked(&path, || Ok::<_, String>(()), |e| format!("lock: {e}")).unwrap_err();
        assert!(err.starts_with("lock: "), "{err}");
    }

    #[test]
    fn of_threads_that_want_one_file_at_once_one_makes_it_and_the_rest_find_it() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("artifact");
        let made = std::sync::atomic::AtomicUsize::new(0);
        let threads = 8;
        let start = Barrier::new(threads);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    start.wait();
                    let bytes = produce_once(
                        &path,
                        || std::fs::read(&path).ok(),
                        || {
                            made.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            crate::write_whole(&path, b"made", crate::WriteOptions::UNSYNCED)?;
                            Ok::<_, io::Error>(b"made".to_vec())
                        },
                    )
                    .expect("produce");
                    assert_eq!(bytes, b"made");
                });
            }
        });
        assert_eq!(made.into_inner(), 1, "made exactly once");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["artifact"], "no lock file is left beside it");
    }

    #[test]
    fn a_failed_make_leaves_no_lock_file_and_the_next_caller_tries_again() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("artifact");
        let first: Result<(), &str> = produce_once(&path, || None, || Err("disk full"));
        assert_eq!(first, Err("disk full"));
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
        let second: Result<u8, &str> = produce_once(&path, || None, || Ok(7));
        assert_eq!(second, Ok(7));
    }

    #[test]
    fn without_a_directory_to_lock_in_the_file_is_made_unlocked() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("missing/artifact");
        let made: Result<u8, ()> = produce_once(&path, || None, || Ok(1));
        assert_eq!(made, Ok(1));
    }
}
