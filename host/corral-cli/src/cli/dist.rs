//! `corral pull` and `corral push`: plugins as Wasm OCI artifacts, through
//! [`corral_dist`]. A pulled policy is shown, and stays a request until the
//! operator accepts it (`corral policy accept NAME`, or `--accept-policy`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::{EXIT_TOOL_FAILED, GlobalArgs, print_json};

/// Fetch a plugin from an OCI registry into the plugin directory.
///
/// Writes NAME.wasm (NAME: the repository's last segment, or --name) and
/// records it in the directory's corral.lock. A policy the artifact carries is
/// shown and written as NAME.policy.requested.toml: the plugin runs with
/// nothing granted until it is accepted. With --locked and no reference,
/// pulls every plugin corral.lock lists, each refused if it differs.
#[derive(Args, Debug)]
pub struct PullCmd {
    /// oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:DIGEST
    reference: Option<String>,
    /// The plugin's name (its file is NAME.wasm)
    #[arg(long)]
    name: Option<String>,
    /// Refuse anything whose digest differs from corral.lock
    #[arg(long)]
    locked: bool,
    /// Accept the policy the artifact requests, after showing its grants
    #[arg(long)]
    accept_policy: bool,
    /// Replace a plugin whose policy sets `[record] gate_updates` even
    /// when the new build changes the outputs of its recorded calls;
    /// without it such a build is not put in place (exit 1)
    #[arg(long)]
    accept_changes: bool,
    /// Print JSON: `{"pulled": [{"name", "reference", "manifest", "component",
    /// "bytes", "path", "requested_policy": {"path", "digest", "grants"} | null,
    /// "accepted": bool}], "errors": [{"name", "error"}], "held": [line]}`
    #[arg(long)]
    json: bool,
}

impl PullCmd {
    /// Runs the command.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let dir = global.plugin_dir();
        std::fs::create_dir_all(&dir)?;
        let mut options = corral_dist::PullOptions::default()
            .max_bytes(global.max_plugin_bytes())
            .locked(self.locked)
            .trust(global.trust()?);
        if let Some(name) = &self.name {
            options = options.name(name);
        }
        let snapshot = super::pull_gate::snapshot(&dir, global.policy_dir.as_deref());
        let outcomes = match &self.reference {
            Some(reference) => {
                let name = self.name.clone().unwrap_or_else(|| reference.clone());
                vec![(name, corral_dist::pull(reference, &dir, &options).await)]
            }
            None if self.locked => corral_dist::pull_locked(&dir, &options).await?,
            None => anyhow::bail!(
                "name what to pull (oci://REGISTRY/REPOSITORY:TAG), or pass --locked to pull what corral.lock lists"
            ),
        };
        let held = super::pull_gate::check(global, snapshot, self.accept_changes).await?;
        let mut pulled = Vec::new();
        let mut errors = Vec::new();
        for (name, outcome) in outcomes {
            match outcome {
                Ok(done) => {
                    let accepted = match (&done.requested_policy, self.accept_policy) {
                        (Some(_), true) => Some(corral_dist::accept_policy(&dir, &done.name)?),
                        _ => None,
                    };
                    pulled.push((done, accepted));
                }
                Err(err) => errors.push((name, err)),
            }
        }
        if self.json {
            let pulled: Vec<_> = pulled
                .iter()
                .map(|(p, accepted)| {
                    json!({
                        "name": p.name, "reference": p.reference, "manifest": p.manifest,
                        "component": p.component, "bytes": p.bytes, "path": p.path,
                        "requested_policy": p.requested_policy.as_ref().map(|r| json!({
                            "path": r.path, "digest": r.digest, "grants": r.grants,
                        })),
                        "accepted": accepted.is_some(),
                        "signer": p.signer.as_ref().map(|k| json!({
                            "key": k.label, "fingerprint": k.fingerprint,
                        })),
                    })
                })
                .collect();
            let errors: Vec<_> = errors
                .iter()
                .map(|(name, e)| json!({ "name": name, "error": e.to_string() }))
                .collect();
            print_json(&json!({ "pulled": pulled, "errors": errors, "held": held }))?;
        } else {
            for (p, accepted) in &pulled {
                outln!(
                    "pulled {} from {} ({}, {} bytes) into {}",
                    p.name,
                    corral::untrusted_text::escape(&p.reference),
                    p.manifest,
                    p.bytes,
                    p.path.display()
                )?;
                if let Some(key) = &p.signer {
                    outln!("  signed by {key}")?;
                }
                if let Some(request) = &p.requested_policy {
                    outln!("  its publisher requests a policy that would grant:")?;
                    for line in &request.grants {
                        outln!("    {}", corral::untrusted_text::escape(line))?;
                    }
                    match accepted {
                        Some(a) => outln!("  accepted: now in force as {}", a.path.display())?,
                        None => outln!(
                            "  not in force: the plugin runs with nothing granted until you run \
                             `corral policy accept {}`",
                            p.name
                        )?,
                    }
                }
            }
            // Each error names its reference already.
            for (_, err) in &errors {
                eprintln!("error: {err}");
            }
            for line in &held {
                eprintln!("held: {}", corral::untrusted_text::escape(line));
            }
        }
        Ok(if errors.is_empty() && held.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(EXIT_TOOL_FAILED)
        })
    }
}

/// Publish a component, with its policy, to an OCI registry.
///
/// The policy is FILE's own (NAME.policy.toml beside it) unless --policy names
/// another or --no-policy leaves it out. Prints the manifest digest: pull
/// REFERENCE@DIGEST to get exactly what was pushed.
#[derive(Args, Debug)]
pub struct PushCmd {
    /// The component (`*.wasm`)
    file: PathBuf,
    /// oci://REGISTRY/REPOSITORY:TAG
    reference: String,
    /// The policy to publish with it [default: the one beside FILE, if any]
    #[arg(long, value_name = "FILE", conflicts_with = "no_policy")]
    policy: Option<PathBuf>,
    /// Publish no policy
    #[arg(long)]
    no_policy: bool,
    /// Sign it with this private key (cosign's format; password from
    /// COSIGN_PASSWORD): pushes a cosign signature of the manifest beside it
    #[arg(long, value_name = "KEY")]
    key: Option<PathBuf>,
    /// Print JSON: `{"reference", "manifest", "component", "policy": digest | null,
    /// "signature": tag | null}`
    #[arg(long)]
    json: bool,
}

impl PushCmd {
    /// Runs the command.
    pub async fn run(self, _global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let beside = corral::policy_path(&self.file);
        let policy = match (self.policy, self.no_policy) {
            (_, true) => None,
            (Some(path), false) => Some(path),
            (None, false) => beside.exists().then_some(beside),
        };
        let key = match &self.key {
            Some(path) => Some(corral::SigningKey::read(path, &super::sign::password())?),
            None => None,
        };
        let pushed =
            corral_dist::push(&self.file, policy.as_deref(), &self.reference, key.as_ref()).await?;
        if self.json {
            print_json(&json!({
                "reference": pushed.reference, "manifest": pushed.manifest,
                "component": pushed.component, "policy": pushed.policy,
                "signature": pushed.signature,
            }))?;
        } else {
            outln!(
                "pushed {} to {} ({}{})",
                self.file.display(),
                corral::untrusted_text::escape(&pushed.reference),
                pushed.manifest,
                if pushed.policy.is_some() {
                    ", with its policy"
                } else {
                    ", no policy"
                }
            )?;
            if let Some(tag) = &pushed.signature {
                outln!("signed: {tag}")?;
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
