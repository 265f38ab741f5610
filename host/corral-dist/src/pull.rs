//! `pull`: one artifact into a plugin directory.
//!
//! 1. The manifest is fetched (by tag or digest; oci-client checks a digest
//!    reference against the bytes) and must hold one component layer, and at
//!    most one policy layer ([`crate::layout`]).
//! 2. With `locked`, the manifest digest must be the one `corral.lock`
//!    records for the plugin, or nothing is fetched.
//! 3. Each layer's declared size is checked against its cap before a byte of
//!    it is fetched, and again while it streams.
//! 4. The component streams into a temporary file beside its target, its
//!    sha256 checked against the layer digest; only then is it renamed over
//!    `NAME.wasm`. A registry that fails mid-download leaves the directory as
//!    it was.
//! 5. The policy layer is checked as a policy and written as
//!    `NAME.policy.requested.toml`, inert until accepted.
//! 6. `corral.lock` records the reference, the digests and who signed it.
//!
//! Between 2 and 3, the registry's cosign signatures of the manifest are
//! checked against the trusted keys ([`crate::verify`]); when one is
//! required and none verifies, nothing is fetched. A verified signature is
//! kept beside the component (`NAME.wasm.cosign.json`), so that every load
//! checks it again.

use std::path::{Path, PathBuf};

use crate::accept::requested_policy_path;
use crate::reference::OciReference;
use crate::{DistError, layout};

/// How to pull.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PullOptions {
    /// The plugin's name: its file becomes `NAME.wasm`. Default: the
    /// repository's last path segment.
    pub name: Option<String>,
    /// The largest component layer, in bytes: the host's plugin size cap
    /// ([`corral::DEFAULT_MAX_PLUGIN_BYTES`] unless configured).
    pub max_bytes: u64,
    /// Refuse an artifact whose manifest digest differs from the one
    /// `corral.lock` records for the plugin (or a plugin it does not list).
    pub locked: bool,
    /// The keys whose registry signatures are accepted, and whether one is
    /// required (then an artifact none of them signed is refused before
    /// anything is written).
    pub trust: corral::Trust,
}

impl Default for PullOptions {
    fn default() -> Self {
        Self {
            name: None,
            max_bytes: corral::DEFAULT_MAX_PLUGIN_BYTES,
            locked: false,
            trust: corral::Trust::default(),
        }
    }
}

impl PullOptions {
    /// These options with the plugin named `name`.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// These options with the component size cap `bytes`.
    #[must_use]
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// These options with the signature requirement `trust`.
    #[must_use]
    pub fn trust(mut self, trust: corral::Trust) -> Self {
        self.trust = trust;
        self
    }

    /// These options, refusing what differs from `corral.lock` when `on`.
    #[must_use]
    pub fn locked(mut self, on: bool) -> Self {
        self.locked = on;
        self
    }
}

/// The policy an artifact requests.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestedPolicy {
    /// Where the request was written (`NAME.policy.requested.toml`).
    pub path: PathBuf,
    /// Its layer digest.
    pub digest: String,
    /// What it would grant, in words (as `corral policy check` says it).
    pub grants: Vec<String>,
}

/// What a pull wrote.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Pulled {
    /// The plugin's name.
    pub name: String,
    /// The reference pulled.
    pub reference: String,
    /// The manifest digest it resolved to.
    pub manifest: String,
    /// The component layer's digest (`sha256:` and the file's sha256).
    pub component: String,
    /// The component's size, in bytes.
    pub bytes: u64,
    /// The component file.
    pub path: PathBuf,
    /// The policy the publisher requests, if the artifact has one.
    pub requested_policy: Option<RequestedPolicy>,
    /// The trusted key that verified the registry's signature, if one did.
    pub signer: Option<corral::PublicKey>,
}

/// Whether `name` can be a plugin file's stem.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Pulls `reference` into the plugin directory `dir` (see the module docs).
///
/// # Errors
/// [`DistError::Reference`] for a malformed reference or plugin name;
/// [`DistError::Registry`] when the registry fails, lacks the tag, or sends
/// bytes that do not match their digest; [`DistError::NotAComponent`];
/// [`DistError::TooLarge`]; [`DistError::Locked`]; [`DistError::Policy`]
/// for an invalid requested policy; [`DistError::File`].
pub async fn pull(reference: &str, dir: &Path, options: &PullOptions) -> Result<Pulled, DistError> {
    let reference = OciReference::parse(reference)?;
    let name = options
        .name
        .clone()
        .unwrap_or_else(|| reference.default_name().to_string());
    if !valid_name(&name) {
        return Err(DistError::Reference {
            reference: reference.to_string(),
            message: format!(
                "`{}` cannot be a plugin name; give one of letters, digits, `-`, `_` and `.`",
                corral::untrusted_text::escape_line(&name)
            ),
        });
    }
    let lock_error = |e: corral::LockError| DistError::File {
        path: e.path.clone(),
        message: e.message,
    };
    let lock = corral::Lock::read(dir)
        .map_err(lock_error)?
        .unwrap_or_default();
    let path = dir.join(format!("{name}.wasm"));
    check_replaces(&lock, &name, &reference, &path)?;
    let (client, auth) = crate::client::for_reference(&reference);
    // The manifest as the registry serves it: its bytes are what its digest
    // and a signature cover.
    let (raw, digest) = client
        .pull_manifest_raw(
            &reference.inner,
            &auth,
            &[
                oci_client::manifest::OCI_IMAGE_MEDIA_TYPE,
                oci_client::manifest::IMAGE_MANIFEST_MEDIA_TYPE,
            ],
        )
        .await
        .map_err(|e| crate::client::registry_error(&reference, &e))?;
    let manifest = crate::manifest::parse(&reference, &raw)?;
    if options.locked {
        check_locked(&lock, &name, &reference, &digest)?;
    }
    // Signatures are checked before anything is fetched or written.
    let signed =
        crate::verify::registry(&client, &auth, &reference, &digest, &options.trust).await?;
    let crate::manifest::Layers { component, policy } =
        crate::manifest::layers(&reference, &manifest, options.max_bytes)?;
    let at = reference.at_digest(&digest);
    // The policy first (small, in memory): an invalid one stops the pull
    // before the component is replaced.
    let requested = match policy {
        None => None,
        Some(layer) => {
            let bytes = crate::transfer::fetch(
                &client,
                &reference,
                &at,
                layer,
                layout::MAX_POLICY_BYTES,
                "policy",
            )
            .await?;
            Some((layer.digest.clone(), bytes))
        }
    };
    // Checked now, written once the component is in place.
    let requested = match requested {
        None => None,
        Some((digest, bytes)) => Some(check_request(dir, &name, &reference, digest, bytes)?),
    };
    let bytes = crate::transfer::download(
        &client,
        &reference,
        &at,
        component,
        options.max_bytes,
        &path,
    )
    .await?;
    crate::verify::keep(&path, &raw, signed.as_ref())?;
    let request_path = requested_policy_path(dir, &name);
    match &requested {
        Some((request, text)) => crate::transfer::write_atomically(&request.path, text.as_bytes())?,
        // A request of an earlier version must not be accepted for this one.
        None => {
            let _ = std::fs::remove_file(&request_path);
        }
    }
    let requested = requested.map(|(request, _)| request);
    let mut entry = corral::LockedPlugin::new(&name, &reference.text, &digest, &component.digest);
    entry.signer = signed
        .as_ref()
        .map(|(key, _)| format!("{} ({})", key.label, key.fingerprint));
    entry.policy = requested.as_ref().map(|r| r.digest.clone());
    // Under the lock's guard, re-read: another pull may have landed since.
    corral::Lock::update(dir, |lock| lock.insert(entry)).map_err(lock_error)?;
    Ok(Pulled {
        name,
        reference: reference.text.clone(),
        manifest: digest,
        component: component.digest.clone(),
        bytes,
        path,
        requested_policy: requested,
        signer: signed.map(|(key, _)| key),
    })
}

/// Pulls every plugin `corral.lock` lists in `dir` again, each refused if it
/// differs from what the lock records. Answers each plugin's outcome, in
/// the lock's order.
///
/// # Errors
/// [`DistError::File`] when the lock file cannot be read or there is none.
pub async fn pull_locked(
    dir: &Path,
    options: &PullOptions,
) -> Result<Vec<(String, Result<Pulled, DistError>)>, DistError> {
    let lock = corral::Lock::read(dir)
        .map_err(|e| DistError::File {
            path: e.path.clone(),
            message: e.message,
        })?
        .ok_or_else(|| DistError::File {
            path: corral::Lock::path(dir),
            message: "there is no lock file to pull from; pull each plugin once first".into(),
        })?;
    let mut outcomes = Vec::new();
    for entry in lock.plugins {
        let options = options.clone().name(&entry.name).locked(true);
        let outcome = pull(&entry.reference, dir, &options).await;
        outcomes.push((entry.name, outcome));
    }
    Ok(outcomes)
}

/// A pull may replace `NAME.wasm` only if it came from the same repository
/// (an update): the policy beside it was accepted for that publisher's code.
fn check_replaces(
    lock: &corral::Lock,
    name: &str,
    reference: &OciReference,
    path: &Path,
) -> Result<(), DistError> {
    if !path.exists() {
        return Ok(());
    }
    let same = lock
        .get(name)
        .and_then(|entry| OciReference::parse(&entry.reference).ok())
        .is_some_and(|from| from.same_repository(reference));
    if same {
        return Ok(());
    }
    Err(DistError::Exists {
        name: name.to_string(),
        message: format!(
            "{} is already in the plugin directory and was not pulled from {reference}'s \
             repository; its policy would apply to other code: remove it first, or pull \
             under another name",
            path.display()
        ),
    })
}

fn check_locked(
    lock: &corral::Lock,
    name: &str,
    reference: &OciReference,
    digest: &str,
) -> Result<(), DistError> {
    let locked = |message: String| DistError::Locked {
        name: name.to_string(),
        message,
    };
    let Some(entry) = lock.get(name) else {
        return Err(locked(format!(
            "{} does not list it; pull it once without the lock to add it",
            corral::LOCK_FILE
        )));
    };
    if entry.reference != reference.text {
        return Err(locked(format!(
            "{} records it from {}, not {reference}",
            corral::LOCK_FILE,
            corral::untrusted_text::escape_line(&entry.reference)
        )));
    }
    if entry.manifest != digest {
        return Err(locked(format!(
            "{reference} now resolves to {digest}, but {} records {}; the tag moved: \
             nothing was fetched (pull it without the lock to take the new version)",
            corral::LOCK_FILE,
            entry.manifest
        )));
    }
    Ok(())
}

/// Checks the requested policy: what it would grant, and its text.
fn check_request(
    dir: &Path,
    name: &str,
    reference: &OciReference,
    digest: String,
    bytes: Vec<u8>,
) -> Result<(RequestedPolicy, String), DistError> {
    let invalid = |message: String| DistError::Policy {
        reference: reference.to_string(),
        message,
    };
    let text = String::from_utf8(bytes).map_err(|_| invalid("it is not UTF-8 text".into()))?;
    let path = requested_policy_path(dir, name);
    let policy = corral::Policy::parse(&text, &path).map_err(|e| invalid(e.to_string()))?;
    let request = RequestedPolicy {
        path,
        digest,
        grants: crate::accept::grants(&policy),
    };
    Ok((request, text))
}
