//! What a reviewer is asked to decide ([`ReviewRequest`]) and which gate
//! asked ([`Gate`]): the data an approval carries from the call path (and
//! from a guest's `request-approval`, through the sandbox) to a reviewer.
//! The reviewers and the gate rule are the library's (`corral::Reviewer`,
//! `corral::requires_approval`); the sandbox only carries the request, so
//! that [`CallError::ApprovalPending`](crate::CallError::ApprovalPending)
//! can hold it.

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// Which gate asked for a review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Gate {
    /// The tool requires approval (spec or configuration); asked before the
    /// sandbox starts.
    Declared,
    /// The guest called `host.request-approval` during the call.
    Requested,
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Declared => "declared",
            Self::Requested => "requested",
        })
    }
}

/// What a reviewer is asked to decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ReviewRequest {
    /// Which gate asked.
    pub gate: Gate,
    /// The tool being called.
    pub tool: String,
    /// The plugin (file stem) that provides it; `pipelines` for a pipeline,
    /// `corral` for a built-in.
    pub plugin: String,
    /// Lowercase hex sha256 of the plugin's component; empty for pipelines and
    /// built-ins.
    pub plugin_sha256: String,
    /// For [`Gate::Declared`], the tool's description; for
    /// [`Gate::Requested`], what the guest says it is about to do.
    pub description: String,
    /// The call's arguments (after validation against the schema).
    pub arguments: Value,
    /// How long the reviewer has before the decision becomes deny.
    #[serde(skip)]
    pub timeout: Duration,
    /// The script that makes this call, when it comes from code mode
    /// (`execute_code`): approving the script approved none of its calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script: Option<ScriptOrigin>,
}

/// The script behind a call made from code mode, as a reviewer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ScriptOrigin {
    /// Lowercase hex sha256 of the script's text.
    pub sha256: String,
    /// Its first [`ScriptOrigin::EXCERPT_LINES`] lines, each cut to
    /// [`ScriptOrigin::EXCERPT_CHARS`] characters: the model's text,
    /// escaped when rendered.
    pub excerpt: String,
    /// Which of the script's tool calls this is, from 0 (the calls of a
    /// `tools.parallel` wave in their order in the wave); `None` before
    /// the call layer numbers it.
    pub call: Option<u32>,
    /// The id of the script's run: the audit log's `call_id` of its
    /// `execute_code` record, which the records of its calls name as their
    /// `parent_id`.
    pub run: Option<String>,
}

impl ScriptOrigin {
    /// Lines of the script a reviewer sees: 3.
    pub const EXCERPT_LINES: usize = 3;
    /// Characters kept of each of those lines: 120.
    pub const EXCERPT_CHARS: usize = 120;

    /// The origin of calls made by `code` (its digest is `sha256`).
    pub fn new(sha256: impl Into<String>, code: &str) -> Self {
        let excerpt = code
            .lines()
            .take(Self::EXCERPT_LINES)
            .map(|line| {
                let cut: String = line.chars().take(Self::EXCERPT_CHARS).collect();
                if cut.len() < line.len() {
                    format!("{cut}…")
                } else {
                    cut
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        Self {
            sha256: sha256.into(),
            excerpt,
            call: None,
            run: None,
        }
    }

    /// This origin for the run with id `run`.
    #[must_use]
    pub fn with_run(mut self, run: impl Into<String>) -> Self {
        self.run = Some(run.into());
        self
    }

    /// This origin for the script's call number `index` (from 0).
    #[must_use]
    pub fn with_call(mut self, index: u32) -> Self {
        self.call = Some(index);
        self
    }
}

impl ReviewRequest {
    /// A request of `gate` to call `tool` of `plugin` (the file stem;
    /// `pipelines` for a pipeline, `corral` for a built-in) whose component
    /// has the sha256 `plugin_sha256` (lowercase hex; empty for pipelines
    /// and built-ins), with what the reviewer reads (`description`), the
    /// validated `arguments`, and how long the reviewer has (`timeout`).
    /// The one constructor: the struct is `#[non_exhaustive]`, so a later
    /// field comes with a default here.
    pub fn new(
        gate: Gate,
        tool: impl Into<String>,
        plugin: impl Into<String>,
        plugin_sha256: impl Into<String>,
        description: impl Into<String>,
        arguments: Value,
        timeout: Duration,
    ) -> Self {
        Self {
            gate,
            tool: tool.into(),
            plugin: plugin.into(),
            plugin_sha256: plugin_sha256.into(),
            description: description.into(),
            arguments,
            timeout,
            script: None,
        }
    }

    /// This request, for a call that `script` makes.
    #[must_use]
    pub fn with_script(mut self, script: Option<ScriptOrigin>) -> Self {
        self.script = script;
        self
    }

    /// A rendering for a person. What the plugin supplied (the description,
    /// or the guest's request text) comes first, every line quoted with `│`;
    /// then, under a rule of their own, the facts corral knows: tool, plugin
    /// and digest, gate, arguments. Every character that could drive a
    /// terminal is shown as an escape ([`corral_names::text::escape`]), so
    /// no guest text can erase, recolor or impersonate the host's lines.
    /// Several lines, no trailing newline.
    pub fn render(&self) -> String {
        let quoted: Vec<String> = corral_names::text::escape(&self.description)
            .lines()
            .map(|line| format!("  │ {line}"))
            .collect();
        let args = serde_json::to_string_pretty(&self.arguments)
            .unwrap_or_else(|_| self.arguments.to_string());
        let args = corral_names::text::escape_json(&args);
        let sha = if self.plugin_sha256.is_empty() {
            String::new()
        } else {
            format!(
                " (sha256 {}…)",
                &self.plugin_sha256[..12.min(self.plugin_sha256.len())]
            )
        };
        let (says, gate) = match self.gate {
            Gate::Declared => (
                "the tool's description",
                "declared: the tool requires approval for every call",
            ),
            Gate::Requested => (
                "the plugin asks, in its own words",
                "requested by the plugin during the call",
            ),
        };
        let args = args
            .lines()
            .enumerate()
            .map(|(i, line)| {
                if i == 0 {
                    line.to_string()
                } else {
                    format!("           {line}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let script = match &self.script {
            None => String::new(),
            Some(origin) => {
                let lines: Vec<String> = corral_names::text::escape(&origin.excerpt)
                    .lines()
                    .map(|line| format!("           │ {line}"))
                    .collect();
                let which = origin
                    .call
                    .map_or_else(String::new, |index| format!("call {} of ", index + 1));
                format!(
                    "\nfrom:      {which}a script (execute_code, sha256 {}…); approving the \
                     script approved none of its calls. It begins:\n{}",
                    &origin.sha256[..12.min(origin.sha256.len())],
                    lines.join("\n")
                )
            }
        };
        format!(
            "{says}:\n{}\n── from corral (not the plugin) ──\ntool:      {}\nplugin:    {}{sha}\n\
             gate:      {gate}\narguments: {args}{script}",
            quoted.join("\n"),
            corral_names::text::escape(&self.tool),
            corral_names::text::escape(&self.plugin),
        )
    }
}
