//! How corral's tools and results look to an MCP client: a tool's
//! definition (`inputSchema`, `outputSchema`, annotations derived from
//! metadata and policy, corral's `_meta`), a call's result (text,
//! `structuredContent`, `isError` and the error's kind), the context a
//! call carries in `_meta`, and the server's `instructions`.

use std::sync::Arc;

use corral::{CallContext, CallError, CallOutput, HealthStatus, Tool};
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorData, JsonObject, TaskPayload, Tool as McpTool,
    ToolAnnotations,
};
use serde_json::{Value, json};

use crate::{CONTEXT_META_KEY, McpServer};

impl McpServer {
    /// The MCP definition of `tool`: name, description, `inputSchema`,
    /// [`McpServer::annotations`], and `_meta` with `corral/category`,
    /// `corral/returnBehavior` and, for a plugin's tool, `corral/plugin`,
    /// `corral/sha256`, `corral/signature` when a trusted key verified the
    /// plugin's signature (`{"signer", "fingerprint", "kind"}`), and
    /// `corral/grants` (`{"files": [{"path", "writable"}],
    /// "environment": [name], "http": [destination]}`, guest paths and
    /// variable names only: never host paths or values).
    pub fn describe(&self, tool: &Tool) -> McpTool {
        let health = self.host.health_of(&tool.spec().name);
        self.describe_with(tool, health.as_ref())
    }

    pub(crate) fn describe_with(
        &self,
        tool: &Tool,
        health: Option<&corral::ToolHealth>,
    ) -> McpTool {
        let spec = tool.spec();
        let schema: JsonObject = match &spec.parameters {
            Value::Object(map) => map.clone(),
            _ => JsonObject::new(),
        };
        let mut meta = rmcp::model::MetaObject::default();
        meta.insert("corral/category".into(), json!(spec.metadata.category));
        meta.insert(
            "corral/returnBehavior".into(),
            json!(spec.metadata.return_behavior),
        );
        if let Some(plugin) = tool.plugin() {
            meta.insert("corral/plugin".into(), json!(plugin.name()));
            meta.insert("corral/sha256".into(), json!(plugin.sha256()));
            if let Some(signed) = plugin.signature() {
                meta.insert("corral/signature".into(), json!(signed));
            }
            meta.insert("corral/grants".into(), plugin.policy().grants_summary());
        }
        let mut description = spec.description.clone();
        if let Some(health) = health {
            meta.insert(
                "corral/health".into(),
                json!({"status": health.status, "reason": health.reason}),
            );
            if health.status == HealthStatus::Down {
                description.push_str(&format!(
                    "\n\nNote: this tool is failing right now ({}); prefer another tool.",
                    health.reason.as_deref().unwrap_or("DOWN")
                ));
            }
        }
        let mut described = McpTool::new(spec.name.clone(), description, Arc::new(schema))
            .with_annotations(self.annotations(tool))
            .with_meta(meta);
        if let Some(Value::Object(output)) = &spec.output_schema {
            described.output_schema = Some(Arc::new(output.clone()));
        }
        described
    }

    /// MCP tool annotations derived from corral's metadata, the host's gate
    /// rule and the plugin's policy:
    /// - `destructiveHint`: calls pass the declared approval gate
    ///   ([`Tool::requires_approval`]: the spec, the policy or the host's
    ///   configuration, decided when the catalog was built);
    /// - `idempotentHint`: the tool's `idempotent` metadata;
    /// - `readOnlyHint`: nothing outside the sandbox can change: not gated,
    ///   and the plugin has no writable directory and no HTTP grant (a
    ///   pipeline or `execute_tool_plan` is not read-only: its steps may not
    ///   be);
    /// - `openWorldHint`: the plugin may reach hosts over HTTP.
    pub fn annotations(&self, tool: &Tool) -> ToolAnnotations {
        let spec = tool.spec();
        let gated = tool.requires_approval();
        let network = tool
            .plugin()
            .is_some_and(|plugin| !plugin.policy().http_allow.is_empty());
        ToolAnnotations::new()
            .read_only(!gated && !tool.reaches_outside())
            .destructive(gated)
            .idempotent(spec.metadata.idempotent)
            .open_world(network)
    }
}

/// The text and structured content of a call's result.
pub(crate) fn to_result(result: Result<CallOutput, CallError>) -> CallToolResult {
    match result {
        Ok(mut out) => {
            let mut meta = rmcp::model::MetaObject::default();
            meta.insert("corral/returnBehavior".into(), json!(out.return_behavior));
            meta.insert(
                "corral/durationMs".into(),
                json!(out.duration.as_secs_f64() * 1e3),
            );
            meta.insert("corral/fuelConsumed".into(), json!(out.fuel_consumed));
            meta.insert("corral/attempts".into(), json!(out.attempts));
            meta.insert("corral/cacheHit".into(), json!(out.cache_hit));
            let parts = std::mem::take(&mut out.parts);
            // Of several parts, only a structured one is structured content.
            let structured = parts.is_empty()
                || parts
                    .iter()
                    .any(|part| matches!(part.content, corral::PartContent::Json { .. }));
            let (text, json) = out.into_text_and_json();
            let json = json.filter(|_| structured);
            let content = if parts.is_empty() {
                // A JSON string is shown as its text, as a model reads it
                // (`Hello, Ada!`, not `"Hello, Ada!"`); any other value as JSON.
                let text = match &json {
                    Some(Value::String(string)) => string.clone(),
                    _ => text,
                };
                vec![ContentBlock::text(text)]
            } else {
                content_blocks(parts)
            };
            let mut result = CallToolResult::success(content);
            if let Some(object @ Value::Object(_)) = json {
                result.structured_content = Some(object);
            }
            result.meta = Some(meta);
            result
        }
        Err(err) => {
            let mut result = CallToolResult::error(vec![ContentBlock::text(err.llm_text())]);
            let mut meta = rmcp::model::MetaObject::default();
            meta.insert("corral/errorKind".into(), json!(err.kind()));
            if let Some(code) = err.code() {
                meta.insert("corral/errorCode".into(), json!(code));
            }
            // A quota refusal says when to come back: milliseconds, and the
            // time (RFC 3339 UTC).
            if let CallError::QuotaExceeded {
                retry_after,
                reset_at,
                ..
            } = &err
            {
                let ms = u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX);
                meta.insert("corral/retryAfterMs".into(), json!(ms));
                meta.insert("corral/quotaResetAt".into(), json!(reset_at));
            }
            result.meta = Some(meta);
            result
        }
    }
}

/// A 0.3.0 output's parts as MCP content blocks, in order: text as text;
/// the structured part as its JSON text, unless it is an object and the
/// output has text of its own (the object is `structuredContent`); image
/// and audio as base64 with their MIME type; links and embedded resources
/// as MCP's `resource_link` and `resource`; each with its annotations.
fn content_blocks(parts: Vec<corral::OutputPart>) -> Vec<ContentBlock> {
    use base64::Engine as _;
    use corral::{PartContent, ResourceContents as Contents};
    use rmcp::model::{
        AudioContent, EmbeddedResource, ImageContent, Resource, ResourceContents, TextContent,
    };
    let base64 = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
    let has_text = parts
        .iter()
        .any(|part| matches!(part.content, PartContent::Text { .. }));
    let mut blocks = Vec::with_capacity(parts.len());
    for part in parts {
        let annotations = part.annotations.as_ref().map(annotations);
        let block = match part.content {
            PartContent::Text { text } => {
                let mut block = TextContent::new(text);
                block.annotations = annotations;
                ContentBlock::Text(block)
            }
            // An object is `structuredContent`; beside text of its own it
            // is not repeated. Any other value is shown as its JSON text.
            PartContent::Json { json } if has_text && json.trim_start().starts_with('{') => {
                continue;
            }
            PartContent::Json { json } => {
                let mut block = TextContent::new(json);
                block.annotations = annotations;
                ContentBlock::Text(block)
            }
            PartContent::Image(media) => {
                let mut block = ImageContent::new(base64(&media.data), media.mime_type);
                block.annotations = annotations;
                ContentBlock::Image(block)
            }
            PartContent::Audio(media) => {
                let mut block = AudioContent::new(base64(&media.data), media.mime_type);
                block.annotations = annotations;
                ContentBlock::Audio(block)
            }
            PartContent::ResourceLink(link) => {
                let mut resource = Resource::new(link.uri, link.name);
                resource.description = (!link.description.is_empty()).then_some(link.description);
                resource.mime_type = link.mime_type;
                resource.size = link.size;
                resource.annotations = annotations;
                ContentBlock::ResourceLink(resource)
            }
            PartContent::Resource(embedded) => {
                let contents = match embedded.contents {
                    Contents::Text(text) => ResourceContents::TextResourceContents {
                        uri: embedded.uri,
                        mime_type: embedded.mime_type,
                        text,
                        meta: None,
                    },
                    Contents::Blob(data) => ResourceContents::BlobResourceContents {
                        uri: embedded.uri,
                        mime_type: embedded.mime_type,
                        blob: base64(&data),
                        meta: None,
                    },
                    _ => continue,
                };
                let mut block = EmbeddedResource::new(contents);
                block.annotations = annotations;
                ContentBlock::Resource(block)
            }
            _ => continue,
        };
        blocks.push(block);
    }
    blocks
}

/// MCP annotations of a part's.
fn annotations(of: &corral::Annotations) -> rmcp::model::Annotations {
    let mut annotations = rmcp::model::Annotations::default();
    if !of.audience.is_empty() {
        annotations = annotations.with_audience(
            of.audience
                .iter()
                .map(|role| match role {
                    corral::Role::User => rmcp::model::Role::User,
                    corral::Role::Assistant => rmcp::model::Role::Assistant,
                })
                .collect(),
        );
    }
    if let Some(priority) = of.priority {
        // Checked to be within 0.0..=1.0 when the call returned.
        annotations = annotations.with_priority(priority as f32);
    }
    annotations
}

/// How a call run as a task ends (SEP-2663's error semantics): `failed`,
/// with a JSON-RPC error `{code: -32603, message, data: {"corral/errorKind",
/// "tool"}}` and no result, when the call produced no result of the tool:
/// the guest crashed (`trapped`: a panic, `unreachable`), or corral could
/// not run it (`internal`, `configuration`). Anything else, a tool error
/// or a limit the call hit included, is `completed` with the result
/// [`to_result`] gives in line (`isError: true` for an error), so a model
/// reads and corrects it.
pub(crate) fn task_end(result: Result<CallOutput, CallError>) -> TaskPayload {
    match result {
        Err(
            err @ (CallError::Trapped { .. }
            | CallError::Internal { .. }
            | CallError::Configuration { .. }),
        ) => {
            let data = json!({ "corral/errorKind": err.kind(), "tool": err.tool() });
            let error = ErrorData::internal_error(err.llm_text(), Some(data));
            TaskPayload::Failed {
                error: object(serde_json::to_value(error)),
            }
        }
        result => TaskPayload::Completed {
            result: object(serde_json::to_value(to_result(result))),
        },
    }
}

/// The JSON object a serialisation gave, or an empty one (the types
/// serialised here always give an object).
fn object(value: serde_json::Result<Value>) -> JsonObject {
    match value {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

/// Context from `_meta["corral/context"]`: string values only.
pub(crate) fn context_from_meta(meta: Option<&rmcp::model::RequestMetaObject>) -> CallContext {
    let Some(meta) = meta else {
        return CallContext::new();
    };
    let value = serde_json::to_value(meta).unwrap_or(Value::Null);
    match value.get(CONTEXT_META_KEY) {
        Some(Value::Object(map)) => map
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect(),
        _ => CallContext::new(),
    }
}

/// The server's `instructions`: what the tools are, and how to do work of
/// several steps with the built-ins this host serves (an excluded
/// `execute_code` or `execute_tool_plan` is not mentioned).
pub(crate) fn instructions(host: &corral::Host) -> String {
    let mut text = String::from("Sandboxed WebAssembly tools.");
    let code = host.tool(corral::CODE_TOOL).is_some();
    let plan = host.tool(corral::PLAN_TOOL).is_some();
    match (code, plan) {
        (true, true) => text.push_str(
            " For work of several steps, write one script for execute_code (loops and \
             filtering run inside it; only its result comes back), or batch dependent calls \
             into one execute_tool_plan call.",
        ),
        (true, false) => text.push_str(
            " For work of several steps, write one script for execute_code (loops and \
             filtering run inside it; only its result comes back).",
        ),
        (false, true) => {
            text.push_str(" Batch several dependent calls into one execute_tool_plan call.");
        }
        (false, false) => {}
    }
    text.push_str(" Results marked isError explain what to fix.");
    text
}

#[cfg(test)]
mod tests {
    use corral::{OutputPart, PartContent};

    use super::content_blocks;

    fn json(text: &str) -> OutputPart {
        OutputPart::new(PartContent::Json { json: text.into() })
    }

    fn text(text: &str) -> OutputPart {
        OutputPart::new(PartContent::Text { text: text.into() })
    }

    #[test]
    fn a_json_object_beside_text_is_left_to_structured_content_and_anything_else_shown() {
        let texts = |blocks: Vec<rmcp::model::ContentBlock>| -> Vec<String> {
            blocks
                .iter()
                .filter_map(|b| b.as_text().map(|t| t.text.clone()))
                .collect()
        };
        assert_eq!(
            texts(content_blocks(vec![text("see"), json(r#"{"a":1}"#)])),
            ["see"]
        );
        assert_eq!(
            texts(content_blocks(vec![text("see"), json("[1,2]")])),
            ["see", "[1,2]"]
        );
        assert_eq!(
            texts(content_blocks(vec![json(r#"{"a":1}"#)])),
            [r#"{"a":1}"#]
        );
    }
}
