//! Moving one layer's bytes: streamed under a cap, hashed as they arrive and
//! checked against the layer digest; into memory (a policy) or into a
//! temporary file renamed into place only when complete and verified (a
//! component).

use std::path::Path;

use futures_util::StreamExt as _;
use oci_client::manifest::OciDescriptor;
use sha2::{Digest as _, Sha256};

use crate::DistError;
use crate::reference::OciReference;

/// Streams one layer, at most `cap` bytes, into `sink`; answers its size.
/// The sha256 of what arrived must be the layer's digest.
async fn stream_layer(
    client: &oci_client::Client,
    reference: &OciReference,
    at: &oci_client::Reference,
    layer: &OciDescriptor,
    cap: u64,
    what: &'static str,
    mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<u64, DistError> {
    let mut stream = client
        .pull_blob_stream(at, layer)
        .await
        .map_err(|e| crate::client::registry_error(reference, &e))?;
    let mut hasher = Sha256::new();
    let mut total: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            let mismatch = e
                .get_ref()
                .is_some_and(|inner| inner.is::<oci_client::errors::DigestError>());
            let said = corral::untrusted_text::escape_line(&e.to_string()).into_owned();
            DistError::Registry {
                reference: reference.to_string(),
                message: if mismatch {
                    format!(
                        "what the registry sent does not match its digest; nothing was \
                         written ({said})"
                    )
                } else {
                    format!("the download of the {what} broke off ({said}); nothing was written")
                },
            }
        })?;
        total += chunk.len() as u64;
        if total > cap {
            return Err(DistError::too_large(reference, what, total, cap));
        }
        hasher.update(&chunk);
        sink(&chunk).map_err(|e| DistError::Registry {
            reference: reference.to_string(),
            message: format!(
                "cannot store the {what} here (a local error, not the registry's): {e}"
            ),
        })?;
    }
    let actual = format!("sha256:{}", hex::encode(hasher.finalize()));
    if actual != layer.digest {
        return Err(DistError::Registry {
            reference: reference.to_string(),
            message: format!(
                "the {what} layer's bytes hash to {actual}, not its digest {}; nothing was written",
                corral::untrusted_text::escape_line(&layer.digest)
            ),
        });
    }
    Ok(total)
}

/// A small layer, into memory.
pub(crate) async fn fetch(
    client: &oci_client::Client,
    reference: &OciReference,
    at: &oci_client::Reference,
    layer: &OciDescriptor,
    cap: u64,
    what: &'static str,
) -> Result<Vec<u8>, DistError> {
    let mut bytes = Vec::new();
    stream_layer(client, reference, at, layer, cap, what, |chunk| {
        bytes.extend_from_slice(chunk);
        Ok(())
    })
    .await?;
    Ok(bytes)
}

/// The component layer, into a temporary file renamed over `path` once
/// complete and verified.
pub(crate) async fn download(
    client: &oci_client::Client,
    reference: &OciReference,
    at: &oci_client::Reference,
    layer: &OciDescriptor,
    cap: u64,
    path: &Path,
) -> Result<u64, DistError> {
    let file_error = |e: std::io::Error| DistError::File {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    // Streamed into a whole file (corral_files::WholeFile): a hidden
    // temporary name not ending in `.wasm`, so the host never loads a partial
    // download, created exclusively; removed if the pull fails. Mode 0600,
    // as the pulled file always had.
    let mut part = corral_files::WholeFile::create(path, corral_files::WriteOptions::PRIVATE)
        .map_err(file_error)?;
    let bytes = stream_layer(client, reference, at, layer, cap, "component", |chunk| {
        std::io::Write::write_all(&mut part, chunk)
    })
    .await?;
    part.commit().map_err(file_error)?;
    Ok(bytes)
}

/// Writes `bytes` to `path` whole (`corral_files::write_whole`: created
/// exclusively, so no planted link is followed, synced, renamed over
/// `path`), mode 0600 as before.
///
/// # Errors
/// [`DistError::File`] when it cannot be written.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), DistError> {
    corral_files::write_whole(path, bytes, corral_files::WriteOptions::PRIVATE).map_err(|e| {
        DistError::File {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    })
}
