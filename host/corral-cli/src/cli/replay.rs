//! `corral replay RECORDING|DIR [--plugin FILE]`: recorded calls run again
//! offline (`corral::replay`), against the recorded build or, with
//! `--plugin`, a new one (a shadow test); and where recordings are kept
//! (`--recordings-dir`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use corral::replay::{Recording, ReplayOptions, ReplayReport, Verdict};
use serde_json::json;

use super::{EXIT_TOOL_FAILED, GlobalArgs, print_json};

/// The recordings directory when `--recordings-dir` is not given:
/// `$XDG_STATE_HOME/corral/recordings`, else
/// `~/.local/state/corral/recordings`; `None` without either variable.
pub fn dir_of(global: &GlobalArgs) -> Option<PathBuf> {
    global.recordings_dir.clone().or_else(|| {
        super::evidence::default_evidence_dir()
            .and_then(|evidence| Some(evidence.parent()?.join("recordings")))
    })
}

/// Run recorded calls again offline: every import is answered from the
/// recording (no network, no files, no clock).
///
/// Prints, per recording, `identical`, `output changed` with the diff of
/// the outcome (recorded lines `-`, replayed lines `+`), `diverged at
/// import #N` with what the recording held and what the guest asked for,
/// or `failed` with why it could not run. Exit codes: 0 every replay was
/// identical, 1 one changed or diverged, 2 one could not run.
#[derive(Args, Debug)]
pub struct ReplayCmd {
    /// A recording (`*.rec`) or a directory of recordings
    path: PathBuf,
    /// Run this build of the recorded plugin instead (a shadow test of a
    /// new build): its outputs are compared with the recorded ones
    #[arg(long, value_name = "FILE")]
    plugin: Option<PathBuf>,
    /// Print JSON: one object per recording
    #[arg(long)]
    json: bool,
    /// With --plugin: accept that build after looking at its changes, so
    /// that a server with `[record] gate_updates` lets it replace the
    /// served build at its next reload (writes `accepted/SHA256` in the
    /// recordings directory)
    #[arg(long, requires = "plugin")]
    accept: bool,
}

/// One row of the result.
struct Row {
    file: PathBuf,
    outcome: Result<ReplayReport, String>,
}

impl ReplayCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let files = corral::replay::recordings_in(&self.path)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        anyhow::ensure!(
            !files.is_empty(),
            "{}: no recordings (`*.rec`) here; record calls with `corral call --record DIR` \
             or a policy's `[record]`",
            self.path.display()
        );
        let mut recordings = Vec::new();
        for file in &files {
            recordings.push((
                file.clone(),
                Recording::read(file).map_err(|e| e.to_string()),
            ));
        }
        // A shadow test runs the given build under the recorded plugin's
        // name, in a plugin directory of its own.
        let scratch = tempfile::Builder::new()
            .prefix("corral-shadow-")
            .tempdir()?;
        let host = match &self.plugin {
            None => global.host().await?,
            Some(build) => {
                let name = only_plugin(&recordings)?;
                let copy = scratch.path().join(format!("{name}.wasm"));
                std::fs::copy(build, &copy)
                    .with_context(|| format!("cannot read {}", build.display()))?;
                let dir = scratch.path().to_path_buf();
                global.host_with(|b| Ok(b.plugin_dir(dir))).await?
            }
        };
        let options = if self.plugin.is_some() {
            ReplayOptions::shadow()
        } else {
            ReplayOptions::default()
        };
        let mut rows = Vec::new();
        for (file, recording) in recordings {
            let outcome = match recording {
                Err(err) => Err(err),
                Ok(recording) => corral::replay::replay(&host, &recording, options)
                    .await
                    .map_err(|e| e.to_string()),
            };
            rows.push(Row { file, outcome });
        }
        if self.json {
            print_json(&json!(rows.iter().map(row_json).collect::<Vec<_>>()))?;
        } else if rows.len() == 1 {
            print_one(&rows[0])?;
        } else {
            print_table(&rows)?;
        }
        if self.accept
            && let Some(build) = &self.plugin
        {
            let dir = if self.path.is_dir() {
                self.path.clone()
            } else {
                self.path
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default()
            };
            let sha256 =
                corral::replay::Recordings::open(corral::replay::RecordingsConfig::new(&dir))?
                    .accept_file(build)
                    .with_context(|| format!("cannot accept {}", build.display()))?;
            eprintln!("accepted build {sha256} of {}", build.display());
            return Ok(ExitCode::SUCCESS);
        }
        let code = if rows.iter().any(|r| r.outcome.is_err()) {
            super::EXIT_CORRAL_FAILED
        } else if rows.iter().any(|r| {
            r.outcome
                .as_ref()
                .is_ok_and(|r| r.verdict != Verdict::Identical)
        }) {
            EXIT_TOOL_FAILED
        } else {
            0
        };
        Ok(ExitCode::from(code))
    }
}

/// The one plugin the recordings are of, for `--plugin`.
fn only_plugin(recordings: &[(PathBuf, Result<Recording, String>)]) -> anyhow::Result<String> {
    let mut names: Vec<&str> = recordings
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .map(|r| r.header.plugin.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    match names.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => anyhow::bail!("no recording here could be read"),
        several => anyhow::bail!(
            "--plugin takes one plugin's new build, and these recordings are of several \
             plugins ({}); replay one plugin's recordings at a time",
            several.join(", ")
        ),
    }
}

fn verdict_word(report: &ReplayReport) -> String {
    match &report.verdict {
        Verdict::Identical => "identical".to_owned(),
        Verdict::OutputChanged(_) => "output changed".to_owned(),
        Verdict::Diverged(d) => format!("diverged at import #{}", d.position),
    }
}

fn row_json(row: &Row) -> serde_json::Value {
    let file = row.file.display().to_string();
    match &row.outcome {
        Err(err) => json!({"recording": file, "result": "failed", "error": err}),
        Ok(report) => {
            let mut value = json!({
                "recording": file,
                "tool": report.tool,
                "plugin": report.plugin,
                "same_build": report.same_build,
                "result": verdict_word(report),
                "fuel": {"recorded": report.fuel.0, "replayed": report.fuel.1},
                "replay_ms": report.elapsed.as_secs_f64() * 1e3,
                "unused_imports": report.unused,
                "incomplete": report.incomplete,
            });
            match &report.verdict {
                Verdict::OutputChanged(diff) => value["diff"] = json!(diff),
                Verdict::Diverged(d) => {
                    value["divergence"] = json!({
                        "position": d.position,
                        "expected": d.expected,
                        "got": d.got,
                    });
                }
                Verdict::Identical => {}
            }
            value
        }
    }
}

fn print_one(row: &Row) -> anyhow::Result<()> {
    let report = match &row.outcome {
        Err(err) => {
            eprintln!("error: {}", corral::untrusted_text::escape(err));
            return Ok(());
        }
        Ok(report) => report,
    };
    let build = if report.same_build {
        "the recorded build"
    } else {
        "another build"
    };
    outln!(
        "{} (plugin {}, {build}): {}; fuel {} recorded, {} replayed; {:.1} ms",
        report.tool,
        report.plugin,
        verdict_word(report),
        report.fuel.0,
        report.fuel.1,
        report.elapsed.as_secs_f64() * 1e3
    )?;
    match &report.verdict {
        Verdict::Identical => {}
        Verdict::Diverged(d) => outln!("  {d}")?,
        Verdict::OutputChanged(diff) => {
            for line in diff {
                outln!("  {}", corral::untrusted_text::escape(line))?;
            }
        }
    }
    for note in &report.incomplete {
        outln!("  incomplete: {}", corral::untrusted_text::escape(note))?;
    }
    Ok(())
}

fn print_table(rows: &[Row]) -> anyhow::Result<()> {
    let width = rows
        .iter()
        .map(|r| name(&r.file).len())
        .max()
        .unwrap_or(9)
        .max(9);
    outln!("{:width$}  {:24}  RESULT", "RECORDING", "TOOL")?;
    let mut counts = [0usize; 4];
    for row in rows {
        let (tool, result, slot) = match &row.outcome {
            Err(err) => ("-".to_owned(), format!("failed: {err}"), 3),
            Ok(report) => {
                let slot = match report.verdict {
                    Verdict::Identical => 0,
                    Verdict::OutputChanged(_) => 1,
                    Verdict::Diverged(_) => 2,
                };
                (report.tool.clone(), verdict_word(report), slot)
            }
        };
        counts[slot] += 1;
        outln!(
            "{:width$}  {:24}  {}",
            name(&row.file),
            tool,
            corral::untrusted_text::escape(&result)
        )?;
    }
    outln!(
        "{} identical, {} output changed, {} diverged at an import, {} failed",
        counts[0],
        counts[1],
        counts[2],
        counts[3]
    )?;
    Ok(())
}

fn name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
