//! `corral call <tool> <arguments>`: one sandboxed call.

use std::io::Read as _;
use std::process::ExitCode;

use anyhow::{Context as _, anyhow};
use clap::Args;
use corral::{CallError, CallOptions};
use serde_json::{Value, json};

use super::gates::GateArgs;
use super::{EXIT_TOOL_FAILED, GlobalArgs, print_json};

/// Call a tool inside the sandbox.
///
/// Without `--json`, prints the output (pretty JSON when the tool returned JSON)
/// on stdout, or `Error: <message>` on stderr. With `--json`, prints on stdout
/// either `{"tool", "ok": true, "output", "return_behavior", "duration_ms",
/// "fuel_consumed"}` (plus `"parts"`, every part of a WIT 0.3.0 output with
/// bytes as base64, when there is more than one text) or `{"tool", "ok": false, "error": {"kind", "message"},
/// "llm_text"}`; `kind` is one of the classes of `CallError::kind`.
///
/// Exit codes: 0 success, 1 the tool failed (including a reviewer's
/// rejection), 2 corral failed: an unknown tool, or a configuration error such
/// as a gated tool with no `--approve` reviewer.
#[derive(Args, Debug)]
pub struct CallCmd {
    /// The tool name, as `corral list` shows it
    tool: String,
    /// Arguments: JSON text of an object, `@FILE` to read it from a file, or `-`
    /// for stdin
    #[arg(default_value = "{}")]
    arguments: String,
    #[command(flatten)]
    gates: GateArgs,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
    /// Write the output's images, audio and binary resources into this
    /// directory, as `<tool>-<part>.<ext>` (WIT 0.3.0 tools)
    #[arg(long, visible_alias = "out-dir", value_name = "DIR")]
    out: Option<std::path::PathBuf>,
    /// Who answers the tool's questions to its user (WIT 0.3.0 `elicit`, as
    /// its policy's `[client] elicitation` allows): `console` asks at the
    /// terminal. Without it the tool is told no one can answer
    #[arg(long, value_name = "WHO", value_parser = ["console"])]
    elicit: Option<String>,
    /// Record the call into this directory (mode 0700; each file 0600):
    /// `corral replay FILE` runs it again offline. Prints the file on
    /// stderr
    #[arg(long, value_name = "DIR")]
    record: Option<std::path::PathBuf>,
}

impl CallCmd {
    fn read_arguments(&self) -> anyhow::Result<String> {
        if self.arguments == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the arguments from stdin")?;
            return Ok(text);
        }
        if let Some(path) = self.arguments.strip_prefix('@') {
            return std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the arguments from file {path}"));
        }
        Ok(self.arguments.clone())
    }

    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let arguments = self.read_arguments()?;
        let record = self.record.clone();
        let host = global
            .host_with(|b| {
                let b = self.gates.configure(b, &global.replica_id())?;
                Ok(match record {
                    Some(dir) => b.recordings(corral::replay::RecordingsConfig::new(dir)),
                    None => b,
                })
            })
            .await?;
        let mut options = CallOptions::default().with_context(self.gates.call_context());
        if self.elicit.is_some() {
            options = options.with_client(std::sync::Arc::new(corral::ConsoleClient::new()));
        }
        let request = self
            .record
            .is_some()
            .then(corral::replay::RecordRequest::new);
        options.record = request.clone();
        let result = host.call(&self.tool, &arguments, &options).await;
        if let Some(request) = request {
            for path in request.written() {
                eprintln!("recorded: {}", path.display());
            }
            for why in request.failed() {
                eprintln!("warning: {why}");
            }
        }
        if let Some(err) = result
            .as_ref()
            .err()
            .and_then(|e| setup_error(e, &self.gates))
        {
            return Err(err);
        }
        match result {
            Ok(out) => {
                if self.json {
                    let mut printed = json!({
                        "tool": out.tool,
                        "ok": true,
                        "output": out.json().cloned().unwrap_or(Value::String(out.text.clone())),
                        "return_behavior": out.return_behavior,
                        "duration_ms": out.duration.as_secs_f64() * 1e3,
                        "fuel_consumed": out.fuel_consumed,
                    });
                    if !out.parts.is_empty() {
                        printed["parts"] = serde_json::to_value(&out.parts)?;
                    }
                    print_json(&printed)?;
                } else if !out.parts.is_empty() {
                    super::parts::print(&out, self.out.as_deref())?;
                } else {
                    match out.json() {
                        Some(value) => print_json(value)?,
                        None => outln!("{}", super::for_stdout(&out.text))?,
                    }
                }
                Ok(ExitCode::SUCCESS)
            }
            Err(err) => {
                if self.json {
                    print_json(&json!({
                        "tool": self.tool,
                        "ok": false,
                        "error": err.to_json(),
                        "llm_text": err.llm_text(),
                    }))?;
                } else {
                    eprintln!("{}{}", err.llm_text(), super::flag_hint(&err));
                }
                Ok(ExitCode::from(EXIT_TOOL_FAILED))
            }
        }
    }
}

/// A failure that is not the tool's but corral's configuration (an unknown
/// tool, a gate nobody can decide), as the CLI's own error (exit code 2),
/// naming the flag that fixes it; `None` for the tool's failures.
pub(super) fn setup_error(err: &CallError, gates: &GateArgs) -> Option<anyhow::Error> {
    if !matches!(
        err,
        CallError::UnknownTool { .. } | CallError::Configuration { .. }
    ) {
        return None;
    }
    let approve = if matches!(err, CallError::Configuration { .. }) && !gates.has_reviewer() {
        "; pass --approve auto|deny|console|rules:FILE"
    } else {
        ""
    };
    Some(anyhow!("{err}{}{approve}", super::flag_hint(err)))
}
