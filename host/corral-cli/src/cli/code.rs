//! `corral code <file.js | ->`: run a script in code mode (the built-in
//! `execute_code`), its tool calls through the same gates as `corral call`.

use std::process::ExitCode;

use clap::Args;
use corral::{CODE_TOOL, CallOptions};
use serde_json::{Value, json};

use super::gates::GateArgs;
use super::plan::{file_or_stdin, host_serving};
use super::{EXIT_TOOL_FAILED, GlobalArgs, print_json};

/// Run a JavaScript script that calls tools (`execute_code`).
///
/// The file is the body of an async function: `await tools.NAME({...})`
/// calls a tool, `return` gives the result. Prints the returned value as
/// JSON on stdout and the script's console lines on stderr (`--json`: the
/// whole `{result, logs, calls}` on stdout). Exit code 1 when the script
/// throws or is stopped by a limit.
#[derive(Args, Debug)]
pub struct CodeCmd {
    /// The script file, or `-` for stdin
    script: String,
    /// Print the whole result (`result`, `logs`, `calls`) as JSON
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    gates: GateArgs,
}

impl CodeCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let code = file_or_stdin(&self.script, "script")?;
        let host = host_serving(global, &self.gates, CODE_TOOL).await?;
        let options = CallOptions::default().with_context(self.gates.call_context());
        let result = host
            .call_value(CODE_TOOL, json!({ "code": code }), &options)
            .await;
        let out = match result {
            Ok(out) => out.into_json().unwrap_or_default(),
            Err(err) => {
                if let Some(err) = super::call::setup_error(&err, &self.gates) {
                    return Err(err);
                }
                eprintln!("{}: {}", self.script, err.llm_text());
                return Ok(ExitCode::from(EXIT_TOOL_FAILED));
            }
        };
        if self.json {
            print_json(&out)?;
        } else {
            // Each line was cut, scanned for secrets and escaped by the sandbox.
            for line in out["logs"].as_array().into_iter().flatten() {
                eprintln!(
                    "console.{}: {}",
                    line["level"].as_str().unwrap_or("info"),
                    line["text"].as_str().unwrap_or("")
                );
            }
            print_json(out.get("result").unwrap_or(&Value::Null))?;
        }
        Ok(ExitCode::SUCCESS)
    }
}
