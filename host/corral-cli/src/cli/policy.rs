//! `corral policy check [DIR]`: validate every plugin policy in a directory and
//! say, in words, what each plugin is granted; `corral policy accept NAME`:
//! make the policy a pull brought (or, with `--suggested`, the one `policy
//! suggest` wrote) the plugin's own. `suggest`, `unused` and `learn` are in
//! `evidence.rs`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;

use super::{EXIT_TOOL_FAILED, GlobalArgs, print_json};

/// Work with plugin policies (`<plugin>.policy.toml` beside `<plugin>.wasm`).
#[derive(Args, Debug)]
pub struct PolicyCmd {
    #[command(subcommand)]
    command: PolicyCommand,
}

#[derive(Subcommand, Debug)]
enum PolicyCommand {
    /// Validate every policy and print what each plugin is granted
    Check(CheckCmd),
    /// Make the policy a pull brought (NAME.policy.requested.toml) the
    /// plugin's policy, after showing what it grants
    Accept(AcceptCmd),
    /// Suggest the smallest policy that would have allowed what a plugin's
    /// tools were denied, from the evidence of their calls
    Suggest(super::evidence::SuggestCmd),
    /// List the grants a plugin's tools have not used in a window
    Unused(super::evidence::UnusedCmd),
    /// Run calls of a plugin in a learning run and keep their evidence
    Learn(super::evidence::LearnCmd),
}

/// Accept the policy a pulled plugin's publisher requests.
///
/// Prints what it grants and moves NAME.policy.requested.toml to
/// NAME.policy.toml, where the host reads it (a running `serve` reloads).
/// With --suggested, NAME.policy.suggested.toml (`corral policy suggest
/// NAME --write`) instead, creating the host directories of its new file
/// grants.
#[derive(Args, Debug)]
pub struct AcceptCmd {
    /// The plugin's name (its file is NAME.wasm)
    name: String,
    /// Accept the suggestion of `corral policy suggest --write`
    #[arg(long)]
    suggested: bool,
}

impl AcceptCmd {
    async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        if self.suggested {
            let grants = super::evidence::accept_suggested(global, &self.name)?;
            outln!(
                "the suggested policy is now in force for {}; it grants:",
                self.name
            )?;
            for line in &grants {
                outln!("  {}", corral::untrusted_text::escape(line))?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        let accepted = corral_dist::accept_policy(&global.plugin_dir(), &self.name)?;
        outln!(
            "{} now in force for {}{}; it grants:",
            accepted.path.display(),
            self.name,
            if accepted.replaced {
                ", replacing the previous policy"
            } else {
                ""
            }
        )?;
        for line in &accepted.grants {
            outln!("  {}", corral::untrusted_text::escape(line))?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// Validate every policy in a plugin directory.
///
/// Loads the directory like `corral list` does (so a policy is checked against
/// its plugin: integrity pin, tool names, limit maximums) and prints, per
/// plugin, its grants. `--json` prints `{"plugins": [{"plugin", "path",
/// "policy": path | null, "sha256", "grants": [text]}], "errors": [{"path",
/// "error"}]}`. Exit code 1 when any plugin or policy failed.
#[derive(Args, Debug)]
pub struct CheckCmd {
    /// The plugin directory [default: --plugins, or the bundled plugins]
    dir: Option<PathBuf>,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

impl PolicyCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        match self.command {
            PolicyCommand::Check(cmd) => cmd.run(global).await,
            PolicyCommand::Accept(cmd) => cmd.run(global).await,
            PolicyCommand::Suggest(cmd) => cmd.run(global),
            PolicyCommand::Unused(cmd) => cmd.run(global),
            PolicyCommand::Learn(cmd) => cmd.run(global).await,
        }
    }
}

impl CheckCmd {
    async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let mut global = global.clone();
        if let Some(dir) = self.dir {
            global.plugins = Some(dir);
        }
        let host = global.host().await?;
        let catalog = host.catalog();
        let mut plugins: Vec<&corral::Plugin> =
            catalog.tools().filter_map(|t| t.plugin()).collect();
        plugins.sort_by_key(|p| p.path());
        plugins.dedup_by_key(|p| p.path());
        let errors = catalog.load_errors();
        let defaults = *host.limits();
        if self.json {
            let plugins: Vec<_> = plugins
                .iter()
                .map(|p| {
                    let policy = p.policy();
                    json!({
                        "plugin": p.name(),
                        "path": p.path(),
                        "policy": (!policy.path.as_os_str().is_empty()).then(|| policy.path.clone()),
                        "sha256": p.sha256(),
                        "grants": policy.grants(&corral::effective_limits(&defaults, &policy.limits, None)),
                    })
                })
                .collect();
            let errors: Vec<_> = errors
                .iter()
                .map(|e| json!({ "path": e.path, "error": e.reason.to_string() }))
                .collect();
            print_json(&json!({ "plugins": plugins, "errors": errors }))?;
        } else {
            for plugin in &plugins {
                let policy = plugin.policy();
                let source = if policy.path.as_os_str().is_empty() {
                    "no policy file".to_string()
                } else {
                    format!("policy {}", policy.path.display())
                };
                outln!("{} ({source})", plugin.path().display())?;
                for line in
                    policy.grants(&corral::effective_limits(&defaults, &policy.limits, None))
                {
                    outln!("  {line}")?;
                }
            }
            for err in errors {
                outln!("error: {err}")?;
            }
        }
        Ok(if errors.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(EXIT_TOOL_FAILED)
        })
    }
}
