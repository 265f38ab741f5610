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
/// `--typescript` prints the TypeScript declaration a script in code mode
/// calls the tool by (every served tool's, without a name).
#[derive(Args, Debug)]
pub struct DescribeCmd {
    /// The tool name, as `corral list` shows it
    #[arg(required_unless_present = "typescript")]
    tool: Option<String>,
    /// Print JSON instead of text
    #[arg(long, conflicts_with = "typescript")]
    json: bool,
    /// Print the TypeScript declaration of `tools` that code mode's scripts
    /// see: this tool's method, or every served tool's
    #[arg(long)]
    typescript: bool,
}

impl DescribeCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let host = global.host().await?;
        let Some(name) = self.tool else {
            let specs = host.specs();
            let callable = specs
                .iter()
                .filter(|s| !corral::RESERVED_NAMES.contains(&s.name.as_str()));
            out!(
                "{}",
                super::for_stdout(&corral::typescript_declarations(callable))
            )?;
            return Ok(ExitCode::SUCCESS);
        };
        let Some(tool) = host.tool(&name) else {
            let suggestion = host
                .tools()
                .into_iter()
                .map(|t| t.spec().name.clone())
                .find(|n| n.eq_ignore_ascii_case(&name));
            return Err(anyhow!(CallError::UnknownTool { name, suggestion }));
        };
        if self.typescript {
            out!(
                "{}",
                super::for_stdout(&corral::typescript_declarations([tool.spec()]))
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        let spec = tool.spec();
        let plugin = tool.plugin();
        // A plugin tool's limits, as the catalog computed them at load.
        let limits = tool.limits().copied().unwrap_or(*host.limits());
        if self.json {
            /// The window of `unused_grants`: 30 days.
            const UNUSED_WINDOW: std::time::Duration = std::time::Duration::from_secs(30 * 86_400);
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
                    // What the evidence of the last 30 days shows unused.
                    "unused_grants": host.unused_grants(p.name(), UNUSED_WINDOW).ok().flatten().map(|u| u.grants),
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
