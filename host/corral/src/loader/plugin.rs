//! A loaded plugin ([`Plugin`]): one component file, compiled and linked,
//! with its policy, its grants, who signed it and the stamps a reload
//! compares. The loader builds it; the registry, the resolver and the call
//! stages read it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use corral_sandbox::{Grants, Limits, PluginPre};

use crate::config::caps::DescribeCaps;
use crate::config::policy::Policy;

/// A loaded plugin: one component file, compiled and linked, ready to
/// instantiate once per call, with its policy.
pub struct Plugin {
    pub(crate) path: PathBuf,
    pub(crate) name: Arc<str>,
    pub(crate) sha256: String,
    pub(crate) pre: PluginPre,
    pub(crate) policy: Arc<Policy>,
    /// The policy file's text, to notice changes on reload.
    pub(crate) policy_source: Option<String>,
    /// A digest of the WIT beside it (`NAME.wit`, where a component of
    /// another world takes its docs from), to notice changes on reload.
    pub(crate) docs_stamp: Option<String>,
    /// A digest of the secret store when its policy uses secrets, so a
    /// reload notices a changed secret.
    pub(crate) secrets_stamp: Option<String>,
    /// A digest of the signature beside it, so a reload checks a new one.
    pub(crate) signature_stamp: Option<String>,
    /// Who signed it, as verified at load.
    pub(crate) signed: Option<crate::loader::signature::Signed>,
    pub(crate) grants: Grants,
    /// The caps its `describe` output and specs are held to.
    pub(crate) caps: DescribeCaps,
    /// The limits its `describe` runs under.
    pub(crate) describe_limits: Limits,
    /// Its tenants' sampling budgets (`[client] sampling.tokens_per_hour`),
    /// kept as long as the plugin is: a reload that finds its file and
    /// policy unchanged keeps them.
    pub(crate) sampling_budget: Option<Arc<crate::call::resilience::limiter::Limiter>>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("path", &self.path)
            .field("sha256", &self.sha256)
            .finish()
    }
}

/// What the sandbox makes a store of ahead of this plugin's calls.
impl corral_sandbox::Blueprint for Plugin {
    fn pre(&self) -> &PluginPre {
        &self.pre
    }

    fn grants(&self) -> &Grants {
        &self.grants
    }

    fn plugin(&self) -> &Arc<str> {
        &self.name
    }
}

impl Plugin {
    /// The component file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file stem, e.g. `text` for `text.wasm`.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn name_arc(&self) -> Arc<str> {
        self.name.clone()
    }

    /// The contract version the component targets: `0.3.0`, `0.2.0` or
    /// `0.1.0`.
    pub fn wit_version(&self) -> &'static str {
        self.pre.wit_version()
    }

    /// Lowercase hex sha256 of the component bytes.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Who signed it, as verified when it loaded; `None` when unsigned (or
    /// signed by no key the host or its policy trusts, where that is
    /// allowed).
    pub fn signature(&self) -> Option<&crate::loader::signature::Signed> {
        self.signed.as_ref()
    }

    pub(crate) fn pre(&self) -> &PluginPre {
        &self.pre
    }

    /// The plugin's policy ([`Policy::none`] without a policy file).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub(crate) fn grants(&self) -> &Grants {
        &self.grants
    }

    /// Its tenants' sampling budgets, when its policy sets one.
    pub(crate) fn sampling_budget(
        &self,
    ) -> Option<&Arc<crate::call::resilience::limiter::Limiter>> {
        self.sampling_budget.as_ref()
    }

    /// The caps its specs are held to: the host's, with its policy's
    /// `[describe]` applied.
    pub fn describe_caps(&self) -> &DescribeCaps {
        &self.caps
    }
}
