//! `corral describe <tool>`: one tool's full spec.

use std::process::ExitCode;

use anyhow::anyhow;
use clap::Args;
use corral::CallError;
use serde_json::json;

use super::{GlobalArgs, print_json};

/// Show one tool's description, metadata and argument schema.
///
/// `--json` prints `{"name", "description", "parameters", "metadata",
/// "plugin": {"name", "path", "sha256", "signature": {"signer",
/// "fingerprint", "kind"} | null, "guest_name", "policy": path | null,
/// "grants": [text], "limits": corral::Limits} | null}` (`null` for a
/// built-in tool or a pipeline; `limits` as the catalog computed them at load).
#[derive(Args, Debug)]
pub struct DescribeCmd {
    /// The tool name, as `corral list` shows it
    tool: String,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

impl DescribeCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let host = global.host().await?;
        let Some(tool) = host.tool(&self.tool) else {
            let suggestion = host
                .tools()
                .into_iter()
                .map(|t| t.spec().name.clone())
                .find(|n| n.eq_ignore_ascii_case(&self.tool));
            return Err(anyhow!(CallError::UnknownTool {
                name: self.tool,
                suggestion,
            }));
        };
        let spec = tool.spec();
        let plugin = tool.plugin();
        // A plugin tool's limits, as the catalog computed them at load.
        let limits = tool.limits().copied().unwrap_or(*host.limits());
        if self.json {
            print_json(&json!({
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
                "metadata": spec.metadata,
                "plugin": plugin.map(|p| json!({
                    "name": p.name(),
                    "path": p.path(),
                    "sha256": p.sha256(),
                    "signature": p.signature(),
                    "guest_name": tool.guest_name(),
                    "policy": (!p.policy().path.as_os_str().is_empty()).then(|| p.policy().path.clone()),
                    "grants": p.policy().grants(&limits),
                    "limits": limits,
                })),
            }))?;
            return Ok(ExitCode::SUCCESS);
        }
        let m = &spec.metadata;
        outln!("{}", spec.name)?;
        outln!("  {}", spec.description)?;
        outln!()?;
        match plugin {
            Some(p) => {
                outln!("plugin:            {} ({})", p.name(), p.path().display())?;
                outln!("sha256:            {}", p.sha256())?;
                match p.signature() {
                    Some(signed) => outln!("signature:         {signed}")?,
                    None => outln!("signature:         none verified")?,
                }
            }
            None => outln!("plugin:            (built into corral)")?,
        }
        outln!("category:          {}", m.category)?;
        outln!("keywords:          {}", m.keywords.join(", "))?;
        outln!("version:           {}", m.version)?;
        outln!("idempotent:        {}", m.idempotent)?;
        outln!("parallelizable:    {}", m.parallelizable)?;
        outln!("latency:           {}", m.latency)?;
        outln!("requires approval: {}", tool.requires_approval())?;
        outln!("return behavior:   {}", m.return_behavior)?;
        if let Some(p) = plugin {
            if tool.guest_name() != spec.name {
                outln!("plugin's name:     {}", tool.guest_name())?;
            }
            outln!("grants:")?;
            for line in p.policy().grants(&limits) {
                outln!("  {line}")?;
            }
        }
        outln!("parameters:")?;
        outln!("{}", serde_json::to_string_pretty(&spec.parameters)?)?;
        Ok(ExitCode::SUCCESS)
    }
}
