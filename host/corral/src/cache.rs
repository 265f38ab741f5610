//! The on-disk cache of precompiled components, and [`compile`], the one
//! place a file's bytes become a component (with the load error each way
//! that can fail).
//!
//! Compiling a component takes 100 ms (a small Rust guest) to 10 s (a Python or
//! JavaScript one); loading the precompiled artifact takes well under a
//! millisecond. Entries are keyed by the sha256 of the component bytes and by
//! the engine's compatibility hash (wasmtime version and every setting that
//! affects code generation), so a changed plugin or engine never hits a stale
//! entry.
//!
//! Safety: `Component::deserialize` trusts its input, since it is native
//! code. Only files this module wrote itself, under a key derived from content
//! and engine, are ever deserialized; the directory is created with mode 0700.
//! Anyone who can write to the cache directory can run code as the host user,
//! so do not point it at a shared location.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use wasmtime::component::Component;

use crate::engine::Engine;

/// Where precompiled components are kept. `None` disables caching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentCache {
    dir: Option<PathBuf>,
}

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheOutcome {
    /// Loaded from a precompiled file.
    Hit,
    /// Compiled now (and stored, when the cache is enabled).
    Compiled,
}

impl ComponentCache {
    /// A cache in `dir`, created on first write.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Some(dir.into()),
        }
    }

    /// No cache: every load compiles.
    pub fn disabled() -> Self {
        Self { dir: None }
    }

    /// The per-user default: `$XDG_CACHE_HOME/corral`, else `$HOME/.cache/corral`,
    /// else disabled.
    pub fn user_default() -> Self {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
        Self {
            dir: base.map(|b| b.join("corral")),
        }
    }

    /// The cache directory, if caching is enabled.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Whether the cache holds the compiled form of the component whose
    /// sha256 is `sha256`, for this engine (a disabled cache holds nothing).
    pub(crate) fn has_entry(&self, engine: &Engine, sha256: &str) -> bool {
        self.dir
            .as_ref()
            .is_some_and(|dir| entry_path(dir, engine, sha256).is_file())
    }

    /// Returns the compiled component for `bytes` (whose sha256 is `sha256`),
    /// from the cache when possible. A cache that cannot be read or written is
    /// logged and bypassed, never fatal.
    ///
    /// # Errors
    /// When the bytes are not a valid component for this engine.
    pub(crate) fn load_or_compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
        sha256: &str,
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let Some(dir) = &self.dir else {
            return Ok((
                Component::new(engine.wasmtime(), bytes)?,
                CacheOutcome::Compiled,
            ));
        };
        let path = entry_path(dir, engine, sha256);
        // Read into memory rather than `deserialize_file`'s mmap: a cache file
        // truncated by someone else while mapped would SIGBUS the whole host.
        // The copy costs about 0.2 ms per plugin at load.
        if let Ok(artifact) = std::fs::read(&path) {
            // SAFETY: the file name is derived from the content hash and the
            // engine's compatibility hash, and only `store` below writes such
            // names, atomically, into a directory only this user can write.
            match unsafe { Component::deserialize(engine.wasmtime(), &artifact) } {
                Ok(component) => return Ok((component, CacheOutcome::Hit)),
                Err(err) => tracing::warn!(
                    path = %path.display(),
                    "ignoring unusable cache entry, recompiling: {err:#}"
                ),
            }
        }
        let component = Component::new(engine.wasmtime(), bytes)?;
        if let Err(err) = store(dir, &path, &component) {
            tracing::warn!(dir = %dir.display(), "cannot write to the component cache: {err:#}");
        }
        Ok((component, CacheOutcome::Compiled))
    }
}

/// The cache entry of the component `sha256` compiled by `engine`.
fn entry_path(dir: &Path, engine: &Engine, sha256: &str) -> PathBuf {
    dir.join(format!("{sha256}-{}.cwasm", engine_key(engine)))
}

/// A short hex digest of the engine's compatibility hash.
fn engine_key(engine: &Engine) -> String {
    let mut hasher = DefaultHasher::new();
    engine
        .wasmtime()
        .precompile_compatibility_hash()
        .hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// Writes the serialized component next to its final name, then renames it, so
/// a reader never sees a half-written entry.
fn store(dir: &Path, path: &Path, component: &Component) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    create_private_dir(dir)?;
    let bytes = component
        .serialize()
        .map_err(|err| std::io::Error::other(format!("{err:#}")))?;
    let tmp = path.with_extension(format!(
        "tmp.{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(())
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

const WASM_MAGIC: &[u8; 4] = b"\0asm";
const CORE_VERSION: [u8; 4] = [1, 0, 0, 0];

/// Compiles the component `bytes` (whose sha256 is `sha256`), or loads it
/// from `cache`: the one place a file becomes a [`Component`] (loading and
/// [`Host::inspect`](crate::Host::inspect)).
///
/// # Errors
/// [`LoadErrorReason::NotWasm`], [`LoadErrorReason::CoreModule`],
/// [`LoadErrorReason::MemoryTooLarge`], [`LoadErrorReason::AsyncAbi`] or
/// [`LoadErrorReason::InvalidComponent`].
pub(crate) fn compile(
    engine: &Engine,
    cache: &ComponentCache,
    bytes: &[u8],
    sha256: &str,
) -> Result<(Component, CacheOutcome), crate::error::LoadErrorReason> {
    if bytes.len() < 8 || &bytes[..4] != WASM_MAGIC {
        return Err(crate::error::LoadErrorReason::NotWasm);
    }
    if bytes[4..8] == CORE_VERSION {
        return Err(crate::error::LoadErrorReason::CoreModule);
    }
    cache.load_or_compile(engine, bytes, sha256).map_err(|e| {
        let cause = format!("{:#}", e.root_cause());
        if cause.contains("minimum byte size") {
            crate::error::LoadErrorReason::MemoryTooLarge(cause)
        } else if cause.contains("component model async") {
            crate::error::LoadErrorReason::AsyncAbi(cause)
        } else {
            crate::error::LoadErrorReason::InvalidComponent(cause)
        }
    })
}
