//! Reading a cache entry whole into memory, for `Component::deserialize`.
//!
//! An entry of [`HUGE`] or more is read into an anonymous mapping advised
//! for transparent huge pages (`MADV_HUGEPAGE`): reading the 43 MB entry of
//! the bundled Python sample into ordinary memory costs about 10 500 page
//! faults, each zeroing 4 KiB, and took 29 ms of a 78 ms start on the
//! 2-core machine; into 2 MiB pages it took 10.6 ms (BENCHMARKS.md,
//! "Start"). Where the kernel gives no huge pages (`enabled = never`, or
//! none free), the same mapping is served by ordinary pages: only the
//! saving is lost. A smaller entry is read into a `Vec`.
//!
//! Not `mmap` of the file itself: a cache file truncated by someone else
//! while mapped would `SIGBUS` the whole host, where a read sees a short
//! file and the trailer check refuses it.

use std::io::Read as _;
use std::path::Path;

/// The size from which an entry is read into huge pages: 2 MiB, one huge
/// page on x86-64 and aarch64 (a smaller read would not fill one).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) const HUGE: usize = 2 << 20;

/// An entry's bytes, in memory.
pub(super) enum Whole {
    /// A small entry.
    Small(Vec<u8>),
    /// A large one, in its own anonymous mapping.
    #[cfg(target_os = "linux")]
    Mapped(Mapping),
}

impl std::ops::Deref for Whole {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Small(bytes) => bytes,
            #[cfg(target_os = "linux")]
            Self::Mapped(mapping) => mapping.bytes(),
        }
    }
}

/// Reads the file at `path` whole: as many bytes as its `stat` said when
/// opened (a file that shrank since is an error; one that grew is read to
/// its old length, and its trailer then refused).
///
/// # Errors
/// The I/O error of opening, `stat`ing, mapping or reading it.
pub(super) fn read(path: &Path) -> std::io::Result<Whole> {
    let mut file = std::fs::File::open(path)?;
    let len = usize::try_from(file.metadata()?.len()).map_err(std::io::Error::other)?;
    #[cfg(target_os = "linux")]
    if len >= HUGE {
        let mut mapping = Mapping::new(len)?;
        file.read_exact(mapping.bytes_mut())?;
        return Ok(Whole::Mapped(mapping));
    }
    let mut bytes = Vec::with_capacity(len);
    file.read_to_end(&mut bytes)?;
    Ok(Whole::Small(bytes))
}

/// An anonymous private mapping whose `len` bytes start on a [`HUGE`]
/// boundary (so that whole huge pages can back it), unmapped on drop.
#[cfg(target_os = "linux")]
pub(super) struct Mapping {
    /// Where the mapping starts, and its length (`len` plus the slack that
    /// aligns the start).
    base: *mut std::ffi::c_void,
    mapped: usize,
    /// Where the bytes start, within it, and how many.
    start: *mut u8,
    len: usize,
}

#[cfg(target_os = "linux")]
impl Mapping {
    fn new(len: usize) -> std::io::Result<Self> {
        use rustix::mm::{Advice, MapFlags, ProtFlags, madvise, mmap_anonymous};
        let rounded = len.div_ceil(HUGE) * HUGE;
        let mapped = rounded + HUGE;
        // SAFETY: a fresh private anonymous mapping of `mapped` bytes at an
        // address the kernel picks: no existing memory is touched.
        let base = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                mapped,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }?;
        let offset = (base as usize).next_multiple_of(HUGE) - base as usize;
        // SAFETY: `offset < HUGE` and `offset + rounded <= mapped`: within
        // the mapping just made.
        let start = unsafe { base.cast::<u8>().add(offset) };
        // SAFETY: advice on the aligned part of our own mapping; it only
        // asks for huge pages, and a refusal (no THP support) changes
        // nothing but the speed.
        let _ = unsafe { madvise(start.cast(), rounded, Advice::LinuxHugepage) };
        Ok(Self {
            base,
            mapped,
            start,
            len,
        })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `start..start + len` lies within the mapping, which is
        // readable and lives as long as `self`; anonymous memory starts
        // zeroed, so every byte is initialised.
        unsafe { std::slice::from_raw_parts(self.start, self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as `bytes`, and `&mut self` makes the borrow exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.start, self.len) }
    }
}

#[cfg(target_os = "linux")]
impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, unmapped once; no borrow of its
        // bytes outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.base, self.mapped) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_entries_are_read_back_byte_for_byte() {
        let dir = tempfile::tempdir().expect("dir");
        for len in [0, 1, HUGE - 1, HUGE, HUGE + 4097, 3 * HUGE] {
            let path = dir.path().join(format!("{len}.cwasm"));
            let bytes: Vec<u8> = (0..len).map(|n| (n * 31 % 251) as u8).collect();
            std::fs::write(&path, &bytes).expect("write");
            let whole = read(&path).expect("read");
            assert_eq!(whole.len(), len);
            assert!(*whole == *bytes, "{len} bytes differ");
            #[cfg(target_os = "linux")]
            assert_eq!(matches!(whole, Whole::Mapped(_)), len >= HUGE, "{len}");
        }
        assert!(read(&dir.path().join("absent.cwasm")).is_err());
    }
}
