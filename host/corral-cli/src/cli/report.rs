//! Reports on the loaded tools that run nothing: `corral health` (each
//! tool's status), `corral graph` (the `depends-on` graph) and `corral
//! manifest` (TnsAI's tool manifest).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use super::{GlobalArgs, print_json};

/// Show each tool's health: UP, DEGRADED, DOWN or UNKNOWN, from its recent
/// calls in this process (a fresh `corral health` has made none, so every
/// tool is UNKNOWN; `corral serve` tracks it over time, in MCP's
/// `corral://health` and in `/metrics`).
///
/// `--json` prints `{"status", "tools": [{"tool", "status", "calls",
/// "success_rate", "p95_ms", "reason"}]}`.
#[derive(Args, Debug)]
pub struct HealthCmd {
    /// Print JSON instead of a table
    #[arg(long)]
    json: bool,
}

impl HealthCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let host = global.host().await?;
        let report = host.health();
        if self.json {
            print_json(&serde_json::to_value(&report)?)?;
            return Ok(ExitCode::SUCCESS);
        }
        outln!("overall: {}", report.status)?;
        for tool in &report.tools {
            outln!(
                "{:<28} {:<9} {}",
                tool.tool,
                tool.status.to_string(),
                tool.reason.as_deref().unwrap_or("")
            )?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// Show the tools' `depends-on` graph: each tool with what it depends on
/// (directly and transitively), or Graphviz DOT with `--dot`, or JSON with
/// `--json` (`{"order": [...], "tools": {"name": {"depends_on": [...],
/// "transitive": [...]}}}`).
#[derive(Args, Debug)]
pub struct GraphCmd {
    /// Print Graphviz DOT
    #[arg(long, conflicts_with = "json")]
    dot: bool,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

impl GraphCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let host = global.host().await?;
        let graph = host.tool_graph();
        if self.dot {
            out!("{}", graph.to_dot())?;
            return Ok(ExitCode::SUCCESS);
        }
        let order = graph
            .topological_order()
            .map_err(|tool| anyhow::anyhow!("the graph has a cycle through `{tool}`"))?;
        if self.json {
            let tools: serde_json::Map<String, serde_json::Value> = host
                .specs()
                .into_iter()
                .map(|spec| {
                    let value = serde_json::json!({
                        "depends_on": spec.metadata.depends_on,
                        "transitive": graph.transitive_dependencies(&spec.name),
                    });
                    (spec.name, value)
                })
                .collect();
            print_json(&serde_json::json!({ "order": order, "tools": tools }))?;
            return Ok(ExitCode::SUCCESS);
        }
        for tool in order {
            let deps = graph.transitive_dependencies(&tool);
            if deps.is_empty() {
                outln!("{tool}")?;
            } else {
                outln!("{tool} <- {}", deps.join(", "))?;
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// Write the tool manifest (TnsAI, docs/references.md): every tool with its spec,
/// metadata, resilience, security settings, dependencies, provider, limits
/// and grants, as JSON valid against `host/corral/manifest.schema.json`.
#[derive(Args, Debug)]
pub struct ManifestCmd {
    /// Write to this file instead of stdout
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

impl ManifestCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let host = global.host().await?;
        let manifest = host.manifest();
        match &self.out {
            None => print_json(&manifest)?,
            Some(path) => std::fs::write(path, serde_json::to_string_pretty(&manifest)? + "\n")
                .with_context(|| format!("cannot write the manifest to {}", path.display()))?,
        }
        Ok(ExitCode::SUCCESS)
    }
}
