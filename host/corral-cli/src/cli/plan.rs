//! `corral plan <file | ->`: run an `execute_tool_plan` plan, or show its
//! waves (`--dry-run`) or its dependency graph (`--dot`) without running it.

use std::io::Read as _;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use corral::{CallError, CallOptions, PLAN_TOOL, PlanResult};

use super::gates::GateArgs;
use super::{EXIT_TOOL_FAILED, GlobalArgs, print_json};

/// The text of `path`, or of stdin for `-`; `what` names it in errors.
pub(super) fn file_or_stdin(path: &str, what: &str) -> anyhow::Result<String> {
    if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .with_context(|| format!("cannot read the {what} from stdin"))?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("cannot read the {what} file {path}"))
}

/// The host of a command that runs the built-in `tool` (a plan, a script):
/// a call of it takes the one call path (hidden by --exclude-tools, gated
/// by --require-approval, recorded like any call), so a host that does not
/// serve it is the CLI's error, naming the flag that hid it.
pub(super) async fn host_serving(
    global: &GlobalArgs,
    gates: &GateArgs,
    tool: &str,
) -> anyhow::Result<corral::Host> {
    let host = global
        .host_with(|b| gates.configure(b, &global.replica_id()))
        .await?;
    if host.tool(tool).is_none() {
        let err = CallError::UnknownTool {
            name: tool.to_string(),
            suggestion: None,
        };
        return Err(super::call::setup_error(&err, gates).unwrap_or_else(|| err.into()));
    }
    Ok(host)
}

/// Run a plan of tool calls with `$ref` data flow, in parallel waves.
///
/// Without flags, prints one line per reported step (`id (tool): output` or
/// `id (tool): Error: message`). `--json` prints the result shape documented in
/// `corral::PlanResult`. Exit code 1 when any step failed or was skipped.
#[derive(Args, Debug)]
pub struct PlanCmd {
    /// The plan file (JSON), or `-` for stdin
    plan: String,
    /// Print the JSON result
    #[arg(long, conflicts_with_all = ["dry_run", "dot"])]
    json: bool,
    /// Validate and print the waves without running anything
    #[arg(long, conflicts_with = "dot")]
    dry_run: bool,
    /// Validate and print the dependency graph in Graphviz DOT
    #[arg(long)]
    dot: bool,
    #[command(flatten)]
    gates: GateArgs,
}

impl PlanCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let text = file_or_stdin(&self.plan, "plan")?;
        let host = host_serving(global, &self.gates, PLAN_TOOL).await?;
        let plan = match host.validate_plan(&text) {
            Ok(plan) => plan,
            Err(err) => {
                eprintln!("{}: {}", self.plan, err.llm_text());
                return Ok(ExitCode::from(EXIT_TOOL_FAILED));
            }
        };
        if self.dry_run {
            for (i, wave) in plan.waves().iter().enumerate() {
                let steps: Vec<String> = wave
                    .iter()
                    .map(|id| {
                        let tool = plan
                            .steps()
                            .iter()
                            .find(|s| &s.id == id)
                            .map_or("", |s| s.tool.as_str());
                        format!("{id} ({tool})")
                    })
                    .collect();
                outln!("wave {i}: {}", steps.join(", "))?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        if self.dot {
            out!("{}", plan.to_dot())?;
            return Ok(ExitCode::SUCCESS);
        }
        let options = CallOptions::default().with_context(self.gates.call_context());
        let result = match host.call(PLAN_TOOL, &text, &options).await {
            Ok(out) => out.into_json().unwrap_or_default(),
            Err(err) => {
                if let Some(err) = super::call::setup_error(&err, &self.gates) {
                    return Err(err);
                }
                eprintln!("{}: {}", self.plan, err.llm_text());
                return Ok(ExitCode::from(EXIT_TOOL_FAILED));
            }
        };
        if self.json {
            print_json(&result)?;
        } else {
            out!("{}", super::for_stdout(&PlanResult::text_of(&result)))?;
        }
        // `status` is over every step, reported or not.
        let all_ok = result["status"] == "succeeded";
        Ok(if all_ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(EXIT_TOOL_FAILED)
        })
    }
}
