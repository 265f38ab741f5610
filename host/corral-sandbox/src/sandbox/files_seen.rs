//! Evidence of the guest's filesystem: a wrapper around wasmtime-wasi's p2
//! `wasi:filesystem` host ([`Observed`](observed::Observed)) that delegates
//! every function to it unchanged and records, after each path operation
//! returns, the guest path, the operation, the error code if any and the
//! host path it maps to ([`FileAttempt`](crate::attempts::FileAttempt)),
//! into the run's [`FilesSeen`]. It shadows wasmtime-wasi's
//! `wasi:filesystem/types` and `wasi:filesystem/preopens` in the linker
//! ([`add_to_linker`]); it decides nothing, so a guest sees exactly what it
//! saw without it.
//!
//! How a path is known: every descriptor the guest holds comes from
//! `preopens.get-directories` (its path is the preopen's guest path) or
//! from a successful `open-at` (its descriptor's path joined with the
//! relative path the guest passed). Each is kept by resource rep, with the
//! preopen it descends from, and forgotten when the guest drops it. Paths
//! are joined and normalised lexically ([`join`]): the host filesystem is
//! never consulted, so symbolic links are not followed.
//!
//! What records what, each counted once per guest path, operation and
//! error code; a trap (an error that is no WASI error code) is not
//! recorded:
//!
//! | function | operation |
//! |---|---|
//! | `open-at` | `create` with the `create` open flag, else `write` when asking to write or truncate, else `read` |
//! | `stat-at`, `metadata-hash-at`, `readlink-at` | `read` |
//! | `set-times-at` | `write` |
//! | `create-directory-at`, `link-at` and `symlink-at` (their new path) | `create` |
//! | `unlink-file-at`, `remove-directory-at` | `remove` |
//! | `rename-at` | `remove` of the source, `create` of the destination |
//! | `read-directory` | `list` of the descriptor's own path |
//!
//! Reads and writes through an open descriptor (`read`, `write`, the
//! streams, `set-size`) add nothing: the open recorded them.

mod observed;
mod taped;

use std::collections::HashMap;
use std::path::PathBuf;

use wasmtime::component::Linker;
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::p2::bindings::filesystem::{preopens, types};

use super::SandboxState;
use crate::attempts::{Attempts, FileOp, MAX_PATH_BYTES, cut};
use crate::grants::Grants;
use observed::{Observe, observed};

/// Descriptors whose guest path is kept at once: 4 096 (each path at most
/// [`MAX_PATH_BYTES`]). An operation through a descriptor past the bound is
/// counted in [`Attempts::dropped`] only.
pub(crate) const MAX_DESCRIPTORS: usize = 4096;

/// Adds the recording `wasi:filesystem/types` and `wasi:filesystem/preopens`
/// over wasmtime-wasi's (which must be in `linker` already, from
/// `wasmtime_wasi::p2::add_to_linker_async`), shadowing them.
///
/// # Errors
/// When the bindings cannot be added.
pub(super) fn add_to_linker(linker: &mut Linker<SandboxState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let added = types::add_to_linker::<SandboxState, Observe>(linker, observed)
        .and_then(|()| preopens::add_to_linker::<SandboxState, Observe>(linker, observed));
    linker.allow_shadowing(false);
    added
}

/// A preopened directory, as the guest and the host name it.
#[derive(Debug)]
struct Preopen {
    /// Its guest path, normalised.
    guest: String,
    /// Its host directory; `None` for the learning root (no grant).
    host: Option<PathBuf>,
}

/// Where an operation goes: a normalised guest path and the preopen (an
/// index into [`FilesSeen::preopens`]) it goes through.
#[derive(Debug, Clone)]
struct Target {
    path: String,
    preopen: usize,
}

/// One run's filesystem record: the preopens, the guest path of each
/// descriptor the guest holds, and the attempts so far.
#[derive(Debug, Default)]
pub(crate) struct FilesSeen {
    /// In the order [`Grants::apply`] preopens them.
    preopens: Vec<Preopen>,
    /// By resource rep; at most [`MAX_DESCRIPTORS`].
    descriptors: HashMap<u32, Target>,
    /// Only `files` and `dropped` are used.
    attempts: Attempts,
    /// The guest path of each directory listing, by resource rep, while a
    /// tape records or replays them; at most [`MAX_DESCRIPTORS`].
    listings: HashMap<u32, String>,
}

impl FilesSeen {
    /// A record for a run under `grants`: its directories, then its
    /// learning root, as [`Grants::apply`] preopens them.
    pub(crate) fn new(grants: &Grants) -> Self {
        let mut preopens: Vec<Preopen> = grants
            .dirs
            .iter()
            .map(|dir| Preopen {
                guest: join("/", &dir.guest),
                host: Some(dir.host.clone()),
            })
            .collect();
        if grants.learning_root.is_some() {
            preopens.push(Preopen {
                guest: "/".to_owned(),
                host: None,
            });
        }
        Self {
            preopens,
            ..Self::default()
        }
    }

    /// Moves the file attempts into `attempts`, adding what was dropped.
    pub(crate) fn report(&mut self, attempts: &mut Attempts) {
        let seen = std::mem::take(&mut self.attempts);
        attempts.files = seen.files;
        attempts.dropped = attempts.dropped.saturating_add(seen.dropped);
    }

    /// The preopen named `name` in `get-directories`' `index`th place.
    fn preopen_of(&self, index: usize, name: &str) -> Option<usize> {
        let name = join("/", name);
        match self.preopens.get(index) {
            Some(p) if p.guest == name => Some(index),
            _ => self.preopens.iter().position(|p| p.guest == name),
        }
    }

    fn listing(&mut self, rep: u32, path: String) {
        if self.listings.len() < MAX_DESCRIPTORS {
            self.listings.insert(rep, path);
        }
    }

    fn learn(&mut self, rep: u32, target: Target) {
        if self.descriptors.len() < MAX_DESCRIPTORS || self.descriptors.contains_key(&rep) {
            self.descriptors.insert(rep, target);
        }
    }

    /// `rel` from the descriptor `rep`; `None` when the descriptor is not
    /// known.
    fn target(&self, rep: u32, rel: &str) -> Option<Target> {
        let from = self.descriptors.get(&rep)?;
        let mut path = join(&from.path, rel);
        path.truncate(cut(&path, MAX_PATH_BYTES).len());
        Some(Target {
            path,
            preopen: from.preopen,
        })
    }

    /// Counts `op` on `target` with the verdict of `result`: nothing for a
    /// trap, a drop when the target is unknown.
    fn record<T>(&mut self, target: Option<&Target>, op: FileOp, result: &FsResult<T>) {
        let error = match result {
            Ok(_) => None,
            Err(err) => match err.downcast_ref() {
                Some(code) => Some(code.name()),
                None => return,
            },
        };
        match target {
            Some(target) => {
                let host = self
                    .preopens
                    .get(target.preopen)
                    .and_then(|p| host_path(p.host.as_ref()?, &p.guest, &target.path));
                self.attempts.file(&target.path, op, host, error);
            }
            None => self.attempts.dropped = self.attempts.dropped.saturating_add(1),
        }
    }
}

/// `rel` resolved from the absolute, normalised `base`, lexically: empty
/// and `.` segments dropped, `..` removing the segment before it (never
/// above `/`). An absolute `rel` starts again from `/`.
pub(crate) fn join(base: &str, rel: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    let start = if rel.starts_with('/') { "" } else { base };
    for segment in start.split('/').chain(rel.split('/')) {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            segment => segments.push(segment),
        }
    }
    let mut path = String::with_capacity(base.len() + rel.len() + 1);
    for segment in &segments {
        path.push('/');
        path.push_str(segment);
    }
    if path.is_empty() {
        path.push('/');
    }
    path
}

/// The rest of the normalised `path` under the normalised `prefix`
/// (component-wise: `/notes` is not under `/no`), without a leading `/`.
pub(crate) fn under<'p>(prefix: &str, path: &'p str) -> Option<&'p str> {
    if prefix == "/" {
        return Some(path.trim_start_matches('/'));
    }
    match path.strip_prefix(prefix)? {
        "" => Some(""),
        rest => rest.strip_prefix('/'),
    }
}

/// The host path of the normalised guest `path` through a preopen at
/// `guest` mapped to `host`; `None` when `path` is not under `guest`.
pub(crate) fn host_path(host: &std::path::Path, guest: &str, path: &str) -> Option<String> {
    let rest = under(guest, path)?;
    let joined = if rest.is_empty() {
        host.to_path_buf()
    } else {
        host.join(rest)
    };
    Some(joined.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::observed::open_op;
    use super::*;
    use crate::grants::DirGrant;
    use wasmtime_wasi::p2::FsError;
    use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;

    #[test]
    fn paths_are_joined_and_normalised_lexically() {
        assert_eq!(join("/notes", "a.txt"), "/notes/a.txt");
        assert_eq!(join("/notes", "."), "/notes");
        assert_eq!(join("/notes", ""), "/notes");
        assert_eq!(join("/notes", "./sub//b/./c/"), "/notes/sub/b/c");
        assert_eq!(join("/notes", "sub/../a"), "/notes/a");
        assert_eq!(join("/notes", "../etc/passwd"), "/etc/passwd");
        assert_eq!(join("/notes", "../../../../x"), "/x");
        assert_eq!(join("/", ".."), "/");
        assert_eq!(join("/", "notes"), "/notes");
        assert_eq!(join("/notes", "/etc//hosts"), "/etc/hosts");
        assert_eq!(join("/a/b", "..//..//.."), "/");
    }

    #[test]
    fn host_paths_follow_the_preopen_component_wise() {
        let host = Path::new("/srv/notes");
        assert_eq!(under("/notes", "/notes"), Some(""));
        assert_eq!(under("/notes", "/notes/a/b"), Some("a/b"));
        assert_eq!(under("/notes", "/notesx"), None);
        assert_eq!(under("/notes", "/etc"), None);
        assert_eq!(under("/", "/etc/hosts"), Some("etc/hosts"));
        assert_eq!(
            host_path(host, "/notes", "/notes/a/b").as_deref(),
            Some("/srv/notes/a/b")
        );
        assert_eq!(
            host_path(host, "/notes", "/notes").as_deref(),
            Some("/srv/notes")
        );
        assert_eq!(host_path(host, "/notes", "/etc/passwd"), None);
    }

    #[test]
    fn open_flags_name_the_operation() {
        use types::{DescriptorFlags as D, OpenFlags as O};
        assert_eq!(open_op(O::CREATE | O::TRUNCATE, D::WRITE), FileOp::Create);
        assert_eq!(open_op(O::empty(), D::READ | D::WRITE), FileOp::Write);
        assert_eq!(open_op(O::TRUNCATE, D::READ), FileOp::Write);
        assert_eq!(open_op(O::empty(), D::READ), FileOp::Read);
        assert_eq!(
            open_op(O::DIRECTORY, D::READ | D::MUTATE_DIRECTORY),
            FileOp::Read
        );
    }

    /// Descriptors learnt from the preopens and from opens, operations
    /// recorded through them with the host path of the preopen they went
    /// through, traps not recorded, unknown descriptors dropped.
    #[test]
    fn operations_are_recorded_through_the_descriptor_they_use() {
        let grants = Grants {
            dirs: vec![DirGrant {
                host_as_written: "notes".into(),
                host: "/srv/notes".into(),
                guest: "/notes".into(),
                writable: false,
            }],
            learning_root: Some("/tmp/empty".into()),
            ..Grants::none()
        };
        let mut seen = FilesSeen::new(&grants);
        assert_eq!(seen.preopen_of(0, "/notes"), Some(0));
        assert_eq!(seen.preopen_of(1, "/"), Some(1));
        assert_eq!(seen.preopen_of(0, "/"), Some(1));
        assert_eq!(seen.preopen_of(0, "/elsewhere"), None);
        seen.learn(
            7,
            Target {
                path: "/notes".into(),
                preopen: 0,
            },
        );
        seen.learn(
            8,
            Target {
                path: "/".into(),
                preopen: 1,
            },
        );

        let ok: FsResult<()> = Ok(());
        let not_permitted: FsResult<()> = Err(ErrorCode::NotPermitted.into());
        let trap: FsResult<()> = Err(FsError::trap(wasmtime::format_err!("table full")));

        let sub = seen.target(7, "sub").unwrap();
        seen.learn(9, sub);
        let file = seen.target(9, "../a.txt").unwrap();
        assert_eq!(file.path, "/notes/a.txt");
        seen.record(Some(&file), FileOp::Read, &ok);
        seen.record(Some(&file), FileOp::Read, &ok);
        seen.record(Some(&file), FileOp::Create, &not_permitted);
        seen.record(Some(&file), FileOp::Remove, &trap);
        // Through the learning root: no host path, even under a grant's path.
        let outside = seen.target(8, "notes/a.txt").unwrap();
        seen.record(Some(&outside), FileOp::Read, &not_permitted);
        // Climbing out of the grant it went through: no host path.
        let escape = seen.target(7, "../etc/passwd").unwrap();
        seen.record(Some(&escape), FileOp::Read, &not_permitted);
        // Through a descriptor it does not know.
        assert!(seen.target(42, "x").is_none());
        seen.record(None, FileOp::Read, &ok);
        seen.descriptors.remove(&9);
        assert!(seen.target(9, "x").is_none());

        let mut attempts = Attempts {
            dropped: 2,
            ..Attempts::default()
        };
        seen.report(&mut attempts);
        assert_eq!(attempts.dropped, 3);
        let files: Vec<_> = attempts
            .files
            .iter()
            .map(|a| {
                (
                    a.guest_path.as_str(),
                    a.op.as_str(),
                    a.host_path.as_deref(),
                    a.error.as_deref(),
                    a.count,
                )
            })
            .collect();
        assert_eq!(
            files,
            [
                ("/notes/a.txt", "read", Some("/srv/notes/a.txt"), None, 2),
                (
                    "/notes/a.txt",
                    "create",
                    Some("/srv/notes/a.txt"),
                    Some("not-permitted"),
                    1
                ),
                ("/notes/a.txt", "read", None, Some("not-permitted"), 1),
                ("/etc/passwd", "read", None, Some("not-permitted"), 1),
            ]
        );
    }

    #[test]
    fn known_descriptors_and_their_paths_are_bounded() {
        let mut seen = FilesSeen::new(&Grants::none());
        let long = format!("/{}", "a".repeat(3 * MAX_PATH_BYTES));
        for rep in 0..(MAX_DESCRIPTORS as u32 + 10) {
            let target = Target {
                path: "/".into(),
                preopen: 0,
            };
            seen.learn(rep, target);
        }
        assert_eq!(seen.descriptors.len(), MAX_DESCRIPTORS);
        let target = seen.target(0, &long).unwrap();
        assert_eq!(target.path.len(), MAX_PATH_BYTES);
    }
}
