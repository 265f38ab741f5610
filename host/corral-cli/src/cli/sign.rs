//! `corral key new PREFIX`, `corral sign --key KEY [--bundle] FILE.wasm` and
//! `corral verify FILE.wasm`: signing keys and signatures in cosign's and
//! Sigstore's formats ([`corral::SigningKey`], [`corral::verify_file`]). The
//! password of a private key comes from `COSIGN_PASSWORD` (cosign's own
//! variable; empty when unset), never from the command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::GlobalArgs;

/// The private-key password: `COSIGN_PASSWORD`, or empty.
pub fn password() -> Vec<u8> {
    std::env::var("COSIGN_PASSWORD")
        .unwrap_or_default()
        .into_bytes()
}

/// Make signing keys (ECDSA P-256, cosign's formats).
#[derive(Args, Debug)]
pub struct KeyCmd {
    #[command(subcommand)]
    command: KeyCommand,
}

#[derive(Subcommand, Debug)]
enum KeyCommand {
    /// Write PREFIX.key (private, encrypted with COSIGN_PASSWORD, mode 0600)
    /// and PREFIX.pub (public: give it to whoever verifies)
    New {
        /// Path and name of the two files, without extension
        prefix: PathBuf,
    },
}

impl KeyCmd {
    /// Runs the subcommand.
    pub async fn run(self, _global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        match self.command {
            KeyCommand::New { prefix } => {
                let key = corral::SigningKey::generate()?;
                let (private, public) = key.write(&prefix, &password())?;
                let fingerprint = corral::PublicKey::read(&public)?.fingerprint;
                outln!(
                    "wrote {} (keep it secret) and {}",
                    private.display(),
                    public.display()
                )?;
                outln!("fingerprint {fingerprint}")?;
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// Sign a component: writes FILE.wasm.sig, a signature of its bytes as
/// `cosign sign-blob --key` writes it (`cosign verify-blob` checks it too),
/// or with `--bundle` a key-based Sigstore bundle, FILE.wasm.sigstore.json.
#[derive(Args, Debug)]
pub struct SignCmd {
    /// The component
    file: PathBuf,
    /// The private key (PREFIX.key from `corral key new` or `cosign
    /// generate-key-pair`); its password comes from COSIGN_PASSWORD
    #[arg(long, value_name = "KEY")]
    key: PathBuf,
    /// Write a Sigstore bundle (FILE.wasm.sigstore.json, as `cosign
    /// sign-blob --bundle --tlog-upload=false` writes one) instead of a
    /// bare signature
    #[arg(long)]
    bundle: bool,
}

impl SignCmd {
    /// Runs the command.
    pub async fn run(self, _global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let key = corral::SigningKey::read(&self.key, &password())?;
        let bytes = std::fs::read(&self.file)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", self.file.display()))?;
        let (path, text) = if self.bundle {
            (
                corral::bundle_path(&self.file),
                corral::key_bundle(&key, &bytes)?,
            )
        } else {
            (corral::blob_signature_path(&self.file), key.sign(&bytes)?)
        };
        std::fs::write(&path, format!("{text}\n"))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        let public = key.public("key")?;
        outln!(
            "wrote {} (signed by {})",
            path.display(),
            public.fingerprint
        )?;
        Ok(ExitCode::SUCCESS)
    }
}

/// Check a component's signature evidence (FILE.wasm.sig,
/// FILE.wasm.sigstore.json or FILE.wasm.cosign.json beside it) against
/// the host's trusted keys, roots and identities, as a load that requires
/// signatures does; no policy applies. Exits 1 when it does not verify.
#[derive(Args, Debug)]
pub struct VerifyCmd {
    /// The component
    file: PathBuf,
}

impl VerifyCmd {
    /// Runs the command.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let trust = global.trust()?;
        match corral::verify_file(&self.file, &trust) {
            Ok(signed) => {
                outln!("{}: {signed}", self.file.display())?;
                Ok(ExitCode::SUCCESS)
            }
            Err(err) => {
                eprintln!(
                    "error: {}",
                    corral::untrusted_text::escape(&err.to_string())
                );
                Ok(ExitCode::FAILURE)
            }
        }
    }
}
