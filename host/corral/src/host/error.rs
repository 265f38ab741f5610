//! Why a [`Host`](crate::Host) could not be built or keep watching
//! ([`HostError`]). Every message names the directory or setting it
//! concerns and says what to do about it.

use std::path::PathBuf;

use corral_sandbox::LimitsError;

/// Why a [`Host`](crate::Host) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The plugin directory cannot be listed.
    #[error("cannot read plugin directory {}: {source}; point the host at an existing directory", .path.display())]
    PluginDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The limits are unusable.
    #[error(transparent)]
    Limits(#[from] LimitsError),
    /// The plugin directory cannot be watched for hot reload.
    #[error("hot reload: {0}")]
    Watch(String),
    /// wasmtime rejected the engine or linker configuration.
    #[error("cannot create the wasm engine: {0}")]
    Engine(String),
    /// The empty directory of learning runs
    /// ([`HostBuilder::learning`](crate::HostBuilder::learning)) cannot be
    /// made in the system's temporary directory.
    #[error(
        "cannot make the learning runs' empty directory in the temporary directory: {0}; set TMPDIR to a writable directory"
    )]
    Learning(String),
    /// The recordings directory
    /// ([`HostBuilder::recordings`](crate::HostBuilder::recordings)) cannot
    /// be created or listed.
    #[error(
        "cannot open the recordings directory {0}; choose a writable directory (`--recordings-dir`)"
    )]
    Recordings(String),
}
