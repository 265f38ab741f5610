//! The recording `wasi:filesystem` host: [`Observed`], wasmtime-wasi's
//! p2 filesystem host ([`WasiFilesystemCtxView`]) and the run's
//! [`FilesSeen`], implementing the `wasi:filesystem/types` and
//! `wasi:filesystem/preopens` host traits by delegating each function to
//! wasmtime-wasi's implementation, then recording what a path operation
//! did (the table is in the parent module's docs).

use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::p2::bindings::filesystem::preopens;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, ErrorCode, HostDescriptor, HostDirectoryEntryStream,
};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsError, FsResult};

use super::{FilesSeen, Target, taped};
use crate::attempts::FileOp;
use crate::sandbox::SandboxState;
use crate::tape::{Event, Tape};

/// The host of the recording bindings, from the store data.
pub(super) fn observed(state: &mut SandboxState) -> Observed<'_> {
    Observed {
        inner: WasiFilesystemCtxView {
            ctx: state.wasi.filesystem(),
            table: &mut state.table,
        },
        seen: &mut state.files_seen,
        tape: state.tape.clone(),
    }
}

/// The [`HasData`] of the recording bindings: their host is [`Observed`].
pub(super) struct Observe;

impl HasData for Observe {
    type Data<'a> = Observed<'a>;
}

/// wasmtime-wasi's filesystem host and the run's record, for one host call.
pub(super) struct Observed<'a> {
    inner: WasiFilesystemCtxView<'a>,
    seen: &'a mut FilesSeen,
    /// The run's recording or replay ([`taped`](super::taped)).
    tape: Option<Tape>,
}

impl preopens::Host for Observed<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<types::Descriptor>, String)>> {
        let dirs = preopens::Host::get_directories(&mut self.inner)?;
        for (index, (fd, name)) in dirs.iter().enumerate() {
            if let Some(preopen) = self.seen.preopen_of(index, name) {
                let path = self.seen.preopens[preopen].guest.clone();
                self.seen.learn(fd.rep(), Target { path, preopen });
            }
        }
        Ok(dirs)
    }
}

impl types::Host for Observed<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        types::Host::convert_error_code(&mut self.inner, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        types::Host::filesystem_error_code(&mut self.inner, err)
    }
}

/// The open flags and descriptor flags of an `open-at`, as an operation.
pub(super) fn open_op(oflags: types::OpenFlags, flags: types::DescriptorFlags) -> FileOp {
    if oflags.contains(types::OpenFlags::CREATE) {
        FileOp::Create
    } else if flags.contains(types::DescriptorFlags::WRITE)
        || oflags.contains(types::OpenFlags::TRUNCATE)
    {
        FileOp::Write
    } else {
        FileOp::Read
    }
}

type Fd = Resource<types::Descriptor>;

/// Delegates `$method` to wasmtime-wasi's host, recording `$op` on `$path`
/// from `$fd`.
macro_rules! at {
    ($self:ident, $method:ident, $op:expr, $fd:ident, $path:ident $(, $arg:expr)*) => {{
        let target = $self.seen.target($fd.rep(), &$path);
        $self.touch(target.as_ref(), $op);
        let result = HostDescriptor::$method(&mut $self.inner, $fd $(, $arg)*).await;
        $self.seen.record(target.as_ref(), $op, &result);
        result
    }};
}

impl Observed<'_> {
    /// Recording: a path the guest changes is not captured later.
    fn touch(&self, target: Option<&Target>, op: FileOp) {
        if let (Some(tape), Some(target)) = (&self.tape, target)
            && !matches!(op, FileOp::Read | FileOp::List)
        {
            tape.touch(&target.path);
        }
    }

    /// A `stat` of `target`: recorded, or answered from the recording.
    fn taped_stat(
        &self,
        target: Option<&Target>,
        result: FsResult<types::DescriptorStat>,
    ) -> FsResult<types::DescriptorStat> {
        let (Some(tape), Some(target)) = (&self.tape, target) else {
            return result;
        };
        if taped::error_name(&result).is_none() {
            return result;
        }
        let taped = match &result {
            Ok(stat) => Ok(taped::stat(stat)),
            Err(_) => Err(error_or_trap(&result)),
        };
        let got = Event::Stat {
            path: target.path.clone(),
            result: taped,
        };
        if !tape.is_replay() {
            tape.push(got);
            return result;
        }
        let answer = tape.answer(&got, |event| {
            matches!((event, &got), (Event::Stat { path, result: r }, Event::Stat { result: g, .. })
                if *path == target.path && r.is_ok() == g.is_ok())
        });
        match (answer, result) {
            (
                Some(Event::Stat {
                    result: Ok(stat), ..
                }),
                Ok(_),
            ) => Ok(taped::descriptor_stat(&stat)),
            (_, result) => result,
        }
    }
}

/// The error name of a failed result (a trap reads as `trap`).
fn error_or_trap<T>(result: &FsResult<T>) -> String {
    taped::error_name(result)
        .flatten()
        .unwrap_or_else(|| "trap".to_owned())
}

impl HostDescriptor for Observed<'_> {
    async fn advise(
        &mut self,
        fd: Fd,
        offset: types::Filesize,
        len: types::Filesize,
        advice: types::Advice,
    ) -> FsResult<()> {
        HostDescriptor::advise(&mut self.inner, fd, offset, len, advice).await
    }

    async fn sync_data(&mut self, fd: Fd) -> FsResult<()> {
        HostDescriptor::sync_data(&mut self.inner, fd).await
    }

    async fn get_flags(&mut self, fd: Fd) -> FsResult<types::DescriptorFlags> {
        HostDescriptor::get_flags(&mut self.inner, fd).await
    }

    async fn get_type(&mut self, fd: Fd) -> FsResult<types::DescriptorType> {
        HostDescriptor::get_type(&mut self.inner, fd).await
    }

    async fn set_size(&mut self, fd: Fd, size: types::Filesize) -> FsResult<()> {
        HostDescriptor::set_size(&mut self.inner, fd, size).await
    }

    async fn set_times(
        &mut self,
        fd: Fd,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        HostDescriptor::set_times(&mut self.inner, fd, atim, mtim).await
    }

    async fn read(
        &mut self,
        fd: Fd,
        len: types::Filesize,
        offset: types::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        HostDescriptor::read(&mut self.inner, fd, len, offset).await
    }

    async fn write(
        &mut self,
        fd: Fd,
        buf: Vec<u8>,
        offset: types::Filesize,
    ) -> FsResult<types::Filesize> {
        HostDescriptor::write(&mut self.inner, fd, buf, offset).await
    }

    async fn read_directory(&mut self, fd: Fd) -> FsResult<Resource<types::DirectoryEntryStream>> {
        let itself = ".";
        let target = self.seen.target(fd.rep(), itself);
        let result: FsResult<Resource<types::DirectoryEntryStream>> =
            at!(self, read_directory, FileOp::List, fd, itself);
        if let (Ok(stream), Some(target), Some(_)) = (&result, target, &self.tape) {
            self.seen.listing(stream.rep(), target.path);
        }
        result
    }

    async fn sync(&mut self, fd: Fd) -> FsResult<()> {
        HostDescriptor::sync(&mut self.inner, fd).await
    }

    async fn create_directory_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        at!(self, create_directory_at, FileOp::Create, fd, path, path)
    }

    async fn stat(&mut self, fd: Fd) -> FsResult<types::DescriptorStat> {
        let target = self.seen.target(fd.rep(), ".");
        let result = HostDescriptor::stat(&mut self.inner, fd).await;
        self.taped_stat(target.as_ref(), result)
    }

    async fn stat_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::DescriptorStat> {
        let target = self.seen.target(fd.rep(), &path);
        let result: FsResult<types::DescriptorStat> =
            at!(self, stat_at, FileOp::Read, fd, path, path_flags, path);
        self.taped_stat(target.as_ref(), result)
    }

    async fn set_times_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        at!(
            self,
            set_times_at,
            FileOp::Write,
            fd,
            path,
            path_flags,
            path,
            atim,
            mtim
        )
    }

    async fn link_at(
        &mut self,
        fd: Fd,
        old_path_flags: types::PathFlags,
        old_path: String,
        new_descriptor: Fd,
        new_path: String,
    ) -> FsResult<()> {
        let target = self.seen.target(new_descriptor.rep(), &new_path);
        self.touch(target.as_ref(), FileOp::Create);
        let result = HostDescriptor::link_at(
            &mut self.inner,
            fd,
            old_path_flags,
            old_path,
            new_descriptor,
            new_path,
        )
        .await;
        self.seen.record(target.as_ref(), FileOp::Create, &result);
        result
    }

    async fn open_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
        oflags: types::OpenFlags,
        flags: types::DescriptorFlags,
    ) -> FsResult<Fd> {
        let target = self.seen.target(fd.rep(), &path);
        let op = open_op(oflags, flags);
        self.touch(target.as_ref(), op);
        let result =
            HostDescriptor::open_at(&mut self.inner, fd, path_flags, path, oflags, flags).await;
        self.seen.record(target.as_ref(), op, &result);
        if let (Some(tape), Some(target)) = (self.tape.clone(), &target)
            && taped::error_name(&result).is_some()
        {
            let got = Event::Open {
                path: target.path.clone(),
                op: op.as_str().to_owned(),
                error: taped::error_name(&result).flatten(),
            };
            if tape.is_replay() {
                tape.answer(&got, |event| *event == got);
            } else {
                tape.push(got);
                if let Ok(opened) = &result
                    && op == FileOp::Read
                    && flags.contains(types::DescriptorFlags::READ)
                    && tape.wants_capture(&target.path)
                {
                    taped::capture(&mut self.inner, &tape, opened.rep(), &target.path).await;
                }
            }
        }
        if let (Ok(opened), Some(target)) = (&result, target) {
            self.seen.learn(opened.rep(), target);
        }
        result
    }

    fn drop(&mut self, fd: Fd) -> wasmtime::Result<()> {
        self.seen.descriptors.remove(&fd.rep());
        HostDescriptor::drop(&mut self.inner, fd)
    }

    async fn readlink_at(&mut self, fd: Fd, path: String) -> FsResult<String> {
        at!(self, readlink_at, FileOp::Read, fd, path, path)
    }

    async fn remove_directory_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        at!(self, remove_directory_at, FileOp::Remove, fd, path, path)
    }

    async fn rename_at(
        &mut self,
        fd: Fd,
        old_path: String,
        new_fd: Fd,
        new_path: String,
    ) -> FsResult<()> {
        let from = self.seen.target(fd.rep(), &old_path);
        let to = self.seen.target(new_fd.rep(), &new_path);
        self.touch(from.as_ref(), FileOp::Remove);
        self.touch(to.as_ref(), FileOp::Create);
        let result =
            HostDescriptor::rename_at(&mut self.inner, fd, old_path, new_fd, new_path).await;
        self.seen.record(from.as_ref(), FileOp::Remove, &result);
        self.seen.record(to.as_ref(), FileOp::Create, &result);
        result
    }

    async fn symlink_at(&mut self, fd: Fd, src_path: String, dest_path: String) -> FsResult<()> {
        at!(
            self,
            symlink_at,
            FileOp::Create,
            fd,
            dest_path,
            src_path,
            dest_path
        )
    }

    async fn unlink_file_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        at!(self, unlink_file_at, FileOp::Remove, fd, path, path)
    }

    fn read_via_stream(
        &mut self,
        fd: Fd,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynInputStream>> {
        HostDescriptor::read_via_stream(&mut self.inner, fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Fd,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynOutputStream>> {
        HostDescriptor::write_via_stream(&mut self.inner, fd, offset)
    }

    fn append_via_stream(&mut self, fd: Fd) -> FsResult<Resource<DynOutputStream>> {
        HostDescriptor::append_via_stream(&mut self.inner, fd)
    }

    async fn is_same_object(&mut self, a: Fd, b: Fd) -> wasmtime::Result<bool> {
        HostDescriptor::is_same_object(&mut self.inner, a, b).await
    }

    async fn metadata_hash(&mut self, fd: Fd) -> FsResult<types::MetadataHashValue> {
        HostDescriptor::metadata_hash(&mut self.inner, fd).await
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Fd,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::MetadataHashValue> {
        at!(
            self,
            metadata_hash_at,
            FileOp::Read,
            fd,
            path,
            path_flags,
            path
        )
    }
}

impl HostDirectoryEntryStream for Observed<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<types::DirectoryEntryStream>,
    ) -> FsResult<Option<types::DirectoryEntry>> {
        let path = self.seen.listings.get(&stream.rep()).cloned();
        let result = HostDirectoryEntryStream::read_directory_entry(&mut self.inner, stream).await;
        let (Some(tape), Some(path), Ok(entry)) = (&self.tape, path, &result) else {
            return result;
        };
        let got = Event::Entry {
            path: path.clone(),
            name: entry.as_ref().map(|e| e.name.clone()),
            kind: entry
                .as_ref()
                .map_or("", |e| taped::kind_name(e.type_))
                .to_owned(),
        };
        if !tape.is_replay() {
            tape.push(got);
            return result;
        }
        // The recorded listing, in its recorded order.
        match tape.answer(
            &got,
            |event| matches!(event, Event::Entry { path: p, .. } if *p == path),
        ) {
            Some(Event::Entry { name, kind, .. }) => Ok(name.map(|name| taped::entry(name, &kind))),
            _ => result,
        }
    }

    fn drop(&mut self, stream: Resource<types::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.seen.listings.remove(&stream.rep());
        HostDirectoryEntryStream::drop(&mut self.inner, stream)
    }
}
