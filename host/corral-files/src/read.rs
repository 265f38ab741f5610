//! Reading a file beside the plugins under the cap of its kind: the one
//! rule for every file corral reads whole other than a component (a
//! component's cap is the host's `max_plugin_bytes`, passed as
//! [`Kind::Plugin`]).
//!
//! | kind | file | cap |
//! |---|---|---|
//! | [`Kind::Policy`] | `NAME.policy.toml` | 256 KiB |
//! | [`Kind::Groups`] | `groups.toml` | 1 MiB |
//! | [`Kind::Disclosure`] | `disclosure.toml` | 1 MiB |
//! | [`Kind::Quotas`] | the host's quotas file (`serve --quotas`) | 1 MiB |
//! | [`Kind::Tokens`] | HTTP callers' tokens and tenants (`serve --tokens`) | 1 MiB |
//! | [`Kind::Evidence`] | `NAME.evidence.json` in the evidence directory | 4 MiB |
//! | [`Kind::Pipelines`] | `pipelines.json` | 4 MiB |
//! | [`Kind::Lock`] | `corral.lock` | 4 MiB |
//! | [`Kind::Secrets`] | the secret store's file | 1 MiB |
//! | [`Kind::Recording`] | a recording of a run, `*.rec` | 64 MiB |
//! | [`Kind::StandingApprovals`] | the standing-approvals file | 16 MiB |
//! | [`Kind::SignatureEvidence`] | `NAME.wasm.sig`, `.sigstore.json`, `.cosign.json` | 1 MiB |
//! | [`Kind::Key`] | a public key, a trusted root | 1 MiB |
//! | [`Kind::Wit`] | `NAME.wit` beside an any-component plugin | 4 MiB |
//! | [`Kind::DigestMemo`] | a plugin file's remembered sha256 in the component cache | 1 KiB |
//! | [`Kind::Plugin`] | a component (`corral verify`'s read) | the caller's |
//!
//! Each cap is far above what a real file of its kind holds (a policy is a
//! few KiB; a Sigstore bundle about 10 KiB), so it refuses only a mistake
//! or an attack: a file that would cost the host memory out of proportion.
//! A file is read through a symlink (a Kubernetes ConfigMap mounts its
//! files as symlinks), and must then be a regular file.

use std::io::Read as _;
use std::path::{Path, PathBuf};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// The default cap on a component's size: 256 MiB, in bytes. A Python
/// component built by componentize-py is about 40 MiB; a Rust one is well
/// under 1 MiB. The host's `max_plugin_bytes` overrides it.
pub const DEFAULT_MAX_PLUGIN_BYTES: u64 = 256 * MIB;

/// Opens `path` for reading without blocking on a FIFO (a named pipe
/// planted where a file should be would otherwise hang the reader until
/// someone writes to it); the caller then checks that it is a regular file.
///
/// # Errors
/// The I/O error of opening it.
pub fn open_for_reading(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    options.open(path)
}

/// A kind of file corral reads whole, with its cap (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// A plugin's policy, `NAME.policy.toml`.
    Policy,
    /// The tool groups, `groups.toml`.
    Groups,
    /// The facades of progressive disclosure, `disclosure.toml`.
    Disclosure,
    /// The host's tenant quotas (`corral serve --quotas FILE`).
    Quotas,
    /// The bearer tokens of HTTP callers and their tenants (`corral serve
    /// --tokens FILE`).
    Tokens,
    /// A plugin's evidence, `NAME.evidence.json` in the evidence directory.
    Evidence,
    /// The pipelines, `pipelines.json`.
    Pipelines,
    /// The plugin directory's lock file, `corral.lock`.
    Lock,
    /// The secret store's file.
    Secrets,
    /// The standing approvals that replicas share.
    StandingApprovals,
    /// A plugin's signature evidence (`.sig`, a Sigstore bundle, a pull's
    /// `.cosign.json`).
    SignatureEvidence,
    /// A public key or a Sigstore trusted root.
    Key,
    /// The WIT beside an any-component plugin, for its docs.
    Wit,
    /// A recording of a run (`corral replay`).
    Recording,
    /// The sha256 the loader remembers of a plugin file, in the component
    /// cache's `digests/` (one line).
    DigestMemo,
    /// A component, with the host's cap in bytes.
    Plugin {
        /// The cap, in bytes (the host's `max_plugin_bytes`).
        max_bytes: u64,
    },
}

impl Kind {
    /// The most bytes a file of this kind may hold.
    pub const fn cap(self) -> u64 {
        match self {
            Self::Policy => 256 * KIB,
            Self::Groups | Self::Disclosure | Self::Quotas | Self::Tokens | Self::Secrets => MIB,
            Self::Pipelines | Self::Lock | Self::Wit | Self::Evidence => 4 * MIB,
            Self::StandingApprovals => 16 * MIB,
            Self::SignatureEvidence | Self::Key => MIB,
            Self::Recording => 64 * MIB,
            Self::DigestMemo => KIB,
            Self::Plugin { max_bytes } => max_bytes,
        }
    }

    /// What the file is, for a message.
    pub const fn what(self) -> &'static str {
        match self {
            Self::Policy => "a policy",
            Self::Groups => "the tool groups file",
            Self::Disclosure => "the facades file",
            Self::Quotas => "the quotas file",
            Self::Tokens => "the tokens file",
            Self::Evidence => "an evidence file",
            Self::Pipelines => "the pipelines file",
            Self::Lock => "the lock file",
            Self::Secrets => "the secret store",
            Self::StandingApprovals => "the standing approvals",
            Self::SignatureEvidence => "signature evidence",
            Self::Key => "a key or trusted root",
            Self::Wit => "a WIT file",
            Self::Recording => "a recording",
            Self::DigestMemo => "a digest memo",
            Self::Plugin { .. } => "a component",
        }
    }
}

/// Why a file could not be read under its cap. Shown as `PATH: REASON`;
/// [`ReadError::reason`] is the part after the path, for a caller that
/// names the file itself.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", self.path().display(), self.reason())]
#[non_exhaustive]
pub enum ReadError {
    /// The file cannot be opened or read.
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file (after symlinks) is not a regular file.
    NotAFile {
        /// The file.
        path: PathBuf,
        /// What it was read as.
        kind: Kind,
    },
    /// The file holds more than its kind's cap.
    TooLarge {
        /// The file.
        path: PathBuf,
        /// What it was read as (and so its cap).
        kind: Kind,
    },
    /// The file is not UTF-8 text ([`read_text`]).
    NotText {
        /// The file.
        path: PathBuf,
        /// What it was read as.
        kind: Kind,
    },
}

impl ReadError {
    /// What is wrong with the file, without its path: `cannot read it: …`,
    /// `is larger than the cap of N bytes for a policy; …`.
    pub fn reason(&self) -> String {
        match self {
            Self::Io { source, .. } => format!("cannot read it: {source}"),
            Self::NotAFile { kind, .. } => {
                format!("is not a regular file; {} must be one", kind.what())
            }
            Self::TooLarge { kind, .. } => format!(
                "is larger than the cap of {} bytes for {}; a real one is far smaller: check \
                 what wrote it",
                kind.cap(),
                kind.what()
            ),
            Self::NotText { kind, .. } => format!("is not UTF-8 text; {} must be", kind.what()),
        }
    }

    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::Io { path, .. }
            | Self::NotAFile { path, .. }
            | Self::TooLarge { path, .. }
            | Self::NotText { path, .. } => path,
        }
    }
}

/// For callers whose errors hold an I/O error: an I/O failure is itself,
/// anything else an `InvalidData` error with this error's message (which
/// names the file, its kind and its cap).
impl From<ReadError> for std::io::Error {
    fn from(err: ReadError) -> Self {
        match err {
            ReadError::Io { source, .. } => source,
            other => std::io::Error::new(std::io::ErrorKind::InvalidData, other.reason()),
        }
    }
}

/// The bytes of `path`, a file of `kind`, read under its cap; `None` when
/// there is no such file (an optional file, absent).
///
/// # Errors
/// [`ReadError::Io`] when it cannot be opened or read (other than absent),
/// [`ReadError::NotAFile`] when it is a directory or another special file,
/// [`ReadError::TooLarge`] over the cap (at most the cap and one byte are
/// read to tell).
pub fn read_bytes(path: &Path, kind: Kind) -> Result<Option<Vec<u8>>, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match open_for_reading(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io(err)),
    };
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile {
            path: path.to_path_buf(),
            kind,
        });
    }
    let cap = kind.cap();
    if meta.len() > cap {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            kind,
        });
    }
    // The length can change between the stat and the read: read at most one
    // byte past the cap to tell.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            kind,
        });
    }
    Ok(Some(bytes))
}

/// The text of `path`, a file of `kind`, read under its cap; `None` when
/// there is no such file.
///
/// # Errors
/// As [`read_bytes`], and [`ReadError::NotText`] when it is not UTF-8.
pub fn read_text(path: &Path, kind: Kind) -> Result<Option<String>, ReadError> {
    read_bytes(path, kind)?
        .map(|bytes| {
            String::from_utf8(bytes).map_err(|_| ReadError::NotText {
                path: path.to_path_buf(),
                kind,
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_whole_under_its_cap_and_refused_above_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.policy.toml");
        assert!(read_text(&path, Kind::Policy).unwrap().is_none(), "absent");
        std::fs::write(&path, "version = 1\n").unwrap();
        assert_eq!(
            read_text(&path, Kind::Policy).unwrap().as_deref(),
            Some("version = 1\n")
        );
        let cap = Kind::Policy.cap() as usize;
        std::fs::write(&path, "#".repeat(cap)).unwrap();
        assert_eq!(read_bytes(&path, Kind::Policy).unwrap().unwrap().len(), cap);
        std::fs::write(&path, "#".repeat(cap + 1)).unwrap();
        let err = read_text(&path, Kind::Policy).unwrap_err();
        assert!(matches!(err, ReadError::TooLarge { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("p.policy.toml") && text.contains("262144 bytes for a policy"),
            "{text}"
        );
    }

    #[test]
    fn a_directory_or_binary_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_text(dir.path(), Kind::Groups).unwrap_err();
        assert!(matches!(err, ReadError::NotAFile { .. }), "{err:?}");
        let path = dir.path().join("groups.toml");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        let err = read_text(&path, Kind::Groups).unwrap_err();
        assert!(
            err.to_string().contains("groups.toml: is not UTF-8"),
            "{err}"
        );
        assert_eq!(err.path(), path);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipelines.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let err = read_text(&path, Kind::Pipelines).unwrap_err();
        assert!(matches!(err, ReadError::NotAFile { .. }), "{err:?}");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_is_read_through_a_symlink_as_a_config_map_mounts_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("..data")).unwrap();
        std::fs::write(dir.path().join("..data/p.policy.toml"), "version = 1\n").unwrap();
        let link = dir.path().join("p.policy.toml");
        std::os::unix::fs::symlink("..data/p.policy.toml", &link).unwrap();
        assert!(read_text(&link, Kind::Policy).unwrap().is_some());
    }
}
