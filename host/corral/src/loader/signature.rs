//! Plugin signatures, as the library sees them: with the `signatures`
//! feature (on by default) the `corral-signature` crate's API, re-exported
//! whole; without it, `off.rs`, where a plugin that must be signed does
//! not load and the message names the feature, so that an embedder who
//! does not verify signatures needs no OpenSSL. `off.rs` is compiled into
//! every test build too, so its rule is tested whatever the features.

#[cfg(feature = "signatures")]
pub use corral_signature::*;

#[cfg(any(not(feature = "signatures"), test))]
#[cfg_attr(feature = "signatures", allow(dead_code))]
mod off;
#[cfg(not(feature = "signatures"))]
pub use off::*;
