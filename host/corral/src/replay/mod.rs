//! Record and replay: a tool call's sandboxed run kept whole, what it was
//! given and every import result it received, and run again offline.
//!
//! - **Recording** (`capture.rs`): a call with a [`RecordRequest`] (or a
//!   plugin whose policy samples its calls) runs with a recording
//!   [`Tape`](corral_sandbox::tape::Tape); when the run ends its
//!   [`Recording`] (header, events, captured files, outcome) is written
//!   into the host's [`Recordings`] directory, off the caller's path.
//! - **The file** (`file.rs`): magic, format version, a zstd frame of CBOR,
//!   a sha256 over it all; refused whole when cut or changed.
//! - **Replay** ([`replay()`]): the recorded plugin, or another build of it
//!   (a shadow test), runs again in a fresh sandbox with every import
//!   answered from the recording; the [`ReplayReport`] says whether it was
//!   identical, where it diverged, or how its output changed.
//!
//! What a recording holds and where it lives is in SECURITY.md ("Record
//! and replay"); what makes a replay faithful is in README.md.

pub(crate) mod capture;
mod dir;
mod file;
mod gate;
mod host;
mod request;
pub(crate) mod run;

pub use dir::{Recordings, RecordingsConfig, recordings_in};
pub use file::{
    FORMAT_VERSION, Header, MAGIC, MAX_DECODED_BYTES, Outcome, RecordedGrants, Recording,
    RecordingError,
};
pub use gate::MAX_GATE_REPLAYS;
pub(crate) use gate::check as gate_update;
pub use host::replay;
pub use request::RecordRequest;
pub use run::{ReplayError, ReplayOptions, ReplayReport, Verdict};
