//! Calls made of calls: plans (the built-in `execute_tool_plan`, after the
//! tool-planning guide, docs/references.md) and pipelines (compound tools,
//! AgentEnsemble's `ToolPipeline`).
//!
//! Both run their steps through a [`Caller`], never through the host
//! directly, so every step takes the whole call path (argument validation,
//! effective limits, the approval gate, a fresh sandbox, the record) exactly
//! like a call a client makes. Invariants: a step's arguments and outputs
//! travel as parsed JSON values, never re-parsed text; a plan can only
//! tighten a step's limits (its deadline), never loosen them.

pub mod pipeline;
pub mod plan;

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::call::{CallOptions, CallOutput};
use corral_sandbox::CallError;
use plan::reference::Output;

/// The future a [`Caller`] returns.
pub type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<CallOutput, CallError>> + Send + 'a>>;

/// What plans and pipelines call their steps through: the whole call path of
/// a [`Host`](crate::Host), which implements it. An embedder can implement it
/// to run plans against something else (a test double, a remote host).
pub trait Caller: Send + Sync {
    /// Calls `tool` with `arguments` (a JSON object) under `options`.
    ///
    /// # Errors
    /// The step's [`CallError`], as the host's call would return it.
    fn call_value<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        options: &'a CallOptions,
    ) -> CallFuture<'a>;
}

/// A step's output as `$ref` and adapters see it: the parsed JSON when the
/// tool returned JSON (its structured part, for a result of parts), its
/// text otherwise. A result with neither (only images, audio, resources:
/// WIT 0.3.0 parts) is its resources and media, `{"links": [{"uri", "name",
/// "mime_type", "size"}], "media": [{"type", "mime_type", "size"}]}` (its
/// resource links, then its embedded resources, named by their URI's last
/// segment; then its images and audio, sizes in bytes), so a later step
/// can pass on a link to the file rather than its bytes. Nothing is parsed
/// again.
pub(crate) fn output_of(out: &CallOutput) -> Output {
    match out.json() {
        Some(value) => Output::Json(value.clone()),
        None if out.text.is_empty() && !out.parts.is_empty() => Output::Json(serde_json::json!({
            "links": links_of(&out.parts),
            "media": media_of(&out.parts),
        })),
        None => Output::Text(out.text.clone()),
    }
}

/// The images and audio of `parts`, described, as `$ref` sees them.
fn media_of(parts: &[corral_sandbox::OutputPart]) -> Vec<Value> {
    use corral_sandbox::PartContent;
    parts
        .iter()
        .filter_map(|part| {
            let (kind, media) = match &part.content {
                PartContent::Image(media) => ("image", media),
                PartContent::Audio(media) => ("audio", media),
                _ => return None,
            };
            Some(serde_json::json!({
                "type": kind, "mime_type": media.mime_type, "size": media.data.len(),
            }))
        })
        .collect()
}

/// The resource links and embedded resources of `parts`, as `$ref` sees
/// them.
fn links_of(parts: &[corral_sandbox::OutputPart]) -> Vec<Value> {
    use corral_sandbox::{PartContent, ResourceContents};
    let mut links: Vec<Value> = parts
        .iter()
        .filter_map(|part| match &part.content {
            PartContent::ResourceLink(link) => Some(serde_json::json!({
                "uri": link.uri, "name": link.name, "mime_type": link.mime_type, "size": link.size,
            })),
            _ => None,
        })
        .collect();
    // An embedded resource a link already names is that link.
    let linked: Vec<String> = links.iter().map(|l| l["uri"].to_string()).collect();
    let embedded = parts.iter().filter_map(|part| match &part.content {
        PartContent::Resource(resource)
            if !linked.contains(&Value::from(resource.uri.as_str()).to_string()) =>
        {
            let size = match &resource.contents {
                ResourceContents::Text(text) => text.len(),
                ResourceContents::Blob(bytes) => bytes.len(),
                _ => 0,
            };
            let name = resource.uri.rsplit('/').next().unwrap_or_default();
            Some(serde_json::json!({
                "uri": resource.uri, "name": name, "mime_type": resource.mime_type, "size": size,
            }))
        }
        _ => None,
    });
    links.extend(embedded);
    links
}
