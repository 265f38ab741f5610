//! The artifact layout corral reads and writes: the CNCF Wasm OCI artifact
//! (TAG Runtime's "Wasm OCI Artifact layout", as `wkg` publishes it):
//!
//! | part | media type | content |
//! |---|---|---|
//! | manifest | `application/vnd.oci.image.manifest.v1+json` | OCI image manifest |
//! | config | `application/vnd.wasm.config.v0+json` | [`config`]: `created`, `architecture: "wasm"`, `os: "wasip2"`, `layerDigests` |
//! | layer 1 | `application/wasm` | the component's bytes |
//! | layer 2 (optional) | [`POLICY_MEDIA_TYPE`] | the policy the publisher requests (`corral` policy TOML) |
//!
//! On pull, a component layer of `wasm-to-oci`'s older media type
//! ([`LEGACY_WASM_MEDIA_TYPES`]) is accepted too, and any other layer is
//! ignored. A signature covers the manifest, whose digests cover both layers.

/// The config media type of a Wasm OCI artifact.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";

/// The component layer's media type.
pub const WASM_MEDIA_TYPE: &str = "application/wasm";

/// Component layer media types of older tools (`wasm-to-oci`), read on pull.
pub const LEGACY_WASM_MEDIA_TYPES: &[&str] = &["application/vnd.wasm.content.layer.v1+wasm"];

/// The media type of the layer carrying the policy a publisher requests.
pub const POLICY_MEDIA_TYPE: &str = "application/vnd.corral.policy.v1+toml";

/// The largest policy layer pulled, in bytes: 64 KiB (a policy is a few
/// hundred bytes).
pub const MAX_POLICY_BYTES: u64 = 64 * 1024;

/// Whether `media_type` is a component layer's.
pub fn is_component(media_type: &str) -> bool {
    media_type == WASM_MEDIA_TYPE || LEGACY_WASM_MEDIA_TYPES.contains(&media_type)
}

/// The config JSON of an artifact whose component layer has `digest`.
pub fn config(component_digest: &str) -> serde_json::Value {
    serde_json::json!({
        "created": humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [component_digest],
    })
}
