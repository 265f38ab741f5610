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
            outln!(
                "{:w0$}  {:w1$}  {:w2$}  {}",
                row[0],
                row[1],
                row[2],
                row[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            )?;
        }
        if rows.is_empty() {
            eprintln!("no tools loaded");
        }
        for err in host.load_errors() {
            // Load errors may quote what a plugin file supplied.
            eprintln!(
                "not loaded: {}",
                corral::untrusted_text::escape_line(&err.to_string())
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// The first sentence of `text` on one line (runs of whitespace, newlines
/// included, become one space), at most `max` characters.
fn first_sentence(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let sentence = one_line
        .split(". ")
        .next()
        .unwrap_or(&one_line)
        .trim_end_matches('.');
    if sentence.chars().count() > max {
        let cut: String = sentence.chars().take(max - 1).collect();
        format!("{cut}…")
    } else {
        sentence.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::first_sentence;

    #[test]
    fn a_table_row_stays_on_one_line() {
        // A policy's `note` is appended to the description after a blank line.
        let described = "Create or replace a note.\n\nNote: Overwrites any note.";
        assert_eq!(first_sentence(described, 70), "Create or replace a note");
        assert_eq!(first_sentence("Add\ntwo  numbers", 70), "Add two numbers");
        assert_eq!(first_sentence("abcdef", 4), "abc…");
    }
}
