//! corral's file rules, each in one place, for every crate of the host.
//!
//! - **Writing a file whole** ([`write_whole`], or [`WholeFile`] to stream
//!   into one): the bytes go to a temporary file beside the target, created
//!   exclusively (a file, directory or symlink already at that name is never
//!   opened, let alone followed), with the mode the caller asks for (`0o600`
//!   for secrets), fsynced, renamed over the target, and the directory
//!   fsynced, so after a power loss a reader finds the old contents or the
//!   new, never a mix or nothing. [`sweep`] and [`sweep_locked`] remove the
//!   temporary files of writers that were killed.
//! - **Reading a file beside the plugins** ([`read_text`], [`read_bytes`]):
//!   never more than the cap of its [`Kind`] (a policy, `groups.toml`,
//!   `pipelines.json`, `corral.lock`, signature evidence, a WIT file...), so
//!   a hostile or mistaken file costs the host a bounded amount of memory,
//!   and a missing one is `None` where it is optional. The error names the
//!   file, its kind and its cap.
//!
//! - **Changing a file several writers share** ([`update_locked`]):
//!   `corral.lock`, the standing approvals. An exclusive `flock` on a
//!   sibling lock file, then a read, the change and a whole-file write.
//! - **Making a file once** ([`produce_once`]): a compiled component in the
//!   cache, which several hosts (or threads) may want at the same time; one
//!   makes it while the others wait for it, under a sibling lock file that
//!   goes when it is made.
//! - **Private directories** ([`create_private_dir`], [`is_private`]):
//!   made 0700 when missing, never narrowed when they exist.
//! - **Telling whether something changed** ([`Stamp`], a digest of parts
//!   and files read under their caps, for a hot reload; [`Identity`], one
//!   `stat`, for a check on every call).

mod dir;
mod lock;
mod read;
mod stamp;
mod write;

pub use dir::{create_private_dir, is_private};
pub use lock::{produce_once, update_locked};
pub use read::{
    DEFAULT_MAX_PLUGIN_BYTES, Kind, ReadError, open_for_reading, read_bytes, read_text,
};
pub use stamp::{Identity, Stamp};
pub use write::{Durability, WholeFile, WriteOptions, sweep, sweep_locked, write_whole};
