//! The locked read-modify-write, the one rule for every file that several
//! writers change in place (`corral.lock`, which each `corral pull` edits;
//! the standing approvals, which replicas on a shared volume add to):
//! take the file's exclusive lock, read the file again, change it, write it
//! whole ([`crate::write_whole`]), let go.
//!
//! The lock is `flock(2)` (through `std::fs::File::lock`) on
//! `.<name>.lock` beside the file, a file opened for writing: unlike a lock
//! on the directory, that also works where `flock` is emulated with
//! byte-range locks (NFS). The lock file is created when missing and never
//! removed, since removing it would let two writers hold locks on two
//! different files. While the lock is held no other writer is writing, so
//! any temporary file of the target is a killed writer's and is swept
//! ([`crate::sweep_locked`]).

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
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::other(format!("{} names no file", path.display())))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(format!(".{name}.lock")))?;
    file.lock()?;
    crate::sweep_locked(dir, name);
    Ok(file)
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
}
