//! `corral inspect FILE.wasm`: what a component is and offers, found from
//! its types without running any of its code ([`corral::Host::inspect`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use corral::Host;

use super::{GlobalArgs, for_stdout, print_json};

/// Show what a component file is and offers, without running any of its
/// code: its world, its imports (which corral provides, and what a call gets
/// from each without a policy grant), and, for a component of another world
/// (any-component mode), every tool it would expose with its schema and
/// every export that is not a tool, with why.
///
/// `--json` prints `corral::Inspection`: `{"sha256", "world",
/// "any_component", "imports": [{"name", "provided", "access"}], "tools":
/// [{"name", "description", "parameters"}], "skipped": [{"export",
/// "reason"}]}`. Names are before any policy's `rename` or `prefix`.
#[derive(Args, Debug)]
pub struct InspectCmd {
    /// The component file
    file: PathBuf,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

impl InspectCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let host = Host::builder().cache(global.cache()).build().await?;
        // The error names the file.
        let found = host.inspect(&self.file)?;
        if self.json {
            print_json(&serde_json::to_value(&found)?)?;
            return Ok(ExitCode::SUCCESS);
        }
        outln!("component: {}", self.file.display())?;
        outln!("sha256:    {}", found.sha256)?;
        if found.any_component {
            outln!(
                "world:     {} (not corral:tool/plugin: served in any-component mode)",
                for_stdout(&found.world)
            )?;
        } else {
            outln!("world:     {}", found.world)?;
        }
        outln!()?;
        outln!("imports ({}):", found.imports.len())?;
        let width = found
            .imports
            .iter()
            .map(|i| i.name.len())
            .max()
            .unwrap_or(0);
        for import in &found.imports {
            let mark = if import.provided {
                "provided"
            } else {
                "MISSING "
            };
            outln!(
                "  {:width$}  {mark}  {}",
                for_stdout(&import.name),
                import.access
            )?;
        }
        outln!()?;
        if !found.any_component {
            outln!("tools: a plugin of corral's world names its tools when it runs `describe`;")?;
            outln!("       `corral --plugins DIR list` loads it and shows them")?;
            return Ok(ExitCode::SUCCESS);
        }
        outln!("tools ({}):", found.tools.len())?;
        for tool in &found.tools {
            outln!("  {}", for_stdout(&tool.name))?;
            for line in tool.description.lines() {
                if line.trim().is_empty() {
                    outln!()?;
                } else {
                    outln!("    {}", for_stdout(line))?;
                }
            }
            outln!(
                "    parameters: {}",
                for_stdout(&tool.parameters.to_string())
            )?;
        }
        if !found.skipped.is_empty() {
            outln!()?;
            outln!("not tools ({}):", found.skipped.len())?;
            for skipped in &found.skipped {
                outln!(
                    "  {}: {}",
                    for_stdout(&skipped.export),
                    for_stdout(&skipped.reason)
                )?;
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
