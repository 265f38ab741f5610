//! `wasi:filesystem` on a tape ([`crate::tape`]): what the wrapper in
//! [`observed`](super::observed) records of each `open-at`, `stat` and
//! directory entry, the capture of a file opened to read (read through
//! the guest's own descriptor, so confined to its grant like the guest),
//! and the conversions between WASI's types and a tape's plain data.

use sha2::{Digest as _, Sha256};
use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, DescriptorStat, DescriptorType, DirectoryEntry, HostDescriptor,
};

use crate::tape::{FileCapture, MAX_HASHED_BYTES, Stat, Tape};

/// Bytes read at once while capturing a file: 64 KiB.
const CHUNK: u64 = 64 << 10;

/// The name a tape gives a descriptor type.
pub(super) fn kind_name(kind: DescriptorType) -> &'static str {
    match kind {
        DescriptorType::Unknown => "unknown",
        DescriptorType::BlockDevice => "block-device",
        DescriptorType::CharacterDevice => "character-device",
        DescriptorType::Directory => "directory",
        DescriptorType::Fifo => "fifo",
        DescriptorType::SymbolicLink => "symlink",
        DescriptorType::RegularFile => "file",
        DescriptorType::Socket => "socket",
    }
}

/// The descriptor type a tape's name stands for (`unknown` for a name
/// this version does not know).
pub(super) fn kind_of(name: &str) -> DescriptorType {
    match name {
        "block-device" => DescriptorType::BlockDevice,
        "character-device" => DescriptorType::CharacterDevice,
        "directory" => DescriptorType::Directory,
        "fifo" => DescriptorType::Fifo,
        "symlink" => DescriptorType::SymbolicLink,
        "file" => DescriptorType::RegularFile,
        "socket" => DescriptorType::Socket,
        _ => DescriptorType::Unknown,
    }
}

/// The WASI error code's name of a failed result; `None` for a trap.
pub(super) fn error_name<T>(result: &FsResult<T>) -> Option<Option<String>> {
    match result {
        Ok(_) => Some(None),
        Err(err) => err.downcast_ref().map(|code| Some(code.name().to_owned())),
    }
}

fn time(t: Option<types::Datetime>) -> Option<(u64, u32)> {
    t.map(|t| (t.seconds, t.nanoseconds))
}

fn datetime(t: Option<(u64, u32)>) -> Option<types::Datetime> {
    t.map(|(seconds, nanoseconds)| types::Datetime {
        seconds,
        nanoseconds,
    })
}

/// A stat as a tape keeps it.
pub(super) fn stat(stat: &DescriptorStat) -> Stat {
    Stat {
        kind: kind_name(stat.type_).to_owned(),
        links: stat.link_count,
        size: stat.size,
        times: [
            time(stat.data_access_timestamp),
            time(stat.data_modification_timestamp),
            time(stat.status_change_timestamp),
        ],
    }
}

/// A tape's stat as the guest gets it.
pub(super) fn descriptor_stat(stat: &Stat) -> DescriptorStat {
    DescriptorStat {
        type_: kind_of(&stat.kind),
        link_count: stat.links,
        size: stat.size,
        data_access_timestamp: datetime(stat.times[0]),
        data_modification_timestamp: datetime(stat.times[1]),
        status_change_timestamp: datetime(stat.times[2]),
    }
}

/// A tape's entry as the guest gets it.
pub(super) fn entry(name: String, kind: &str) -> DirectoryEntry {
    DirectoryEntry {
        type_: kind_of(kind),
        name,
    }
}

/// Captures the regular file the guest just opened as `fd` at `path`:
/// its contents when they fit in the tape's room, and their sha256 (of
/// at most [`MAX_HASHED_BYTES`]). Reads through the guest's descriptor, so
/// the capture reaches what the guest's grant reaches and nothing else.
pub(super) async fn capture(
    inner: &mut WasiFilesystemCtxView<'_>,
    tape: &Tape,
    fd: u32,
    path: &str,
) {
    let borrow = || Resource::<types::Descriptor>::new_borrow(fd);
    let Ok(stat) = HostDescriptor::stat(inner, borrow()).await else {
        return;
    };
    if stat.type_ != DescriptorType::RegularFile {
        return;
    }
    let keep = usize::try_from(stat.size).is_ok_and(|size| size <= tape.room());
    let mut hasher = Sha256::new();
    let mut contents = Vec::new();
    let mut offset = 0u64;
    while offset < MAX_HASHED_BYTES {
        let Ok((chunk, end)) = HostDescriptor::read(inner, borrow(), CHUNK, offset).await else {
            return;
        };
        hasher.update(&chunk);
        if keep {
            contents.extend_from_slice(&chunk);
        }
        offset += chunk.len() as u64;
        if end || chunk.is_empty() {
            break;
        }
    }
    tape.capture(FileCapture {
        path: path.to_owned(),
        contents: keep.then(|| serde_bytes::ByteBuf::from(contents)),
        size: if keep { offset } else { stat.size },
        sha256: hex::encode(hasher.finalize()),
    });
}
