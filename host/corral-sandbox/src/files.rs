//! What the loader (and `corral::Host::inspect`) may read as a plugin file: a regular
//! file within the host's size cap that starts with the wasm header, all
//! checked before the rest is read, so a huge file named `*.wasm` costs a
//! `stat`, and a large file that is not wasm costs 4 bytes, not its size in
//! memory. A named pipe, a directory or a symlink loop named `*.wasm` is
//! reported with what it is, never waited on. The same cap serves the
//! distribution client, which refuses a larger layer before writing it. The
//! file is opened as every capped read opens one
//! (`corral_files::open_for_reading`: a named pipe is not waited on).

use std::io::Read as _;
use std::path::Path;

use crate::error::ComponentError;

pub use corral_files::DEFAULT_MAX_PLUGIN_BYTES;

/// The wasm magic bytes every module and component starts with.
const WASM_MAGIC: &[u8; 4] = b"\0asm";

/// What a non-regular file is, for [`ComponentError::NotAFile`].
fn kind(file_type: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_block_device() || file_type.is_char_device() {
            return "a device";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// The bytes of the plugin file `path`, if it is a regular file of at most
/// `max_bytes` that starts with the wasm header. The file is opened once
/// and every check is made on what was opened, so a file replaced while
/// it is read is read whole as it was when opened.
///
/// # Errors
/// - [`ComponentError::NotAFile`] for a directory, named pipe, socket or
///   device;
/// - [`ComponentError::TooLarge`] for a larger file (it grew past the cap
///   while being read counts too);
/// - [`ComponentError::NotWasm`] when its first 4 bytes are not `\0asm`
///   (nothing after them is read);
/// - [`ComponentError::Io`] when it cannot be opened or read (a dangling
///   symlink, a symlink loop, no permission).
pub fn read_plugin(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ComponentError> {
    let (file, meta) = open_plugin(path, max_bytes)?;
    read_opened(file, &meta, max_bytes)
}

/// Opens the plugin file `path` and checks what a `stat` can tell: a
/// regular file of at most `max_bytes`. Answers the open file and its
/// metadata, for [`read_opened`] (or, in the component cache, the digest
/// memo's key).
///
/// # Errors
/// As [`read_plugin`], except [`ComponentError::NotWasm`] (nothing is read).
pub(crate) fn open_plugin(
    path: &Path,
    max_bytes: u64,
) -> Result<(std::fs::File, std::fs::Metadata), ComponentError> {
    let file = corral_files::open_for_reading(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ComponentError::NotAFile(kind(meta.file_type())));
    }
    if meta.len() > max_bytes {
        return Err(ComponentError::TooLarge {
            bytes: meta.len(),
            limit_bytes: max_bytes,
        });
    }
    Ok((file, meta))
}

/// Reads the file [`open_plugin`] opened: its wasm header first, then the
/// rest, within `max_bytes`.
///
/// # Errors
/// As [`read_plugin`].
pub(crate) fn read_opened(
    file: std::fs::File,
    meta: &std::fs::Metadata,
    max_bytes: u64,
) -> Result<Vec<u8>, ComponentError> {
    let mut reader = file.take(max_bytes.saturating_add(1));
    let mut bytes = Vec::with_capacity(WASM_MAGIC.len());
    (&mut reader)
        .take(WASM_MAGIC.len() as u64)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.as_slice() != WASM_MAGIC {
        return Err(ComponentError::NotWasm);
    }
    bytes.reserve(usize::try_from(meta.len()).unwrap_or(0));
    reader.read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(ComponentError::TooLarge {
            bytes: bytes.len() as u64,
            limit_bytes: max_bytes,
        });
    }
    Ok(bytes)
}

/// An I/O error reading a plugin file, as the loader reports it.
fn io(err: std::io::Error) -> ComponentError {
    ComponentError::Io(err.to_string())
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
            Err(ComponentError::TooLarge {
                bytes: 1 << 30,
                limit_bytes: 1 << 20
            })
        );
        std::fs::write(&path, b"\0asm").expect("write");
        assert_eq!(read_plugin(&path, 4).expect("read"), b"\0asm");
    }

    #[test]
    fn a_large_file_without_the_header_is_refused_for_its_header() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("big.wasm");
        let file = std::fs::File::create(&path).expect("create");
        // Under the cap, not wasm: refused for the header, not the size.
        file.set_len(64 << 20).expect("grow");
        assert_eq!(read_plugin(&path, 256 << 20), Err(ComponentError::NotWasm));
        std::fs::write(&path, b"\0as").expect("write");
        assert_eq!(read_plugin(&path, 256 << 20), Err(ComponentError::NotWasm));
    }

    #[cfg(unix)]
    #[test]
    fn entries_that_are_not_regular_files_are_refused_with_what_they_are() {
        let dir = tempfile::tempdir().expect("dir");
        let fifo = dir.path().join("fifo.wasm");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let subdir = dir.path().join("dir.wasm");
        std::fs::create_dir(&subdir).expect("dir");
        let looped = dir.path().join("loop.wasm");
        std::os::unix::fs::symlink("loop.wasm", &looped).expect("symlink");
        let dangling = dir.path().join("gone.wasm");
        std::os::unix::fs::symlink("nowhere.wasm", &dangling).expect("symlink");

        // The named pipe has no writer: a plain open would wait forever.
        assert_eq!(
            read_plugin(&fifo, 1 << 20),
            Err(ComponentError::NotAFile("a named pipe (FIFO)"))
        );
        assert_eq!(
            read_plugin(&subdir, 1 << 20),
            Err(ComponentError::NotAFile("a directory"))
        );
        for path in [&looped, &dangling] {
            match read_plugin(path, 1 << 20) {
                Err(ComponentError::Io(message)) => assert!(!message.is_empty()),
                other => panic!("{}: {other:?}", path.display()),
            }
        }
    }

    /// A plugin replaced by rename (how deployments and `corral pull`
    /// replace one) while the loader reads it: every read is one version,
    /// whole, never a mix or a cut.
    #[test]
    fn a_file_replaced_while_it_is_read_is_read_whole_as_one_version() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("plugin.wasm");
        let version = |fill: u8, len: usize| {
            let mut bytes = WASM_MAGIC.to_vec();
            bytes.resize(len, fill);
            bytes
        };
        let versions = [version(1, 1 << 20), version(2, 768 << 10)];
        std::fs::write(&path, &versions[0]).expect("write");
        let (done, renames) = (AtomicBool::new(false), AtomicUsize::new(0));
        let reads = std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut n = 0;
                while !done.load(Ordering::Relaxed) {
                    n += 1;
                    let next = dir.path().join(format!(".next{}", n % 2));
                    std::fs::write(&next, &versions[n % 2]).expect("write");
                    std::fs::rename(&next, &path).expect("rename");
                    renames.fetch_add(1, Ordering::Relaxed);
                }
            });
            while renames.load(Ordering::Relaxed) == 0 {
                std::hint::spin_loop();
            }
            // (length, whether it is one version): not the bytes, 200 MiB.
            let reads: Vec<_> = (0..200)
                .map(|_| read_plugin(&path, 2 << 20).map(|r| (r.len(), versions.contains(&r))))
                .collect();
            // Stops the writer before anything is asserted.
            done.store(true, Ordering::Relaxed);
            reads
        });
        for read in reads {
            let (len, whole) = read.expect("read");
            assert!(whole, "read {len} bytes that are no single version");
        }
    }
}
