//! Resources a tool's result leaves behind: `corral://` URIs that
//! `resources/read` serves (MCP's resource links and embedded resources,
//! WIT 0.3.0 `resource-link` and `embedded-resource`).
//!
//! - Every embedded resource of a result whose URI is `corral://...` is kept
//!   in the store the replicas share (`corral_store::SharedStore`: bounded
//!   memory, or Redis with `--store redis://…`) for [`RESOURCE_TTL`], for the
//!   tenant of the call that made it (the context key `tenant`, hashed,
//!   as for tasks). A `resources/read` of that URI by the same tenant
//!   returns it; any other tenant, or a read after the TTL, gets the same
//!   "no resource" error as a URI that never existed.
//! - When the same result also links to that URI (a resource-link part),
//!   the embedded part is not sent: the client gets the link and reads the
//!   contents when it wants them, rather than having them pushed into its
//!   context. Without a link the resource is sent embedded as well.
//! - A store that cannot keep a resource loses nothing: the embedded part
//!   is then sent as it is, and the failure is logged.
//!
//! The host's own `corral://health` is not a stored resource; a guest's
//! resource under that URI is never served in its place.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use corral::{OutputPart, PartContent, ResourceContents};
use corral_store::SharedStore;

/// How long a tool's `corral://` resource can be read after the call that
/// made it: 3 600 000 ms (one hour).
pub const RESOURCE_TTL: Duration = Duration::from_secs(3600);

/// The scheme of the resources the host serves.
const SCHEME: &str = "corral://";

/// A resource as the store keeps it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Kept {
    pub mime_type: Option<String>,
    /// Text contents, or base64 of the bytes when `blob`.
    pub contents: String,
    pub blob: bool,
}

/// The store key of `uri` for `tenant` (already hashed).
fn key(tenant: &str, uri: &str) -> String {
    format!(
        "resource:{tenant}:{}",
        hex::encode(sha2::Sha256::digest(uri.as_bytes()))
    )
}

/// Keeps the `corral://` embedded resources of `parts` for the tenant
/// `tenant` names (hashed, see [`crate::tasks::tenant_of`]), and drops from
/// `parts` the ones a link of the same result points to (see the module
/// docs). `tool` names the call in a log line when the store fails. A
/// result without such a resource (most results) returns at once, without
/// computing the tenant.
pub(crate) async fn keep(
    store: &dyn SharedStore,
    tenant: impl FnOnce() -> String,
    tool: &str,
    parts: &mut Vec<OutputPart>,
) {
    use base64::Engine as _;
    if !parts.iter().any(|part| kept_here(&part.content)) {
        return;
    }
    let tenant = tenant();
    let tenant = tenant.as_str();
    let linked: Vec<String> = parts
        .iter()
        .filter_map(|part| match &part.content {
            PartContent::ResourceLink(link) if link.uri.starts_with(SCHEME) => {
                Some(link.uri.clone())
            }
            _ => None,
        })
        .collect();
    let mut kept_linked = Vec::new();
    for part in parts.iter() {
        let PartContent::Resource(resource) = &part.content else {
            continue;
        };
        if !kept_here(&part.content) {
            continue;
        }
        let (contents, blob) = match &resource.contents {
            ResourceContents::Text(text) => (text.clone(), false),
            ResourceContents::Blob(bytes) => (
                base64::engine::general_purpose::STANDARD.encode(bytes),
                true,
            ),
            _ => continue,
        };
        let kept = Kept {
            mime_type: resource.mime_type.clone(),
            contents,
            blob,
        };
        let Ok(value) = serde_json::to_vec(&kept) else {
            continue;
        };
        match store
            .put(&key(tenant, &resource.uri), value, RESOURCE_TTL)
            .await
        {
            Ok(()) => {
                if linked.contains(&resource.uri) {
                    kept_linked.push(resource.uri.clone());
                }
            }
            Err(err) => tracing::warn!(
                tool,
                uri = corral::untrusted_text::escape(&resource.uri).as_ref(),
                "cannot keep the result's resource for resources/read, so it is sent embedded: {err}"
            ),
        }
    }
    parts.retain(
        |part| !matches!(&part.content, PartContent::Resource(r) if kept_linked.contains(&r.uri)),
    );
}

/// Whether [`keep`] keeps `content`: an embedded resource under
/// `corral://`, other than the host's own `corral://health`.
fn kept_here(content: &PartContent) -> bool {
    matches!(content, PartContent::Resource(resource)
        if resource.uri.starts_with(SCHEME) && resource.uri != crate::HEALTH_URI)
}

/// The resource `uri` kept for `tenant`, if any.
///
/// # Errors
/// The store's failure, as text.
pub(crate) async fn read(
    store: &dyn SharedStore,
    tenant: &str,
    uri: &str,
) -> Result<Option<rmcp::model::ResourceContents>, String> {
    if !uri.starts_with(SCHEME) {
        return Ok(None);
    }
    let Some(bytes) = store
        .get(&key(tenant, uri))
        .await
        .map_err(|err| err.to_string())?
    else {
        return Ok(None);
    };
    let kept: Kept = serde_json::from_slice(&bytes).map_err(|err| err.to_string())?;
    let mut contents = if kept.blob {
        rmcp::model::ResourceContents::blob(kept.contents, uri)
    } else {
        rmcp::model::ResourceContents::text(kept.contents, uri)
    };
    match &mut contents {
        rmcp::model::ResourceContents::TextResourceContents { mime_type, .. }
        | rmcp::model::ResourceContents::BlobResourceContents { mime_type, .. } => {
            *mime_type = kept.mime_type;
        }
        _ => {}
    }
    Ok(Some(contents))
}
