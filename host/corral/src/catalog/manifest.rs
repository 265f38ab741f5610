//! The tool manifest (TnsAI's "Tool Manifest"): one machine-readable
//! JSON document describing every tool a host serves, for catalogs, audits
//! and CI checks. `corral manifest` prints it; its JSON Schema is
//! [`MANIFEST_SCHEMA`] (`host/corral/manifest.schema.json`), and a test
//! validates the output against it.
//!
//! Shape (see the schema for every field): `{"schemaVersion": "1.0",
//! "generatedAt": RFC 3339 UTC, "corralVersion", "tools": [...]}` with the
//! tools sorted by name, each with its full spec (`parameters`,
//! `outputSchema`), metadata, effective resilience, security settings
//! (approval gate, audit), `dependsOn` and its transitive dependencies, its
//! provider (plugin file, sha256, WIT version), its effective limits and a
//! summary of its grants.

use serde_json::{Value, json};

use crate::catalog::Catalog;

/// The manifest format's version.
pub const MANIFEST_VERSION: &str = "1.0";

/// The JSON Schema (draft 2020-12) of the manifest.
pub const MANIFEST_SCHEMA: &str = include_str!("../../manifest.schema.json");

/// The manifest of `catalog` (each tool's limits and gate as the catalog
/// decided them when it was built).
pub(crate) fn build(catalog: &Catalog) -> Value {
    let graph = catalog.tool_graph();
    let tools: Vec<Value> = catalog
        .tools()
        .map(|tool| {
            let spec = tool.spec();
            let m = &spec.metadata;
            let r = tool.resilience();
            let (provider, limits, grants) = match tool.plugin() {
                Some(plugin) => {
                    let l = tool.limits().copied().unwrap_or_default();
                    (
                        json!({
                            "kind": "plugin",
                            "name": plugin.name(),
                            "file": plugin.path().file_name().map(|f| f.to_string_lossy()),
                            "sha256": plugin.sha256(),
                            "signature": plugin.signature(),
                            "witVersion": plugin.wit_version(),
                        }),
                        json!({
                            "fuel": l.fuel,
                            "timeoutMs": l.timeout_ms,
                            "memoryBytes": l.memory_bytes,
                            "outputBytes": l.output_bytes,
                            "stdioBytes": l.stdio_bytes,
                            "resources": l.resources,
                        }),
                        plugin.policy().grants_summary(),
                    )
                }
                None => (
                    json!({ "kind": if tool.pipeline().is_some() { "pipeline" } else { "builtin" } }),
                    Value::Null,
                    Value::Null,
                ),
            };
            json!({
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
                "outputSchema": spec.output_schema,
                "metadata": {
                    "category": m.category,
                    "keywords": m.keywords,
                    "version": m.version,
                    "idempotent": m.idempotent,
                    "parallelizable": m.parallelizable,
                    "latency": m.latency,
                    "priority": m.priority,
                    "returnBehavior": m.return_behavior,
                },
                "dependsOn": m.depends_on,
                "transitiveDependencies": graph.transitive_dependencies(&spec.name),
                "resilience": {
                    "retry": r.retry,
                    "circuitBreaker": r.circuit_breaker,
                    "rateLimit": r.rate_limit,
                    "pluginRateLimit": r.plugin_rate_limit,
                    "cache": r.cache,
                    "health": r.health,
                },
                "security": {
                    "requiresApproval": tool.requires_approval(),
                    "audit": r.audit,
                },
                "provider": provider,
                "limits": limits,
                "grants": grants,
            })
        })
        .collect();
    json!({
        "schemaVersion": MANIFEST_VERSION,
        "generatedAt": humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        "corralVersion": env!("CARGO_PKG_VERSION"),
        "tools": tools,
    })
}
