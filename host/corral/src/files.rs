//! What the loader (and `Host::inspect`) may read as a plugin file: a regular
//! file within the host's size cap, checked before a byte is read, so a huge
//! file named `*.wasm` costs a `stat`, not its size in memory. The same cap
//! serves the distribution client, which refuses a larger layer before
//! writing it.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::error::{HostError, LoadErrorReason};

/// The default plugin size cap: 256 MiB, in bytes. A Python component built
/// by componentize-py is about 40 MiB; a Rust one is well under 1 MiB.
pub const DEFAULT_MAX_PLUGIN_BYTES: u64 = 256 * 1024 * 1024;

/// The bytes of the plugin file `path`, if it is at most `max_bytes` long.
///
/// # Errors
/// [`LoadErrorReason::TooLarge`] for a larger file (it grew past the cap
/// while being read counts too), [`LoadErrorReason::Io`] when it cannot be
/// read.
pub(crate) fn read_plugin(path: &Path, max_bytes: u64) -> Result<Vec<u8>, LoadErrorReason> {
    let io = |e: std::io::Error| LoadErrorReason::Io(e.to_string());
    let file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if size > max_bytes {
        return Err(LoadErrorReason::TooLarge {
            bytes: size,
            limit_bytes: max_bytes,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(LoadErrorReason::TooLarge {
            bytes: bytes.len() as u64,
            limit_bytes: max_bytes,
        });
    }
    Ok(bytes)
}

/// The `*.wasm` files directly inside `dir`, sorted by file name.
///
/// # Errors
/// [`HostError::PluginDir`] when the directory cannot be listed.
pub fn plugin_files(dir: &Path) -> Result<Vec<PathBuf>, HostError> {
    let io_err = |source| HostError::PluginDir {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_err)? {
        let path = entry.map_err(io_err)?.path();
        if path.extension().is_some_and(|e| e == "wasm") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_cap_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("huge.wasm");
        let file = std::fs::File::create(&path).expect("create");
        // Sparse: 1 GiB on paper, nothing on disk, nothing read.
        file.set_len(1 << 30).expect("grow");
        assert_eq!(
            read_plugin(&path, 1 << 20),
            Err(LoadErrorReason::TooLarge {
                bytes: 1 << 30,
                limit_bytes: 1 << 20
            })
        );
        std::fs::write(&path, b"\0asm").expect("write");
        assert_eq!(read_plugin(&path, 4).expect("read"), b"\0asm");
    }
}
