//! corral's distribution client: plugins as Wasm OCI artifacts.
//!
//! - [`pull`] fetches a component (and the policy its publisher requests)
//!   from an OCI registry into a plugin directory and records it in the
//!   directory's [`corral.lock`](corral::Lock);
//! - [`push`] publishes a component with its policy;
//! - [`accept_policy`] turns a pulled policy request into the plugin's
//!   policy, once the operator has seen its grants.
//!
//! The layout ([`layout`]) is the CNCF Wasm OCI artifact, so components
//! published by `wkg`, Wassette or `wasm-to-oci` pull too; the policy travels
//! as an extra layer of corral's own media type. A pulled policy is a
//! request, never a grant: it is written as `NAME.policy.requested.toml`,
//! which the host does not read, and the plugin runs with the defaults
//! (nothing granted) until it is accepted.
//!
//! The registry client is `oci-client`, with credentials from the usual
//! docker `config.json` (`$DOCKER_CONFIG`, or `~/.docker/`), and plain HTTP
//! for loopback registries only.

// The fuzz targets' bodies name this crate by its name; its tests include
// the `oci_manifest` target's (`manifest::fuzz_target`).
#[cfg(test)]
extern crate self as corral_dist;

mod accept;
mod client;
mod error;
pub mod layout;
mod manifest;
mod pull;
mod push;
mod reference;
mod signing;
mod transfer;
mod verify;

pub use accept::{Accepted, accept_policy, requested_policy_path};
pub use error::DistError;
pub use pull::{PullOptions, Pulled, RequestedPolicy, pull, pull_locked};
pub use push::{Pushed, push};
pub use reference::OciReference;

/// Internals the fuzz targets drive directly. Not part of the API: no
/// stability promise.
#[doc(hidden)]
pub mod __fuzz {
    pub use crate::manifest::check as manifest_check;
}
