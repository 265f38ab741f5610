//! "Has this changed?", in one place. Two strengths, for two costs:
//!
//! - [`Stamp`], a SHA-256 digest of what something was built from (the
//!   files beside a plugin: its WIT docs, its signature evidence; the
//!   secrets its policy names). A hot reload compares the stamp a plugin was
//!   loaded with against a new one and reloads the plugin when they differ.
//!   Files are read under the cap of their [`Kind`], as the loader reads
//!   them, so a stamp costs what a load costs, never more.
//! - [`Identity`], one `stat` of a file (device, inode, length,
//!   modification time), for a check made on every call (the standing
//!   approvals a replica shares): a rewrite through [`crate::write_whole`]
//!   always changes the inode, so a changed identity means a changed file.

use std::path::Path;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::Kind;

/// A digest of named parts and files; [`Stamp::finish`] answers `None`
/// when nothing was there (no part, no file present), so "none, then
/// none" is no change and "none, then something" is one.
#[derive(Debug, Clone, Default)]
pub struct Stamp {
    digest: Sha256,
    counted: bool,
}

impl Stamp {
    /// An empty stamp.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `part` (a secret's name, then its value; a path), ended by a
    /// NUL so that parts cannot run into each other.
    pub fn part(&mut self, part: &[u8]) -> &mut Self {
        self.digest.update(part);
        self.digest.update([0]);
        self.counted = true;
        self
    }

    /// Adds the state of the file `path`, read under the cap of `kind`:
    /// absent (which alone does not count as something there), its
    /// contents' digest, or unreadable (over its cap, not a file, an I/O
    /// error: what the loader will refuse, whatever the bytes).
    pub fn file(&mut self, path: &Path, kind: Kind) -> &mut Self {
        self.digest.update(path.as_os_str().as_encoded_bytes());
        match crate::read_bytes(path, kind) {
            Ok(Some(bytes)) => {
                self.digest.update([1]);
                self.digest.update(Sha256::digest(&bytes));
                self.counted = true;
            }
            Ok(None) => self.digest.update([0]),
            Err(_) => {
                self.digest.update([2]);
                self.counted = true;
            }
        }
        self
    }

    /// The digest in lowercase hex; `None` when nothing counted.
    pub fn finish(self) -> Option<String> {
        self.counted.then(|| hex::encode(self.digest.finalize()))
    }
}

/// What one `stat` says of a file: device, inode, length and modification
/// time. Equal identities mean the file was not rewritten or changed in
/// between (to the resolution of the file system's clock, for a change in
/// place of the same length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    device: u64,
    inode: u64,
    len: u64,
    modified: SystemTime,
}

impl Identity {
    /// The identity of `path` now; `None` when it cannot be `stat`ed
    /// (absent, say).
    pub fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let (device, inode) = {
            use std::os::unix::fs::MetadataExt as _;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (device, inode) = (0, 0);
        Some(Self {
            device,
            inode,
            len: meta.len(),
            modified: meta.modified().ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of_file(path: &Path) -> Option<String> {
        let mut stamp = Stamp::new();
        stamp.file(path, Kind::Wit);
        stamp.finish()
    }

    #[test]
    fn a_stamp_changes_with_the_contents_and_is_none_for_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("docs.wit");
        assert_eq!(of_file(&path), None);
        assert_eq!(Stamp::new().finish(), None);
        std::fs::write(&path, "package a:b;").expect("write");
        let first = of_file(&path).expect("a file is something");
        assert_eq!(of_file(&path).as_ref(), Some(&first));
        std::fs::write(&path, "package a:c;").expect("write");
        assert_ne!(of_file(&path).as_ref(), Some(&first));
        // Unreadable (a directory where the file was) is something, and
        // something else.
        std::fs::remove_file(&path).expect("rm");
        std::fs::create_dir(&path).expect("mkdir");
        assert!(of_file(&path).is_some_and(|s| s != first));
    }

    #[test]
    fn parts_do_not_run_into_each_other() {
        let stamp = |parts: &[&str]| {
            let mut stamp = Stamp::new();
            for part in parts {
                stamp.part(part.as_bytes());
            }
            stamp.finish()
        };
        assert_ne!(stamp(&["ab", "c"]), stamp(&["a", "bc"]));
        assert_eq!(stamp(&["a", "b"]), stamp(&["a", "b"]));
    }

    #[test]
    fn a_rewrite_changes_the_identity() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("approvals.json");
        assert_eq!(Identity::of(&path), None);
        crate::write_whole(&path, b"{}", crate::WriteOptions::UNSYNCED).expect("write");
        let first = Identity::of(&path).expect("identity");
        assert_eq!(Identity::of(&path), Some(first));
        // The same bytes, rewritten: a new inode.
        crate::write_whole(&path, b"{}", crate::WriteOptions::UNSYNCED).expect("write");
        assert_ne!(Identity::of(&path), Some(first));
    }
}
