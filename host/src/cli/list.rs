//! `corral list`: every loaded tool, and the plugins that failed to load.

use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::{GlobalArgs, print_json};

/// List every loaded tool.
///
/// `--json` prints `{"tools": [{"name", "description", "plugin", "category",
/// "metadata"}], "load_errors": [{"path", "error"}]}`.
#[derive(Args, Debug)]
pub struct ListCmd {
    /// Print JSON instead of a table
    #[arg(long)]
    json: bool,
}

impl ListCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let host = global.host().await?;
        if self.json {
            let tools: Vec<_> = host
                .tools()
                .into_iter()
                .map(|t| {
                    json!({
                        "name": t.spec().name,
                        "description": t.spec().description,
                        "plugin": t.plugin().map(|p| p.name()),
                        "category": t.spec().metadata.category,
                        "metadata": t.spec().metadata,
                    })
                })
                .collect();
            let errors: Vec<_> = host
                .load_errors()
                .iter()
                .map(|e| json!({ "path": e.path, "error": e.reason.to_string() }))
                .collect();
            print_json(&json!({ "tools": tools, "load_errors": errors }))?;
            return Ok(ExitCode::SUCCESS);
        }
        let rows: Vec<[String; 4]> = host
            .tools()
            .into_iter()
            .map(|t| {
                [
                    t.spec().name.clone(),
                    t.plugin().map_or("(built-in)", |p| p.name()).to_string(),
                    t.spec().metadata.category.clone(),
                    first_sentence(&t.spec().description, 70),
                ]
            })
            .collect();
        let header = ["TOOL", "PLUGIN", "CATEGORY", "DESCRIPTION"].map(String::from);
        let widths: Vec<usize> = (0..3)
            .map(|i| {
                rows.iter()
                    .chain(std::iter::once(&header))
                    .map(|r| r[i].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in std::iter::once(&header).chain(rows.iter()) {
            println!(
                "{:w0$}  {:w1$}  {:w2$}  {}",
                row[0],
                row[1],
                row[2],
                row[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            );
        }
        if rows.is_empty() {
            eprintln!("no tools loaded");
        }
        for err in host.load_errors() {
            eprintln!("not loaded: {err}");
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// The first sentence of `text`, at most `max` characters.
fn first_sentence(text: &str, max: usize) -> String {
    let sentence = text
        .split(". ")
        .next()
        .unwrap_or(text)
        .trim_end_matches('.');
    if sentence.chars().count() > max {
        let cut: String = sentence.chars().take(max - 1).collect();
        format!("{cut}…")
    } else {
        sentence.to_string()
    }
}
