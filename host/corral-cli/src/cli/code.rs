//! `corral code <file.js | ->`: run a script in code mode (the built-in
//! `execute_code`), its tool calls through the same gates as `corral call`.

use std::io::Read as _;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use corral::{CODE_TOOL, CallError, CallOptions};
use serde_json::{Value, json};

use super::gates::GateArgs;
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
        let code = if self.script == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the script from stdin")?;
            text
        } else {
            std::fs::read_to_string(&self.script)
                .with_context(|| format!("cannot read the script file {}", self.script))?
        };
        let host = global
            .host_with(|b| self.gates.configure(b, &global.replica_id()))
            .await?;
        // A script is a call of the built-in `execute_code`, through the one
        // call path: hidden by --exclude-tools, gated by --require-approval,
        // recorded like any call.
        if host.tool(CODE_TOOL).is_none() {
            let err = CallError::UnknownTool {
                name: CODE_TOOL.to_string(),
                suggestion: None,
            };
            return Err(super::call::setup_error(&err, &self.gates).unwrap_or_else(|| err.into()));
        }
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
