//! `corral policy suggest`, `corral policy unused` and `corral policy
//! learn`: least privilege from the evidence of what each tool attempted
//! (the library's `PluginEvidence`, kept in the evidence directory,
//! `--evidence-dir`), and `policy accept NAME --suggested`'s half of it.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use serde_json::json;

use super::{GlobalArgs, print_json};

/// The evidence directory when `--evidence-dir` is not given:
/// `$XDG_STATE_HOME/corral/evidence`, else `~/.local/state/corral/evidence`;
/// `None` without either variable.
pub fn default_evidence_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state"))
        })?;
    Some(base.join("corral").join("evidence"))
}

/// The evidence directory `global` names: `--evidence-dir`, else
/// [`default_evidence_dir`].
pub fn dir_of(global: &GlobalArgs) -> Option<PathBuf> {
    global.evidence_dir.clone().or_else(default_evidence_dir)
}

fn evidence_dir(global: &GlobalArgs) -> anyhow::Result<PathBuf> {
    dir_of(global)
        .context("no evidence directory: pass --evidence-dir DIR (or set HOME or XDG_STATE_HOME)")
}

/// The plugin's policy file and its text ("" when it has none).
fn policy_of(global: &GlobalArgs, name: &str) -> anyhow::Result<(PathBuf, String)> {
    let wasm = global.plugin_dir().join(format!("{name}.wasm"));
    anyhow::ensure!(
        wasm.is_file(),
        "no plugin `{}` in {} (its file would be {})",
        corral::untrusted_text::escape_line(name),
        global.plugin_dir().display(),
        wasm.display()
    );
    let path = corral::policy_path_in(&wasm, global.policy_dir.as_deref());
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
    };
    Ok((path, text))
}

/// Suggest the smallest policy that would have allowed what a plugin's
/// tools were denied for a missing grant.
///
/// Reads the plugin's evidence (NAME.evidence.json in the evidence
/// directory) and prints the suggested policy as a diff against the current
/// one; every added line says which tools needed it and in how many calls.
/// Files are granted by the fewest directories, read-only unless a write was
/// seen; HTTP origins exactly as seen; limits at the peak × 2. Environment
/// variables cannot be learnt. With --write, writes NAME.policy.suggested.toml
/// beside the policy, inert until `corral policy accept NAME --suggested`.
#[derive(Args, Debug)]
pub struct SuggestCmd {
    /// The plugin's name (its file is NAME.wasm)
    name: String,
    /// Widen what was seen: `hosts` turns two or more hosts under one
    /// parent domain into `*.parent`
    #[arg(long, value_name = "WHAT", value_parser = ["hosts"])]
    generalise: Option<String>,
    /// Write the suggestion as NAME.policy.suggested.toml
    #[arg(long)]
    write: bool,
    /// Print JSON: {"plugin", "changes", "diff": [line], "notes": [text],
    /// "text", "written": path | null}
    #[arg(long)]
    json: bool,
}

impl SuggestCmd {
    /// Runs the subcommand: exit 0, also when there is nothing to suggest.
    pub fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let (path, current) = policy_of(global, &self.name)?;
        let dir = evidence_dir(global)?;
        let evidence = corral::read_evidence(&dir, &self.name)?.with_context(|| {
            format!(
                "no evidence of `{}` in {}: call its tools (through `corral call`, `serve` or \
                 `corral policy learn {} --run CALLS.jsonl`) first",
                self.name,
                dir.display(),
                self.name
            )
        })?;
        let how = match self.generalise.as_deref() {
            Some("hosts") => corral::Generalise::Hosts,
            _ => corral::Generalise::Nothing,
        };
        let mut suggestion = corral::suggest_policy(&self.name, &current, &evidence, how)
            .map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
        // Environment variables cannot be learnt: name those the publisher
        // requests (a pull's NAME.policy.requested.toml) and the policy lacks.
        let wasm = global.plugin_dir().join(format!("{}.wasm", self.name));
        let requested = corral::requested_policy_path(&wasm);
        if let Ok(text) = std::fs::read_to_string(&requested)
            && let Ok(asked) = corral::Policy::parse(&text, &path)
        {
            let current_env: Vec<String> = corral::Policy::parse(&current, &path)
                .map(|p| p.environment.iter().map(|e| e.name().to_owned()).collect())
                .unwrap_or_default();
            for env in &asked.environment {
                if !current_env.iter().any(|n| n == env.name()) {
                    suggestion.notes.push(format!(
                        "environment variable {} is requested by the publisher ({}); its use \
                         cannot be learnt: add it under [environment] if the tool needs it",
                        env.name(),
                        requested.display()
                    ));
                }
            }
        }
        let written = if self.write && suggestion.changes > 0 {
            let target = suggested_path(&path);
            corral_files::write_whole(
                &target,
                suggestion.text.as_bytes(),
                corral_files::WriteOptions::SYNCED,
            )
            .with_context(|| format!("cannot write {}", target.display()))?;
            Some(target)
        } else {
            None
        };
        if self.json {
            print_json(&json!({
                "plugin": self.name,
                "changes": suggestion.changes,
                "diff": suggestion.diff,
                "notes": suggestion.notes,
                "text": suggestion.text,
                "written": written,
            }))?;
            return Ok(ExitCode::SUCCESS);
        }
        let calls: u64 = evidence.tools.values().map(|t| t.calls.count).sum();
        outln!(
            "# {}: {} call{} of {} tool{}{}; evidence {}",
            path.display(),
            calls,
            if calls == 1 { "" } else { "s" },
            evidence.tools.len(),
            if evidence.tools.len() == 1 { "" } else { "s" },
            if evidence.learning {
                ", learning runs included"
            } else {
                ""
            },
            corral::evidence_path(&dir, &self.name).display()
        )?;
        if suggestion.changes == 0 {
            outln!("nothing to suggest: every attempt the evidence holds was allowed")?;
        } else {
            for line in &suggestion.diff {
                outln!("{}", corral::untrusted_text::escape(line))?;
            }
        }
        for note in &suggestion.notes {
            outln!("note: {}", corral::untrusted_text::escape(note))?;
        }
        if let Some(target) = written {
            outln!(
                "wrote {}; it is inert until `corral policy accept {} --suggested`",
                target.display(),
                self.name
            )?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// `NAME.policy.suggested.toml` beside `NAME.policy.toml`.
pub fn suggested_path(policy: &Path) -> PathBuf {
    let name = policy
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .replace(".policy.toml", ".policy.suggested.toml")
        })
        .unwrap_or_default();
    policy.with_file_name(name)
}

/// Makes NAME.policy.suggested.toml the policy: creates the host
/// directories of its new file grants (`NAME-files/...`, mode 0700), checks
/// it, and moves it into place.
pub fn accept_suggested(global: &GlobalArgs, name: &str) -> anyhow::Result<Vec<String>> {
    let (path, _) = policy_of(global, name)?;
    let suggested = suggested_path(&path);
    let text = std::fs::read_to_string(&suggested).with_context(|| {
        format!(
            "no suggestion at {}: write one with `corral policy suggest {name} --write`",
            suggested.display()
        )
    })?;
    #[derive(serde::Deserialize)]
    struct Dirs {
        #[serde(default)]
        filesystem: Vec<Dir>,
    }
    #[derive(serde::Deserialize)]
    struct Dir {
        host: String,
    }
    let dirs: Dirs = toml::from_str(&text).with_context(|| format!("{}", suggested.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    for dir in dirs.filesystem {
        let prefix = format!("{name}-files/");
        if dir.host.starts_with(&prefix) && !dir.host.contains("..") {
            let host = base.join(&dir.host);
            if !host.exists() {
                std::fs::create_dir_all(&host)
                    .with_context(|| format!("cannot create {}", host.display()))?;
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt as _;
                    let _ = std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o700));
                }
            }
        }
    }
    let policy = corral::Policy::parse(&text, &path).with_context(|| {
        format!(
            "the suggestion {} is not a valid policy",
            suggested.display()
        )
    })?;
    corral_files::write_whole(&path, text.as_bytes(), corral_files::WriteOptions::SYNCED)
        .with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::remove_file(&suggested).ok();
    Ok(policy.grants(&corral::effective_limits(
        &corral::Limits::default(),
        &policy.limits,
        None,
    )))
}

/// List the grants a plugin's tools have not used.
///
/// For each plugin (or one), every grant its evidence shows no use of
/// since --since: directories no allowed file operation went through,
/// allow-list entries and credentials no allowed request matched, printed
/// as the policy lines to delete. Environment grants are listed as "cannot
/// tell": a guest's use of a variable is never seen. Exit 0 when nothing is
/// unused, 1 when something is (for a check).
#[derive(Args, Debug)]
pub struct UnusedCmd {
    /// One plugin's name [default: every plugin in the plugin directory]
    name: Option<String>,
    /// The window: `30d`, `12h`, ...
    #[arg(long, value_name = "DURATION", default_value = "30d")]
    since: String,
    /// Print JSON: [{"plugin", "since", "evidence_since", "calls", "grants":
    /// [{"section", "line", "verdict"}]}]
    #[arg(long)]
    json: bool,
    /// Also list the standing approvals in this file (`serve
    /// --standing-approvals`) of tools no call used: exemptions from the
    /// approval gate nobody needs
    #[arg(long, value_name = "FILE")]
    standing_approvals: Option<PathBuf>,
}

impl UnusedCmd {
    /// Runs the subcommand.
    pub fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let dir = evidence_dir(global)?;
        let names: Vec<String> = match self.name {
            Some(name) => vec![name],
            None => {
                let mut names: Vec<String> = std::fs::read_dir(global.plugin_dir())
                    .with_context(|| format!("cannot list {}", global.plugin_dir().display()))?
                    .filter_map(|e| {
                        let name = e.ok()?.file_name().to_string_lossy().into_owned();
                        name.strip_suffix(".wasm").map(str::to_owned)
                    })
                    .collect();
                names.sort();
                names
            }
        };
        let window = humantime::parse_duration(&self.since)
            .with_context(|| format!("--since {}: write e.g. 30d or 12h", self.since))?;
        let since = std::time::SystemTime::now()
            .checked_sub(window)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        let approvals = match &self.standing_approvals {
            Some(path) => corral::StandingApprovals::file_read_only(path)?.listed(),
            None => Vec::new(),
        };
        let mut reports = Vec::new();
        for name in &names {
            let (path, text) = policy_of(global, name)?;
            let policy = if text.is_empty() {
                corral::Policy::none()
            } else {
                corral::Policy::parse(&text, &path)?
            };
            let evidence = corral::read_evidence(&dir, name)?;
            let mut report = corral::unused_grants(name, &policy, evidence.as_ref(), since);
            for (tool, plugin, _sha256, granted_at) in &approvals {
                if plugin != name {
                    continue;
                }
                let used = evidence.as_ref().is_some_and(|e| {
                    e.tools.iter().any(|(t, seen)| {
                        (t == tool || policy.shown_name(t) == *tool) && seen.calls.last >= since
                    })
                });
                if !used {
                    report.grants.push(corral::UnusedGrant {
                        section: "standing approvals",
                        line: format!("{tool} (granted {granted_at})"),
                        verdict: corral::UnusedVerdict::Unused,
                    });
                }
            }
            reports.push(report);
        }
        let any = reports.iter().any(|r| {
            r.grants
                .iter()
                .any(|g| g.verdict == corral::UnusedVerdict::Unused)
        });
        if self.json {
            print_json(&serde_json::to_value(&reports)?)?;
        } else {
            let window = &self.since;
            for report in &reports {
                if report.grants.is_empty() {
                    continue;
                }
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let short =
                    report
                        .evidence_since
                        .filter(|s| *s > since)
                        .map_or(String::new(), |s| {
                            let covered =
                                std::time::Duration::from_secs(now.saturating_sub(s).max(1));
                            format!(
                                " (the evidence covers only the last {})",
                                humantime::format_duration(covered)
                            )
                        });
                outln!(
                    "{}: {} calls in the last {window}{short}; delete:",
                    report.plugin,
                    report.calls
                )?;
                for grant in &report.grants {
                    let line = corral::untrusted_text::escape(&grant.line);
                    match grant.verdict {
                        corral::UnusedVerdict::Unused => {
                            outln!("  - [{}] {line}", grant.section)?;
                        }
                        corral::UnusedVerdict::CannotTell => outln!(
                            "  ? [{}] {line}: cannot tell (a guest's use of a variable is never seen)",
                            grant.section
                        )?,
                    }
                }
            }
            if !any {
                outln!("every grant was used in the last {window}")?;
            }
        }
        Ok(if any {
            ExitCode::from(super::EXIT_TOOL_FAILED)
        } else {
            ExitCode::SUCCESS
        })
    }
}

/// Run calls of a plugin in a learning run and keep their evidence.
///
/// Each line of CALLS is one call, `{"tool": NAME, "arguments": {...}}`.
/// The plugin runs under its current policy with one addition: an empty,
/// read-only directory preopened at `/`, so that file attempts outside its
/// grants reach the host, fail as they would have, and are recorded. Then
/// `corral policy suggest NAME` shows what it needs.
#[derive(Args, Debug)]
pub struct LearnCmd {
    /// The plugin's name (its file is NAME.wasm)
    name: String,
    /// The calls, one JSON object per line (`-` for stdin)
    #[arg(long, value_name = "CALLS.jsonl")]
    run: PathBuf,
    /// Allow and record, for a tool author's test run: granted directories
    /// are scratch copies corral makes (read-write; the real ones are never
    /// opened), `/` is a writable scratch directory, and HTTP reaches only
    /// the --origin values
    #[arg(long)]
    permissive: bool,
    /// With --permissive, an origin the calls may reach (`https://host`,
    /// `http://127.0.0.1:8080`; repeatable); nothing else is reachable
    #[arg(long, value_name = "ORIGIN", requires = "permissive")]
    origin: Vec<String>,
}

impl LearnCmd {
    /// Runs the subcommand: exit 0 when every line was run (a call that
    /// failed is evidence too), 1 when a line is not a call.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let dir = evidence_dir(global)?;
        let name = self.name.clone();
        let host = global.host_with(|b| Ok(b.learning([name]))).await?;
        let reader: Box<dyn std::io::BufRead> = if self.run.as_os_str() == "-" {
            Box::new(std::io::stdin().lock())
        } else {
            Box::new(std::io::BufReader::new(
                std::fs::File::open(&self.run)
                    .with_context(|| format!("cannot read {}", self.run.display()))?,
            ))
        };
        let (mut ran, mut failed) = (0u64, 0u64);
        for (n, line) in reader.lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let call: serde_json::Value = serde_json::from_str(&line)
                .with_context(|| format!("{} line {}: not JSON", self.run.display(), n + 1))?;
            let (Some(tool), arguments) = (call["tool"].as_str(), &call["arguments"]) else {
                anyhow::bail!(
                    "{} line {}: write {{\"tool\": NAME, \"arguments\": {{...}}}}",
                    self.run.display(),
                    n + 1
                );
            };
            let owner = host
                .tool(tool)
                .and_then(|t| t.plugin().map(|p| p.name().to_owned()));
            if owner.as_deref() != Some(self.name.as_str()) {
                outln!(
                    "line {}: `{}` is not a tool of {}; skipped",
                    n + 1,
                    corral::untrusted_text::escape_line(tool),
                    self.name
                )?;
                continue;
            }
            let arguments = if arguments.is_null() {
                "{}".to_string()
            } else {
                arguments.to_string()
            };
            let result = host
                .call(tool, &arguments, &corral::CallOptions::default())
                .await;
            ran += 1;
            if let Err(err) = result {
                failed += 1;
                outln!(
                    "line {}: {tool}: {}",
                    n + 1,
                    corral::untrusted_text::escape(&err.to_string())
                )?;
            }
        }
        host.flush_evidence()?;
        outln!(
            "learnt from {ran} calls of {} ({failed} failed); evidence in {}; next: corral policy suggest {}",
            self.name,
            corral::evidence_path(&dir, &self.name).display(),
            self.name
        )?;
        Ok(ExitCode::SUCCESS)
    }
}
