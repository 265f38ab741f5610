//! The `encode` sample plugin: SHA-256 digests and base64.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use corral_guest::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

#[derive(Deserialize, JsonSchema)]
struct HashArgs {
    /// The text to hash, as UTF-8.
    text: String,
}

/// Compute the SHA-256 digest of a text (UTF-8), as lowercase hex.
#[tool(
    category = "encoding",
    keywords("hash", "sha256", "digest", "checksum"),
    idempotent
)]
fn sha256(args: HashArgs) -> Result<Value, ToolError> {
    let digest = Sha256::digest(args.text.as_bytes());
    Ok(json!({ "sha256": hex::encode(digest), "bytes": args.text.len() }))
}

#[derive(Deserialize, JsonSchema)]
struct EncodeArgs {
    /// The text to encode, as UTF-8.
    text: String,
    /// Use the URL-safe alphabet without padding (RFC 4648 section 5).
    #[serde(default)]
    url_safe: bool,
}

/// Encode a text (UTF-8) as base64.
#[tool(category = "encoding", keywords("base64", "encode"), idempotent)]
fn base64_encode(args: EncodeArgs) -> Result<Value, ToolError> {
    let engine = if args.url_safe {
        &URL_SAFE_NO_PAD
    } else {
        &STANDARD
    };
    Ok(json!({ "base64": engine.encode(args.text.as_bytes()) }))
}

#[derive(Deserialize, JsonSchema)]
struct DecodeArgs {
    /// The base64 text to decode (standard or URL-safe alphabet, padded or not).
    base64: String,
}

/// Decode base64 into text. Fails if the input is not base64 or the decoded
/// bytes are not UTF-8.
#[tool(category = "encoding", keywords("base64", "decode"), idempotent)]
fn base64_decode(args: DecodeArgs) -> Result<Value, ToolError> {
    let input = args.base64.trim();
    let bytes = STANDARD
        .decode(input)
        .or_else(|_| URL_SAFE_NO_PAD.decode(input.trim_end_matches('=')))
        .map_err(|err| ToolError::invalid(format!("`base64` is not valid base64: {err}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ToolError::failed("the decoded bytes are not UTF-8 text"))?;
    Ok(json!({ "text": text }))
}

corral_guest::plugin!(sha256, base64_encode, base64_decode);
