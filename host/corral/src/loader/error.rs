//! Why a plugin did not load ([`LoadError`], with a [`LoadErrorReason`]).
//! A call's errors are the sandbox's (`corral_sandbox::CallError`); a
//! host's are in `host/error.rs`.
//!
//! Every message names the file or tool it concerns and says what to do
//! about it; it names no CLI flag (the CLI adds those).

use std::path::PathBuf;

/// Why one plugin file did not load. The other plugins load regardless.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", corral_names::text::escape_line(&.path.display().to_string()))]
pub struct LoadError {
    /// The plugin file (the message shows it escaped to one line: a file
    /// name is untrusted text, a pulled plugin's comes from a reference).
    pub path: PathBuf,
    /// What is wrong with it.
    pub reason: LoadErrorReason,
}

/// The reasons a plugin fails to load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadErrorReason {
    /// The file is not a component this host can compile: unreadable, too
    /// large, not wasm, a core module, or an invalid component.
    #[error(transparent)]
    Component(#[from] corral_sandbox::ComponentError),
    /// Loading this file hit a bug in corral (a panic, caught); the other
    /// files load regardless.
    #[error(
        "hit a bug in corral while loading ({0}); the other plugins still load; please report it"
    )]
    Internal(String),
    /// The plugin must be signed, and is not by a signer that counts (the
    /// structured reason: unsigned, evidence rejected, a policy's signers
    /// untrusted; without the `signatures` feature, that it cannot be
    /// checked).
    #[error("{0}")]
    Signature(crate::loader::signature::SignatureError),
    /// The plugin is in the directory's `corral.lock` with another digest, or
    /// the lock file cannot be read.
    #[error("{0}")]
    Locked(String),
    /// The component imports something the sandbox does not provide.
    #[error("needs imports corral does not provide: {0}")]
    UnsatisfiedImports(String),
    /// The component exports the `tool` interface of no contract version the
    /// host speaks (0.3.0, 0.2.0 or 0.1.0).
    #[error(
        "is a component of another world: {0}; a plugin must target the \
         `corral:tool/plugin@0.3.0` world in wit/corral-tool.wit (or 0.2.0 in wit/v0.2.0, \
         0.1.0 in wit/v0.1.0)"
    )]
    WrongWorld(String),
    /// `describe` trapped or hit a limit.
    #[error("`describe` failed: {0}")]
    DescribeFailed(String),
    /// A spec broke a resolver rule.
    #[error("tool `{tool}`: {problem}")]
    InvalidSpec {
        /// The offending tool name, as given.
        tool: String,
        /// Which rule it broke and how to fix it.
        problem: String,
    },
    /// Another plugin already provides this tool name (AgentEnsemble: duplicate
    /// names are a resolution error).
    #[error(
        "tool `{tool}` is already provided by {}; rename one of them (a policy's \
         `[presentation]` `rename` or `prefix` does it without rebuilding)",
        .other.display()
    )]
    DuplicateTool {
        /// The tool name.
        tool: String,
        /// The plugin that keeps the name: the first in file-name order at
        /// startup; on reload, the one already serving it.
        other: PathBuf,
    },
    /// `pipelines.json` cannot be read as pipeline definitions.
    #[error("invalid pipelines file: {0}")]
    InvalidPipelines(String),
    /// The plugin's policy file is unreadable or invalid, or this plugin or
    /// host cannot take it (the structured reason, with the file and, for
    /// a parse error, the line).
    #[error("policy: {0}")]
    Policy(crate::config::policy::PolicyError),
    /// The policy pins a sha256 and the component's differs.
    #[error(
        "sha256 is {actual} but {} requires {expected}; the file changed: \
         check where it came from, then update the pin",
        .policy.display()
    )]
    IntegrityMismatch {
        /// The pinned sha256.
        expected: String,
        /// The component's sha256.
        actual: String,
        /// The policy file.
        policy: PathBuf,
    },
    /// The plugin's tools close a cycle of `depends-on` (WIT 0.2.0).
    #[error(
        "its tools close a dependency cycle: {}; remove one of these `depends-on` entries",
        .cycle.join(" -> ")
    )]
    DependencyCycle {
        /// The tools of the cycle, the first repeated at the end.
        cycle: Vec<String>,
    },
    /// `groups.toml` cannot be read as group definitions, or a selected
    /// group is not declared.
    #[error("tool groups: {0}")]
    InvalidGroups(String),
    /// `disclosure.toml` cannot be read as facades, or breaks a facade rule
    /// (see [`Facades`](crate::Facades)); the catalog then has no facades.
    #[error("facades: {0}")]
    InvalidDisclosure(String),
    /// A group includes a tool whose grants exceed the group's declared
    /// permissions (Embabel's `ToolGroupPermission`, checked).
    #[error(
        "group `{group}` includes tool `{tool}`, which has permission `{permission}` \
         ({grant}); add \"{permission}\" to the group's `permissions`, or leave the tool \
         out with `exclude`"
    )]
    GroupPermission {
        /// The group.
        group: String,
        /// The tool that exceeds it.
        tool: String,
        /// The permission the group lacks.
        permission: String,
        /// The grant (policy file and entry) that implies it.
        grant: String,
    },
    /// The plugin describes no tools at all.
    #[error("describes no tools; a plugin must provide at least one")]
    NoTools,
    /// `describe` declared more than a cap allows (see
    /// [`DescribeCaps`](crate::DescribeCaps)).
    #[error(
        "declares {found} {what}, more than the cap of {cap}; if that is intended, raise \
         `{knob}` in the plugin's policy (`[describe]`) or the host's describe caps"
    )]
    OverCap {
        /// What was counted.
        what: String,
        /// How many there were.
        found: usize,
        /// The cap.
        cap: usize,
        /// The policy key under `[describe]` that raises it.
        knob: &'static str,
    },
    /// A new build of a plugin with `[record] gate_updates` changed the
    /// outputs of recorded calls: the old build keeps serving.
    #[error(
        "the new build (sha256 {sha256}) changes {changed} of {replayed} recorded calls, first \
         {first}; the served build stays until a person accepts it (`corral replay {dir} \
         --plugin FILE --accept`) or the host accepts changes (`--accept-changes`)"
    )]
    UpdateHeld {
        /// Replays that changed or diverged.
        changed: usize,
        /// Replays run.
        replayed: usize,
        /// The first change, in one line.
        first: String,
        /// sha256 of the new build.
        sha256: String,
        /// The recordings directory.
        dir: String,
    },
}

/// The load error a cap a plugin went over is.
impl From<crate::config::caps::Over> for LoadErrorReason {
    fn from(over: crate::config::caps::Over) -> Self {
        Self::OverCap {
            what: over.what,
            found: over.found,
            cap: over.cap,
            knob: over.knob,
        }
    }
}
