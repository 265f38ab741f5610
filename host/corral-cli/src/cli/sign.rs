//! `corral key new PREFIX` and `corral sign --key KEY FILE.wasm`: signing
//! keys and signatures in cosign's formats ([`corral::SigningKey`]). The
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
/// `cosign sign-blob --key` writes it (`cosign verify-blob` checks it too).
#[derive(Args, Debug)]
pub struct SignCmd {
    /// The component
    file: PathBuf,
    /// The private key (PREFIX.key from `corral key new` or `cosign
    /// generate-key-pair`); its password comes from COSIGN_PASSWORD
    #[arg(long, value_name = "KEY")]
    key: PathBuf,
}

impl SignCmd {
    /// Runs the command.
    pub async fn run(self, _global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let key = corral::SigningKey::read(&self.key, &password())?;
        let bytes = std::fs::read(&self.file)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", self.file.display()))?;
        let signature = key.sign(&bytes)?;
        let path = corral::blob_signature_path(&self.file);
        std::fs::write(&path, format!("{signature}\n"))
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
