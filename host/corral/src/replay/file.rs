//! The recording file: one sandboxed run of a tool, what it was given and
//! everything it received, versioned and checked.
//!
//! Layout (format version [`FORMAT_VERSION`]):
//!
//! | bytes | what |
//! |---|---|
//! | 8 | the magic `CORRALRR` |
//! | 2 | the format version, big-endian |
//! | n | a zstd frame of the CBOR encoding of [`Recording`] |
//! | 32 | sha256 of everything before it |
//!
//! The digest is checked before anything is decoded, so a truncated or
//! edited file is refused whole ([`RecordingError::Digest`]); the
//! decompressed CBOR may be at most [`MAX_DECODED_BYTES`]. A recording holds
//! the arguments and context whole and what the guest read (file
//! contents, response bodies): it is written with mode 0600 into a 0700
//! directory ([`super::dir`]). It holds no secret: the guest never saw
//! one, and every text passed the leak scan.

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use corral_sandbox::Limits;
use corral_sandbox::tape::{Event, FileCapture};

/// The first bytes of every recording.
pub const MAGIC: &[u8; 8] = b"CORRALRR";

/// The format this version writes and reads: 1.
pub const FORMAT_VERSION: u16 = 1;

/// The most bytes a recording decodes to: 64 MiB (the events and captures
/// of one run are capped at 16 MiB by default).
pub const MAX_DECODED_BYTES: u64 = 64 << 20;

/// One recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Recording {
    /// Who ran, with what.
    pub header: Header,
    /// Every import result the guest received, in order.
    pub events: Vec<Event>,
    /// The files the guest opened to read, as they were.
    pub files: Vec<FileCapture>,
    /// How the run ended.
    pub outcome: Outcome,
    /// What was cut at the recording's cap, one line each; a replay of an
    /// incomplete recording may not be faithful.
    pub incomplete: Vec<String>,
}

/// What a run was given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Header {
    /// The corral version that recorded it.
    pub corral: String,
    /// When, in ms since the Unix epoch.
    pub recorded_at_ms: u64,
    /// The plugin's name (its file stem).
    pub plugin: String,
    /// Lowercase hex sha256 of the component's bytes.
    pub plugin_sha256: String,
    /// Its contract version (`0.1.0`, `0.2.0`, `0.3.0`).
    pub contract: String,
    /// The tool as the guest knows it.
    pub tool: String,
    /// The tool as the host shows it (after a policy's rename).
    pub shown: String,
    /// The run's effective limits.
    pub limits: Limits,
    /// What the run's policy granted.
    pub grants: RecordedGrants,
    /// The arguments, JSON text, as the guest got them.
    pub arguments: String,
    /// The context pairs the guest got.
    pub context: Vec<(String, String)>,
    /// `wasi:random/insecure-seed`, lowercase hex of 16 bytes.
    pub insecure_seed: String,
    /// For a run of a call its caller asked to record: the call's id (16
    /// hex digits) and the run's position in it, from 0 (a plan's,
    /// pipeline's or script's steps, and retries, are runs of one call).
    /// `None` for a run a policy sampled.
    pub parent: Option<(String, u32)>,
}

/// The grants of a recorded run, without their secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedGrants {
    /// Preopened directories: guest path, host path, writable.
    pub dirs: Vec<(String, String, bool)>,
    /// The environment the guest got.
    pub env: Vec<(String, String)>,
    /// The outbound HTTP allow-list.
    pub http_allow: Vec<String>,
    /// The headers the host injects, as `NAME for DESTINATION` (no values).
    pub credentials: Vec<String>,
    /// What the guest could ask the MCP client (`[client]`).
    #[serde(default)]
    pub client: corral_sandbox::ClientGrants,
}

/// How a run ended, as JSON text a replay compares byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Outcome {
    /// `{"output": …}`, `{"guest_error": …}` or `{"failure": …}`, pretty
    /// JSON: the guest's output (its text, or its 0.3.0 parts), its WIT
    /// error, or the sandbox's failure class.
    pub result: String,
    /// Whether the call failed (a guest error or a sandbox failure).
    pub failed: bool,
    /// Fuel consumed.
    pub fuel: u64,
    /// Wall time of the run, in ms.
    pub wall_ms: u64,
}

/// Why a recording could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordingError {
    /// It does not start with [`MAGIC`].
    #[error("{path}: not a corral recording (it does not start with `CORRALRR`)")]
    NotARecording {
        /// The file.
        path: String,
    },
    /// Another format version.
    #[error(
        "{path}: recording format {found}, this corral reads format {FORMAT_VERSION}; replay it \
         with the corral that recorded it"
    )]
    Version {
        /// The file.
        path: String,
        /// Its version.
        found: u16,
    },
    /// The digest does not match: cut short or changed.
    #[error(
        "{path}: the recording's digest does not match its contents: it was truncated or \
         changed after it was written; record the call again"
    )]
    Digest {
        /// The file.
        path: String,
    },
    /// The contents do not decode.
    #[error("{path}: the recording does not decode: {reason}")]
    Decode {
        /// The file.
        path: String,
        /// What failed.
        reason: String,
    },
    /// It could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl Recording {
    /// The file's bytes (see the module docs).
    ///
    /// # Errors
    /// Only when encoding fails, which a well-formed recording never does.
    pub fn encode(&self) -> std::io::Result<Vec<u8>> {
        let mut cbor = Vec::new();
        ciborium::into_writer(self, &mut cbor).map_err(std::io::Error::other)?;
        // Level 1, one compression context per thread (making one costs
        // more than compressing a small recording).
        thread_local! {
            static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
                const { std::cell::RefCell::new(None) };
        }
        let frame = COMPRESSOR.with(|cell| {
            let mut cell = cell.borrow_mut();
            if cell.is_none() {
                *cell = Some(zstd::bulk::Compressor::new(1)?);
            }
            match cell.as_mut() {
                Some(compressor) => compressor.compress(&cbor),
                None => Err(std::io::Error::other("no zstd compressor")),
            }
        })?;
        let mut bytes = Vec::with_capacity(frame.len() + 64);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&FORMAT_VERSION.to_be_bytes());
        bytes.extend_from_slice(&frame);
        let digest = Sha256::digest(&bytes);
        bytes.extend_from_slice(&digest);
        Ok(bytes)
    }

    /// Reads a recording from `bytes` (of the file `path`, for messages).
    ///
    /// # Errors
    /// [`RecordingError`]: not a recording, another version, a digest that
    /// does not match (truncated or changed), or contents that do not
    /// decode within [`MAX_DECODED_BYTES`].
    pub fn decode(path: &str, bytes: &[u8]) -> Result<Self, RecordingError> {
        let path = path.to_owned();
        if bytes.len() < MAGIC.len() + 2 || &bytes[..MAGIC.len()] != MAGIC {
            return Err(RecordingError::NotARecording { path });
        }
        let found = u16::from_be_bytes([bytes[8], bytes[9]]);
        if found != FORMAT_VERSION {
            return Err(RecordingError::Version { path, found });
        }
        if bytes.len() < 10 + 32 {
            return Err(RecordingError::Digest { path });
        }
        let (body, digest) = bytes.split_at(bytes.len() - 32);
        if Sha256::digest(body).as_slice() != digest {
            return Err(RecordingError::Digest { path });
        }
        let decoder =
            zstd::stream::Decoder::new(&body[10..]).map_err(|err| RecordingError::Decode {
                path: path.clone(),
                reason: err.to_string(),
            })?;
        let mut cbor = Vec::new();
        let read = std::io::Read::read_to_end(
            &mut std::io::Read::take(decoder, MAX_DECODED_BYTES + 1),
            &mut cbor,
        );
        match read {
            Err(err) => Err(RecordingError::Decode {
                path,
                reason: err.to_string(),
            }),
            Ok(n) if n as u64 > MAX_DECODED_BYTES => Err(RecordingError::Decode {
                path,
                reason: format!("it decodes to more than {MAX_DECODED_BYTES} bytes"),
            }),
            Ok(_) => ciborium::from_reader(cbor.as_slice()).map_err(|err| RecordingError::Decode {
                path,
                reason: err.to_string(),
            }),
        }
    }

    /// Reads the recording file at `path` (at most
    /// [`corral_files::Kind::Recording`]'s cap).
    ///
    /// # Errors
    /// As [`Recording::decode`], and when the file cannot be read.
    pub fn read(path: &std::path::Path) -> Result<Self, RecordingError> {
        let shown = path.display().to_string();
        let bytes = corral_files::read_bytes(path, corral_files::Kind::Recording)
            .map_err(|err| RecordingError::Io {
                path: shown.clone(),
                source: std::io::Error::other(err.reason()),
            })?
            .ok_or_else(|| RecordingError::Io {
                path: shown.clone(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            })?;
        Self::decode(&shown, &bytes)
    }

    /// The insecure seed of the header.
    pub(crate) fn insecure_seed(&self) -> u128 {
        let mut seed = [0u8; 16];
        if let Ok(bytes) = hex::decode(&self.header.insecure_seed)
            && bytes.len() == 16
        {
            seed.copy_from_slice(&bytes);
        }
        u128::from_le_bytes(seed)
    }
}
