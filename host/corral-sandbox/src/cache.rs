//! The on-disk cache of precompiled components, and [`compile`], the one
//! place a file's bytes become a component (with the load error each way
//! that can fail).
//!
//! Compiling a component takes 100 ms (a small Rust guest) to 10 s (a Python or
//! JavaScript one); loading the precompiled artifact takes well under a
//! millisecond. Entries are keyed by the sha256 of the component bytes and by
//! the engine's compatibility hash (wasmtime version and every setting that
//! affects code generation), so a changed plugin or engine never hits a stale
//! entry. Hosts (processes, or threads of one) that miss the same entry at
//! the same time compile it once: one compiles under the entry's make-once
//! lock (`corral_files::produce_once`) while the others wait, then load what
//! it stored.
//!
//! Safety: `Component::deserialize` trusts its input, since it is native
//! code. Only files this module wrote itself, under a key derived from content
//! and engine, are ever deserialized; the directory is created with mode 0700.
//! Each entry ends in a trailer (CRC-32 and length of the serialized
//! component, [`TRAILER_LEN`] bytes), checked before `deserialize` sees a
//! byte: a truncated or bit-flipped entry (a full disk, a crash, a bad
//! sector) is recompiled and rewritten, never run. The checksum catches
//! accidents, not an attacker: anyone who can write to the cache directory
//! can run code as the host user, so do not point it at a shared location.
//!
//! The directory also holds the digest memo (`digests.rs`): the sha256 of
//! each plugin file as it was when last hashed, so that
//! [`ComponentCache::plugin_file`] answers a warm start's digest from a
//! `stat` instead of reading and hashing the file.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use sha2::{Digest as _, Sha256};
use wasmtime::component::Component;

use crate::engine::Engine;
use crate::error::ComponentError;

mod digests;
mod whole;

/// A plugin file's sha256, and its bytes when they were read
/// ([`ComponentCache::plugin_file`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginFile {
    /// The sha256 of its bytes, lowercase hex.
    pub sha256: String,
    /// Its bytes; `None` when the digest memo answered for them and the
    /// cache holds their compiled form (load it with [`compile_cached`]).
    pub bytes: Option<Vec<u8>>,
}

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
    pub fn has_entry(&self, engine: &Engine, sha256: &str) -> bool {
        self.dir
            .as_ref()
            .is_some_and(|dir| entry_path(dir, engine, sha256).is_file())
    }

    /// Returns the compiled component for `bytes` (whose sha256 is `sha256`),
    /// from the cache when possible. On a miss, a host that is compiling the
    /// same entry already (another thread, or another process sharing the
    /// directory) is waited for, and what it stored is loaded
    /// ([`CacheOutcome::Hit`]). A cache that cannot be read or written is
    /// logged and bypassed, never fatal.
    ///
    /// # Errors
    /// When the bytes are not a valid component for this engine.
    pub fn load_or_compile(
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
        if let Some(component) = read_entry(engine, &path, true) {
            return Ok((component, CacheOutcome::Hit));
        }
        // Hosts (or threads) that miss the same entry at once compile it
        // once: the others wait, then read what the first stored. Where the
        // directory cannot be made, the lock is skipped and `store` says why.
        let _ = corral_files::create_private_dir(dir);
        corral_files::produce_once(
            &path,
            || read_entry(engine, &path, false).map(|c| (c, CacheOutcome::Hit)),
            || {
                let component = Component::new(engine.wasmtime(), bytes)?;
                if let Err(err) = store(dir, &path, &component) {
                    warn_unwritable(dir, &err);
                }
                Ok((component, CacheOutcome::Compiled))
            },
        )
    }

    /// The sha256 of the plugin file `path` (at most `max_bytes`), and its
    /// bytes unless they are not needed: when `need_bytes` is false, the
    /// digest memo holds the file's digest in its present state (same
    /// device, inode, size, modification and change time) and the cache
    /// holds its compiled form for `engine`, the file is opened and
    /// `stat`ed but not read. Otherwise it is read and hashed, and the
    /// digest is remembered when the file's change time is settled (at
    /// least 1 s old). A disabled cache remembers nothing.
    ///
    /// # Errors
    /// As [`read_plugin`](crate::read_plugin): not a regular file, over
    /// `max_bytes`, not wasm (when read), or an I/O error.
    pub fn plugin_file(
        &self,
        engine: &Engine,
        path: &Path,
        max_bytes: u64,
        need_bytes: bool,
    ) -> Result<PluginFile, ComponentError> {
        let (file, meta) = crate::files::open_plugin(path, max_bytes)?;
        let now = std::time::SystemTime::now();
        if let Some(dir) = &self.dir
            && !need_bytes
            && let Some(sha256) = digests::recall(dir, &meta)
            && self.has_entry(engine, &sha256)
        {
            return Ok(PluginFile {
                sha256,
                bytes: None,
            });
        }
        let bytes = crate::files::read_opened(file, &meta, max_bytes)?;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        if let Some(dir) = &self.dir {
            digests::remember(dir, &meta, &sha256, now);
        }
        Ok(PluginFile {
            sha256,
            bytes: Some(bytes),
        })
    }

    /// Removes the temporary files of cache writers that were killed
    /// (`corral_files::sweep`); the host does it once as it builds.
    pub fn sweep(&self) {
        if let Some(dir) = &self.dir {
            corral_files::sweep(dir, None);
        }
    }
}

/// The component in the cache entry at `path`, when there is one that is
/// whole and usable; a corrupt or unusable one is logged (when `warn`) and
/// answered as none, so that it is compiled again and rewritten.
fn read_entry(engine: &Engine, path: &Path, warn: bool) -> Option<Component> {
    // Read into memory (huge pages for a large entry, `whole.rs`) rather
    // than `deserialize_file`'s mmap: a cache file truncated by someone else
    // while mapped would SIGBUS the whole host.
    let entry = whole::read(path).ok()?;
    let why = match unseal(&entry) {
        // SAFETY: the file name is derived from the content hash and the
        // engine's compatibility hash, only `store` writes such names,
        // atomically, into a directory only this user can write, and its
        // trailer says it is whole as written.
        Ok(artifact) => match unsafe { Component::deserialize(engine.wasmtime(), artifact) } {
            Ok(component) => return Some(component),
            Err(err) => format!("an unusable cache entry ({err:#})"),
        },
        Err(why) => format!("a corrupt cache entry ({why})"),
    };
    if warn {
        tracing::warn!(path = %path.display(), "ignoring {why}, recompiling");
    }
    None
}

/// A read-only or full cache directory: the host serves from memory, and
/// says so once rather than for every plugin.
fn warn_unwritable(dir: &Path, err: &std::io::Error) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if WARNED.swap(true, Ordering::Relaxed) {
        tracing::debug!(dir = %dir.display(), "cannot write to the component cache: {err:#}");
    } else {
        tracing::warn!(
            dir = %dir.display(),
            "cannot write to the component cache, serving compiled plugins from memory \
             (later plugins compile again on the next start; further failures are \
             logged at debug level): {err:#}"
        );
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

/// The last bytes of a cache entry: [`TRAILER_LEN`] bytes of CRC-32 (IEEE,
/// little-endian `u32`) and length (little-endian `u64`) of the serialized
/// component before them, then these 4 bytes.
const TRAILER_MAGIC: &[u8; 4] = b"CRL1";

/// Bytes of a cache entry's trailer.
const TRAILER_LEN: usize = 16;

/// A cache entry: the serialized component `artifact` and its trailer.
fn seal(mut artifact: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&artifact);
    let len = artifact.len() as u64;
    artifact.extend_from_slice(&crc.to_le_bytes());
    artifact.extend_from_slice(&len.to_le_bytes());
    artifact.extend_from_slice(TRAILER_MAGIC);
    artifact
}

/// The serialized component inside cache entry `entry`.
///
/// # Errors
/// Why the entry is not whole as written: shorter than a trailer, no
/// trailer (truncated, or written by a corral before the trailer), a length
/// or checksum that does not match.
fn unseal(entry: &[u8]) -> Result<&[u8], &'static str> {
    let Some(split) = entry.len().checked_sub(TRAILER_LEN) else {
        return Err("shorter than its trailer");
    };
    let (artifact, trailer) = entry.split_at(split);
    let (crc, rest) = trailer.split_at(4);
    let (len, magic) = rest.split_at(8);
    if magic != TRAILER_MAGIC {
        return Err("no trailer: truncated, or written by an older corral");
    }
    let word = |b: &[u8]| {
        b.iter()
            .rev()
            .fold(0u64, |n, &byte| n << 8 | u64::from(byte))
    };
    if word(len) != artifact.len() as u64 {
        return Err("its length does not match its trailer");
    }
    if word(crc) != u64::from(crc32fast::hash(artifact)) {
        return Err("its checksum does not match");
    }
    Ok(artifact)
}

/// Writes the serialized component whole (`corral_files::write_whole`), so
/// a reader never sees a half-written entry. Not synced: the trailer
/// catches an entry a power loss cut short, and it is rebuilt.
fn store(dir: &Path, path: &Path, component: &Component) -> std::io::Result<()> {
    corral_files::create_private_dir(dir)?;
    let bytes = seal(
        component
            .serialize()
            .map_err(|err| std::io::Error::other(format!("{err:#}")))?,
    );
    corral_files::write_whole(path, &bytes, corral_files::WriteOptions::UNSYNCED)
}

const WASM_MAGIC: &[u8; 4] = b"\0asm";
const CORE_VERSION: [u8; 4] = [1, 0, 0, 0];

/// Compiles the component `bytes` (whose sha256 is `sha256`), or loads it
/// from `cache`: the one place a file becomes a [`Component`] (loading and
/// `corral::Host::inspect`).
///
/// # Errors
/// [`ComponentError::NotWasm`](crate::ComponentError::NotWasm), [`ComponentError::CoreModule`](crate::ComponentError::CoreModule),
/// [`ComponentError::MemoryTooLarge`](crate::ComponentError::MemoryTooLarge), [`ComponentError::AsyncAbi`](crate::ComponentError::AsyncAbi) or
/// [`ComponentError::InvalidComponent`](crate::ComponentError::InvalidComponent).
pub fn compile(
    engine: &Engine,
    cache: &ComponentCache,
    bytes: &[u8],
    sha256: &str,
) -> Result<(Component, CacheOutcome), ComponentError> {
    if bytes.len() < 8 || &bytes[..4] != WASM_MAGIC {
        return Err(ComponentError::NotWasm);
    }
    if bytes[4..8] == CORE_VERSION {
        return Err(ComponentError::CoreModule);
    }
    let (component, outcome) = cache.load_or_compile(engine, bytes, sha256).map_err(|e| {
        let cause = format!("{:#}", e.root_cause());
        if cause.contains("minimum byte size") {
            ComponentError::MemoryTooLarge(cause)
        } else if cause.contains("component model async") {
            ComponentError::AsyncAbi(cause)
        } else {
            ComponentError::InvalidComponent(cause)
        }
    })?;
    prepare_memory_images(&component, sha256);
    Ok((component, outcome))
}

/// The compiled component whose bytes have the sha256 `sha256`, from
/// `cache` alone (a [`PluginFile`] the digest memo answered): `None` when
/// the entry is gone or unusable since, and the bytes must be read and
/// [`compile`]d after all (which reads the entry again, says why it is
/// refused, and rewrites it).
pub fn compile_cached(engine: &Engine, cache: &ComponentCache, sha256: &str) -> Option<Component> {
    let dir = cache.dir.as_ref()?;
    let component = read_entry(engine, &entry_path(dir, engine, sha256), false)?;
    prepare_memory_images(&component, sha256);
    Some(component)
}

/// How often [`prepare_memory_images`] tries, and the pause before the
/// second try (doubled before each further one), in milliseconds.
const IMAGE_ATTEMPTS: u32 = 4;
const IMAGE_RETRY_MS: u64 = 25;

/// Creates the copy-on-write images of the component's linear memories
/// now, as it loads (wasmtime otherwise creates them at the first
/// instantiation, which is then the plugin's `describe` or first call).
///
/// On Linux each image is a memfd that wasmtime seals read-only, and the
/// kernel refuses the seal with `EBUSY` while something else briefly holds
/// a reference to one of its pages (page migration, a per-CPU page batch):
/// seen under load, as a Python plugin's `describe` failing with "Device or
/// resource busy". It is transient, and wasmtime keeps no failed image, so
/// it is tried again, up to [`IMAGE_ATTEMPTS`] times. Any other failure, or
/// the last, is logged and left to the first instantiation, which tries
/// again and reports it for the call it belongs to.
fn prepare_memory_images(component: &Component, sha256: &str) {
    let mut pause = IMAGE_RETRY_MS;
    for attempt in 1..=IMAGE_ATTEMPTS {
        let Err(err) = component.initialize_copy_on_write_image() else {
            return;
        };
        let busy = err.chain().any(|cause| {
            cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::ResourceBusy)
        });
        if !busy || attempt == IMAGE_ATTEMPTS {
            tracing::warn!(
                sha256,
                attempt,
                "cannot prepare the component's memory images yet (its first instance \
                 tries again): {err:#}"
            );
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(pause));
        pause *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_read_back_whole_and_any_cut_or_flipped_byte_is_refused() {
        let artifact: Vec<u8> = (0..200u32).map(|n| (n * 7 % 251) as u8).collect();
        let entry = seal(artifact.clone());
        assert_eq!(entry.len(), artifact.len() + TRAILER_LEN);
        assert_eq!(unseal(&entry), Ok(artifact.as_slice()));
        // Cut at every length: none passes.
        for len in 0..entry.len() {
            assert!(unseal(&entry[..len]).is_err(), "cut to {len} bytes");
        }
        // One bit flipped anywhere, trailer included: refused.
        for at in 0..entry.len() {
            for bit in [0x01u8, 0x80] {
                let mut bent = entry.clone();
                bent[at] ^= bit;
                assert!(unseal(&bent).is_err(), "bit {bit:#x} of byte {at}");
            }
        }
        // An entry of an older corral (no trailer) is refused, so rewritten.
        assert_eq!(
            unseal(&artifact),
            Err("no trailer: truncated, or written by an older corral")
        );
    }

    #[test]
    fn hosts_that_miss_one_entry_at_once_compile_it_once() {
        // The smallest component: its header, with no sections.
        const EMPTY: &[u8] = b"\0asm\x0d\0\x01\0";
        let engine = Engine::new(crate::PoolConfig::default()).expect("engine");
        let dir = tempfile::tempdir().expect("dir");
        let cache = ComponentCache::in_dir(dir.path().join("cache"));
        let threads = 6;
        let start = std::sync::Barrier::new(threads);
        let outcomes: Vec<CacheOutcome> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        cache
                            .load_or_compile(&engine, EMPTY, "e3b0")
                            .expect("compile")
                            .1
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .collect()
        });
        let compiled = outcomes
            .iter()
            .filter(|o| **o == CacheOutcome::Compiled)
            .count();
        assert_eq!(compiled, 1, "{outcomes:?}");
        let names: Vec<String> = std::fs::read_dir(dir.path().join("cache"))
            .expect("cache dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "one entry and no lock file: {names:?}");
        assert!(
            names[0].starts_with("e3b0-") && names[0].ends_with(".cwasm"),
            "{names:?}"
        );
    }
}
