//! The digest memo: the sha256 of each plugin file the loader has hashed,
//! kept in the component cache directory (`digests/DEVICE-INODE`, one line:
//! size, modification time, change time, sha256), so that a warm start
//! neither reads nor hashes a component whose cache entry exists (the
//! bundled Python sample is 21 MB: reading and hashing it was a fifth of
//! `corral serve`'s start).
//!
//! A remembered digest answers only for the same file unchanged: same
//! device and inode, same size, same modification time and same *change*
//! time (`ctime`), to the nanosecond. A process cannot set a file's change
//! time (the kernel sets it to "now" on every write, `chmod`, rename or
//! `utimes`), so a file rewritten in place, replaced, or touched back to
//! its old modification time no longer matches, and is read and hashed
//! again. Only a digest read from a file whose change time is at least
//! [`SETTLED`] old is remembered: a write within the file system clock's
//! granularity after the read (which could leave the change time as it
//! was) cannot then go unnoticed. What the memo cannot see: the clock set
//! back by root, a file system that does not keep change times (some
//! network and FUSE file systems).
//!
//! The memo has the cache directory's trust: whoever can write there can
//! already run code as the host (the entries are native code). A forged
//! memo line alone makes the loader run the compiled entry of the digest it
//! names, which is the component that digest pins, never the file's bytes.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How old a file's change time must be before its digest is remembered:
/// 1 s, far above any file system clock's granularity (a jiffy, 1–10 ms).
pub(super) const SETTLED: Duration = Duration::from_secs(1);

/// The subdirectory of the cache directory that holds the memo.
const DIR: &str = "digests";

/// What identifies one state of one file: device and inode (the file), size
/// and both times in nanoseconds since the epoch (its contents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    device: u64,
    inode: u64,
    len: u64,
    modified: i128,
    changed: i128,
}

impl Key {
    /// The key of what `meta` describes; `None` off Unix (no change time:
    /// nothing is remembered).
    fn of(meta: &std::fs::Metadata) -> Option<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            let nanos = |secs: i64, nsec: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsec);
            Some(Self {
                device: meta.dev(),
                inode: meta.ino(),
                len: meta.size(),
                modified: nanos(meta.mtime(), meta.mtime_nsec()),
                changed: nanos(meta.ctime(), meta.ctime_nsec()),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }

    /// The memo file of this file (any state of it).
    fn path(&self, cache: &Path) -> PathBuf {
        cache
            .join(DIR)
            .join(format!("{:x}-{:x}", self.device, self.inode))
    }

    /// The memo line's start for this state: size and times, each followed
    /// by a space.
    fn prefix(&self) -> String {
        format!("{} {} {} ", self.len, self.modified, self.changed)
    }
}

/// The sha256 (lowercase hex) remembered for the file `meta` describes in
/// its present state, if any.
pub(super) fn recall(cache: &Path, meta: &std::fs::Metadata) -> Option<String> {
    let key = Key::of(meta)?;
    let text = corral_files::read_text(&key.path(cache), corral_files::Kind::DigestMemo).ok()??;
    let sha256 = text.strip_prefix(&key.prefix())?.strip_suffix('\n')?;
    let hex = sha256.len() == 64
        && sha256
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    hex.then(|| sha256.to_string())
}

/// Remembers `sha256` for the file `meta` describes (its metadata taken
/// before its bytes were read, at `now`), when its change time is at least
/// [`SETTLED`] old. A memo that cannot be written is logged at debug level
/// and skipped: the next start hashes the file again.
pub(super) fn remember(cache: &Path, meta: &std::fs::Metadata, sha256: &str, now: SystemTime) {
    let Some(key) = Key::of(meta) else { return };
    let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else {
        return;
    };
    if key.changed > i128::try_from(now.saturating_sub(SETTLED).as_nanos()).unwrap_or(i128::MAX) {
        return;
    }
    let path = key.path(cache);
    let written = corral_files::create_private_dir(&cache.join(DIR)).and_then(|()| {
        corral_files::write_whole(
            &path,
            format!("{}{sha256}\n", key.prefix()).as_bytes(),
            corral_files::WriteOptions::UNSYNCED,
        )
    });
    if let Err(err) = written {
        tracing::debug!(path = %path.display(), "cannot remember a plugin's digest: {err:#}");
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn meta(path: &Path) -> std::fs::Metadata {
        std::fs::metadata(path).expect("stat")
    }

    #[test]
    fn a_digest_is_recalled_only_for_the_same_settled_file_unchanged() {
        let dir = tempfile::tempdir().expect("dir");
        let cache = dir.path().join("cache");
        let file = dir.path().join("a.wasm");
        std::fs::write(&file, b"\0asm one").expect("write");
        let later = SystemTime::now() + SETTLED * 2;

        // Just written: not settled, not remembered.
        remember(&cache, &meta(&file), SHA, SystemTime::now());
        assert_eq!(recall(&cache, &meta(&file)), None);

        // Settled: remembered, and recalled while nothing changes.
        remember(&cache, &meta(&file), SHA, later);
        assert_eq!(recall(&cache, &meta(&file)).as_deref(), Some(SHA));

        // The same file in another state: each of size, modification time
        // and change time alone makes the memo line another file's. (A
        // rewrite in place moves the change time; a process cannot put it
        // back.)
        let key = Key::of(&meta(&file)).expect("key");
        for other in [
            Key {
                len: key.len + 1,
                ..key
            },
            Key {
                modified: key.modified - 1,
                ..key
            },
            Key {
                changed: key.changed - 1,
                ..key
            },
            Key {
                changed: key.changed + 1,
                ..key
            },
        ] {
            std::fs::write(key.path(&cache), format!("{}{SHA}\n", other.prefix())).expect("memo");
            assert_eq!(recall(&cache, &meta(&file)), None, "{other:?}");
        }

        // Replaced by another file (another inode) under the same name.
        remember(&cache, &meta(&file), SHA, later);
        assert!(recall(&cache, &meta(&file)).is_some());
        let other = dir.path().join("b.wasm");
        std::fs::write(&other, b"\0asm one").expect("write");
        std::fs::rename(&other, &file).expect("rename");
        assert_eq!(recall(&cache, &meta(&file)), None);
    }

    #[test]
    fn a_damaged_memo_line_is_not_believed() {
        let dir = tempfile::tempdir().expect("dir");
        let cache = dir.path().join("cache");
        let file = dir.path().join("a.wasm");
        std::fs::write(&file, b"\0asm").expect("write");
        let key = Key::of(&meta(&file)).expect("key");
        std::fs::create_dir_all(cache.join(DIR)).expect("mkdir");
        for line in [
            format!("{}{}\n", key.prefix(), &SHA[..63]),
            format!("{}{}\n", key.prefix(), SHA.to_uppercase()),
            format!("{}{SHA}", key.prefix()),
            format!("{}{SHA} extra\n", key.prefix()),
            format!("0 {SHA}\n"),
        ] {
            std::fs::write(key.path(&cache), &line).expect("write memo");
            assert_eq!(recall(&cache, &meta(&file)), None, "{line:?}");
        }
        std::fs::write(key.path(&cache), format!("{}{SHA}\n", key.prefix())).expect("memo");
        assert_eq!(recall(&cache, &meta(&file)).as_deref(), Some(SHA));
    }
}
