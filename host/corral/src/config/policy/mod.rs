//! Per-plugin capability policies: what one plugin is granted beyond the
//! deny-all defaults, in a file a person can read and review.
//!
//! **Where.** One file per plugin, next to it: `notes.wasm` is governed by
//! `notes.policy.toml` in the same directory. A plugin without a policy file
//! gets nothing beyond the defaults (no files, no environment, no network, the
//! host's limits, no context keys). A policy file that does not parse or
//! validate keeps its plugin from loading, with the file, line and a fix.
//!
//! **Format** (version 1; every table optional; unknown keys are errors):
//!
//! ```toml
//! version = 1
//! sha256 = "5607a0d2…"          # integrity: refuse the plugin unless its sha256 is this
//! any_component = true          # default; false: refuse it unless it targets corral's world
//!
//! [integrity]
//! signed_by = ["keys/alice.pub"] # refuse the plugin unless one of these keys signed it
//! # ... or one of these keyless signers (under the host's trusted roots)
//! identities = [{ subject = "alice@example.com", issuer = "https://accounts.example.com" }]
//!                                # (cosign public keys, relative to this file)
//!
//! [limits]                       # override the host's defaults, within its maximums
//! fuel = 2_000_000_000           # fuel units
//! timeout_ms = 20_000            # milliseconds
//! memory_mib = 128               # MiB of linear memory
//! output_bytes = 2_097_152       # bytes of result text
//!
//! [[filesystem]]                 # one table per preopened directory
//! host = "notes-data"            # host directory, relative to this file; must exist
//! guest = "/notes"               # where the guest sees it
//! access = "read-write"          # or "read-only" (the default)
//!
//! [environment]
//! set = { GREETING = "hello" }   # variables with explicit values
//! pass = ["TZ"]                  # host variables passed through (skipped if unset)
//!
//! [http]                         # outbound HTTP through wasi:http; sockets stay off
//! allow = ["https://api.example.com", "http://127.0.0.1:8080", "https://*.example.org"]
//! allow_private_networks = false # a listed name that resolves to an internal address
//!                                # (loopback, private, link-local...) is refused unless true
//!
//! [describe]                     # this plugin's describe deadline and caps
//! timeout_ms = 2_000             # milliseconds (default: the host's, 2 000)
//! max_tools = 128                # tools it may declare
//! max_description_chars = 4_096  # characters per description
//! max_schema_bytes = 65_536      # bytes per parameters schema
//! max_output_bytes = 1_048_576   # bytes of everything describe returns
//!
//! [approval]
//! require = ["notes_write"]      # these tools need a reviewer's decision
//!
//! [context]                      # which context keys reach this plugin
//! allow = ["tenant"]             # or: deny = ["api_key"], or: pass_through = true
//!
//! [presentation]                 # how the tools are shown to models
//! prefix = "acme_"               # prepended to every tool name
//! rename = { notes_list = "list_notes" }
//! notes = { notes_delete = "Only delete drafts the user named." }
//! descriptions = { notes_list = "Lists the user's saved notes by name." }
//!
//! [one_shot]                     # at most one call per agent loop (context key `loop_id`)
//! notes_list = "You already listed the notes in this loop; use that list."
//!
//! [metadata.fs_read_file]        # what a component of another world cannot declare
//! category = "files"
//! keywords = ["read", "file"]
//! idempotent = true              # default false: no retry, no cache
//! parallelizable = true          # default true
//! latency = "fast"               # fast, medium (the default) or slow
//!
//! [tasks]                        # MCP clients with the Tasks extension (SEP-2663)
//! mode = "when_slow"             # required, always, after_input, when_slow (the default) or never
//! tools = { render_report = "always" }
//!
//! [client]                       # what the guest may ask the MCP client (WIT 0.3.0)
//! elicitation = true             # elicit: ask the person
//! sampling = { max_tokens = 500, calls_per_call = 2 }  # sample: ask the client's model
//! roots = true                   # roots: the client's workspace roots
//! [quotas]                       # each tenant's, for its tools (config::quota)
//! calls = { limit = 100, per = "1h", burst = 10 }
//! [record]                       # which calls are recorded (corral::replay)
//! rate = 0.05
//! ```
//!
//! Tool names in `approval`, `presentation`, `one_shot`, `resilience` and
//! `tasks` are
//! the names the plugin itself declares (before prefix and renames). A
//! description replaces the plugin's own (Embabel's `withDescription`);
//! a note is appended to the tool's description (`withNote`), after any
//! replacement. A second call of a one-shot tool in the same loop returns
//! its advice without running the guest. Limits above the host's maximums
//! ([`HostBuilder::max_limits`](crate::HostBuilder::max_limits)) keep the plugin
//! from loading.

mod client;
mod credentials;
mod describe;
mod grants;
mod presentation;
mod raw;
mod record;
mod sections;
mod tasks;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::caps::DescribeOverrides;
use crate::config::context::ContextPolicy;
pub use client::{MAX_SAMPLING_CALLS, MAX_SAMPLING_TOKENS};
use corral_sandbox::LimitOverrides;
pub use corral_sandbox::{DirGrant, EnvGrant, HostPattern};
pub use credentials::{Credential, ValuePart};
pub(crate) use grants::grants;
use raw::RawPolicy;
pub use record::RecordPolicy;
pub use sections::MetadataOverride;
pub use tasks::{SLOW_DEADLINE, TaskMode, TaskPolicy};

/// The policy format version this host reads.
pub const POLICY_VERSION: u32 = 1;

/// The policy file name for the plugin at `wasm`: `<stem>.policy.toml` beside it.
pub fn policy_path(wasm: &Path) -> PathBuf {
    let stem = wasm
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    wasm.with_file_name(format!("{stem}.policy.toml"))
}

/// The policy file of the plugin at `wasm`: [`policy_path`], or the file of
/// the same name in `policy_dir` when the host reads its policies from a
/// directory of their own
/// ([`HostBuilder::policy_dir`](crate::HostBuilder::policy_dir)).
pub fn policy_path_in(wasm: &Path, policy_dir: Option<&Path>) -> PathBuf {
    let beside = policy_path(wasm);
    match (policy_dir, beside.file_name()) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => beside,
    }
}

/// Where a pulled plugin's policy request is kept: `<stem>.policy.requested.toml`
/// beside it. The host never reads it as a policy; accepting it moves it to
/// [`policy_path`].
pub fn requested_policy_path(wasm: &Path) -> PathBuf {
    let stem = wasm
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    wasm.with_file_name(format!("{stem}.policy.requested.toml"))
}

/// Why a policy file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The file exists but cannot be read, or is over its cap (256 KiB:
    /// `corral_files::Kind::Policy`).
    #[error("{}: {message}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why: `cannot read it: ...`, or over the cap.
        message: String,
    },
    /// The file does not parse or a value is invalid.
    #[error("{}:{line}: {message}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the offending value.
        line: usize,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The file is valid, and this plugin or this host cannot take it: it
    /// names a tool the plugin does not provide, sets a limit over the
    /// host's maximum or one the instance pool cannot run, grants a secret
    /// the store lacks, or its `[integrity]` keys cannot be read.
    #[error("{}: {message}", .path.display())]
    Rejected {
        /// The file.
        path: PathBuf,
        /// What does not fit (the section first) and how to fix it.
        message: String,
    },
}

/// A validated policy; see the module docs for the file format.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Policy {
    /// The file it came from.
    #[serde(skip)]
    pub path: PathBuf,
    /// The component's required sha256 (lowercase hex), if pinned.
    pub sha256: Option<String>,
    /// `[integrity] signed_by`: public keys (files, resolved against the
    /// policy's directory) one of which must have signed the component.
    pub signed_by: Vec<PathBuf>,
    /// `[integrity] identities`: keyless signers (certificate subject and
    /// OIDC issuer), one of which must have signed the component, under
    /// the host's trusted roots.
    pub identities: Vec<crate::loader::signature::Identity>,
    /// Limit overrides.
    pub limits: LimitOverrides,
    /// The `describe` deadline and caps of this plugin (`[describe]`).
    pub describe: DescribeOverrides,
    /// Preopened directories.
    pub filesystem: Vec<DirGrant>,
    /// Environment variables.
    pub environment: Vec<EnvGrant>,
    /// Allowed outbound HTTP destinations.
    pub http_allow: Vec<HostPattern>,
    /// Whether an allowed host name may resolve to an internal address
    /// (loopback, private, link-local, CGNAT, unique-local); `false` unless
    /// `[http] allow_private_networks = true`. An allow-list entry that is an
    /// IP literal reaches that address either way.
    pub http_private: bool,
    /// Headers the host sets, with secrets, on requests to given
    /// destinations (`[[http.credentials]]`).
    pub http_credentials: Vec<Credential>,
    /// Tools (as the plugin names them) that need approval.
    pub require_approval: BTreeSet<String>,
    /// Which context keys reach the plugin; `None` keeps the host's default.
    #[serde(skip)]
    pub context: Option<ContextPolicy>,
    /// Prefix for every tool name.
    pub prefix: Option<String>,
    /// Renames, from the plugin's name to the shown name (before the prefix).
    pub rename: BTreeMap<String, String>,
    /// Notes appended to tool descriptions, by the plugin's tool name.
    pub notes: BTreeMap<String, String>,
    /// Descriptions that replace the plugin's own, by the plugin's tool name
    /// (Embabel's `withDescription`); a note is still appended.
    pub descriptions: BTreeMap<String, String>,
    /// One-shot-per-loop tools and their advice, by the plugin's tool name
    /// (`[one_shot]`; see Embabel's `OneShotPerLoopTool`).
    pub one_shot: BTreeMap<String, String>,
    /// Retry, circuit breaker, rate limit, cache, health and audit settings
    /// (`[resilience]`, per plugin and per tool).
    pub resilience: crate::config::resilience::ResiliencePolicy,
    /// Whether the plugin may be a component of another world, served in
    /// any-component mode (`any_component`; default `true`, subject to the
    /// host's [`HostBuilder::any_component`](crate::HostBuilder::any_component)).
    pub any_component: bool,
    /// Metadata that replaces what a tool declares, by the plugin's tool
    /// name (`[metadata.<tool>]`).
    pub metadata: BTreeMap<String, MetadataOverride>,
    /// When a call becomes an MCP task (`[tasks]`; default `when_slow`).
    pub tasks: TaskPolicy,
    /// What the guest may ask the MCP client (`[client]`; nothing by
    /// default).
    pub client: corral_sandbox::ClientGrants,
    /// The plugin's tools that cannot work without sampling
    /// (`[client] sampling.required_by`).
    pub sampling_required_by: BTreeSet<String>,
    /// Each tenant's quotas for its tools (`[quotas]`; none by default).
    #[serde(skip_serializing_if = "crate::config::quota::QuotaSet::is_empty")]
    pub quotas: crate::config::quota::QuotaSet,
    /// Which calls are recorded (`[record]`; none by default).
    pub record: Option<RecordPolicy>,
}

impl Policy {
    /// The policy of a plugin without a policy file: nothing granted.
    pub fn none() -> Self {
        Self {
            path: PathBuf::new(),
            sha256: None,
            signed_by: Vec::new(),
            identities: Vec::new(),
            limits: LimitOverrides::default(),
            describe: DescribeOverrides::default(),
            filesystem: Vec::new(),
            environment: Vec::new(),
            http_allow: Vec::new(),
            http_private: false,
            http_credentials: Vec::new(),
            require_approval: BTreeSet::new(),
            context: None,
            prefix: None,
            rename: BTreeMap::new(),
            notes: BTreeMap::new(),
            descriptions: BTreeMap::new(),
            one_shot: BTreeMap::new(),
            any_component: true,
            metadata: BTreeMap::new(),
            tasks: TaskPolicy::default(),
            client: corral_sandbox::ClientGrants::default(),
            sampling_required_by: BTreeSet::new(),
            quotas: Default::default(),
            record: None,
            resilience: Default::default(),
        }
    }

    /// Reads the policy beside `wasm`, or [`Policy::none`] when there is none.
    ///
    /// # Errors
    /// [`PolicyError`] when the file exists but cannot be read or is invalid.
    pub fn for_plugin(wasm: &Path) -> Result<Self, PolicyError> {
        let path = policy_path(wasm);
        match corral_files::read_text(&path, corral_files::Kind::Policy) {
            Ok(None) => Ok(Self::none()),
            Err(err) => Err(PolicyError::Read {
                path,
                message: err.reason(),
            }),
            Ok(Some(text)) => Self::parse(&text, &path),
        }
    }

    /// Parses and validates policy text read from `path` (used in messages and
    /// to resolve relative host directories).
    ///
    /// # Errors
    /// [`PolicyError::Invalid`] with the line of the first problem.
    pub fn parse(text: &str, path: &Path) -> Result<Self, PolicyError> {
        let at = |span: Range<usize>, message: String| PolicyError::Invalid {
            path: path.to_path_buf(),
            line: line_of(text, span.start),
            message,
        };
        let raw: RawPolicy = toml::from_str(text)
            .map_err(|err| at(err.span().unwrap_or(0..0), err.message().trim().to_string()))?;
        if *raw.version.get_ref() != POLICY_VERSION {
            return Err(at(
                raw.version.span(),
                format!(
                    "policy version {} is not supported; write `version = {POLICY_VERSION}`",
                    raw.version.get_ref()
                ),
            ));
        }
        let mut policy = Self::none();
        policy.path = path.to_path_buf();

        if let Some(sha) = raw.sha256 {
            let value = sha.get_ref().to_ascii_lowercase();
            if value.len() != 64 || !value.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(at(
                    sha.span(),
                    "sha256 must be 64 hex digits; get it with `sha256sum PLUGIN.wasm` or \
                     `corral describe TOOL`"
                        .into(),
                ));
            }
            policy.sha256 = Some(value);
        }

        if let Some(integrity) = raw.integrity {
            let base = path.parent().unwrap_or(Path::new("."));
            for key in integrity.signed_by {
                if key.get_ref().is_empty() {
                    return Err(at(
                        key.span(),
                        "a key file name is empty; name a .pub file".into(),
                    ));
                }
                policy.signed_by.push(base.join(key.get_ref()));
            }
            for identity in integrity.identities {
                let span = identity.span();
                let identity = identity.into_inner();
                if identity.subject.is_empty() || identity.issuer.is_empty() {
                    return Err(at(
                        span,
                        "an identity needs a subject and an issuer, for example \
                         { subject = \"alice@example.com\", issuer = \"https://accounts.example.com\" }"
                            .into(),
                    ));
                }
                policy.identities.push(crate::loader::signature::Identity {
                    subject: identity.subject,
                    issuer: identity.issuer,
                });
            }
        }

        sections::limits(raw.limits, &mut policy, &at)?;
        sections::describe(raw.describe, &mut policy, &at)?;
        let base = path.parent().unwrap_or(Path::new("."));
        sections::filesystem(raw.filesystem, base, &mut policy, &at)?;
        sections::environment(raw.environment, &mut policy, &at)?;
        if let Some(http) = raw.http {
            policy.http_private = http.allow_private_networks;
            for entry in http.allow {
                let pattern =
                    HostPattern::parse(entry.get_ref()).map_err(|m| at(entry.span(), m))?;
                policy.http_allow.push(pattern);
            }
            credentials::apply(http.credentials, &mut policy, &at)?;
        }
        if let Some(approval) = raw.approval {
            policy.require_approval = approval.require.into_iter().collect();
        }
        sections::context(raw.context, &mut policy, &at)?;
        sections::resilience(raw.resilience, &mut policy, &at)?;
        if let Some(p) = raw.presentation {
            presentation::apply(p, &mut policy, &at)?;
        }
        sections::one_shot(raw.one_shot.unwrap_or_default(), &mut policy, &at)?;
        policy.any_component = raw.any_component.unwrap_or(true);
        sections::metadata(raw.metadata.unwrap_or_default(), &mut policy, &at)?;
        policy.tasks = raw.tasks.unwrap_or_default();
        (policy.client, policy.sampling_required_by) = client::grants(raw.client, &at)?;
        sections::quotas(raw.quotas, &mut policy, &at)?;
        policy.record = record::check(raw.record, &at)?;
        Ok(policy)
    }

    /// The name a model sees for the plugin's tool `name`: renamed, then
    /// prefixed.
    pub fn shown_name(&self, name: &str) -> String {
        let base = self.rename.get(name).map_or(name, String::as_str);
        format!("{}{base}", self.prefix.as_deref().unwrap_or(""))
    }

    /// Every tool name the policy refers to (approval, rename, notes,
    /// resilience), so the loader can reject names the plugin does not
    /// provide.
    pub fn tool_names(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.require_approval
            .iter()
            .map(|n| ("approval.require", n.as_str()))
            .chain(
                self.rename
                    .keys()
                    .map(|n| ("presentation.rename", n.as_str())),
            )
            .chain(
                self.notes
                    .keys()
                    .map(|n| ("presentation.notes", n.as_str())),
            )
            .chain(
                self.descriptions
                    .keys()
                    .map(|n| ("presentation.descriptions", n.as_str())),
            )
            .chain(self.one_shot.keys().map(|n| ("one_shot", n.as_str())))
            .chain(self.metadata.keys().map(|n| ("metadata", n.as_str())))
            .chain(self.tasks.tools.keys().map(|n| ("tasks.tools", n.as_str())))
            .chain(
                self.sampling_required_by
                    .iter()
                    .map(|n| ("client.sampling.required_by", n.as_str())),
            )
            .chain(
                self.resilience
                    .tools
                    .keys()
                    .map(|n| ("resilience.tools", n.as_str())),
            )
            .chain(
                self.record
                    .iter()
                    .flat_map(|r| r.tools.keys())
                    .map(|n| ("record.tools", n.as_str())),
            )
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len()))
        .map_or(1, |before| before.matches('\n').count() + 1)
}
