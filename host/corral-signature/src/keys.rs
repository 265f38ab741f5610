//! Signing keys in cosign's formats: ECDSA P-256, the public key as a PEM
//! `PUBLIC KEY` (SPKI), the private key as cosign's `ENCRYPTED SIGSTORE
//! PRIVATE KEY` (scrypt and secretbox, as `cosign generate-key-pair` writes
//! it; the password may be empty). Keys are known by their fingerprint: the
//! sha256 of the public key's DER.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::crypto::{CosignVerificationKey, Signature, SigningScheme};

use super::SignatureError;

/// A public key a signature may be checked against.
#[derive(Clone)]
pub struct PublicKey {
    /// Who it is, for people: the key file's name, or the label given.
    pub label: String,
    /// `sha256:` and the hex sha256 of the key's DER (SPKI).
    pub fingerprint: String,
    key: std::sync::Arc<CosignVerificationKey>,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({}, {})", self.label, self.fingerprint)
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "key {} ({})", self.label, short(&self.fingerprint))
    }
}

/// `sha256:` and the first 16 hex digits: enough to tell keys apart.
pub(crate) fn short(fingerprint: &str) -> &str {
    &fingerprint[..fingerprint.len().min("sha256:".len() + 16)]
}

/// The DER inside a PEM text's first block.
pub(super) fn pem_der(pem: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let body: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

impl PublicKey {
    /// The key in the PEM text `pem`, known as `label`.
    ///
    /// # Errors
    /// [`SignatureError::Key`] when it is not an ECDSA P-256 public key.
    pub fn from_pem(pem: &str, label: impl Into<String>) -> Result<Self, SignatureError> {
        let label = label.into();
        let bad = |message: String| SignatureError::Key {
            key: label.clone(),
            message,
        };
        // One PEM block and nothing else: a key is not hidden in another file.
        let trimmed = pem.trim();
        if !(trimmed.starts_with("-----BEGIN PUBLIC KEY-----")
            && trimmed.ends_with("-----END PUBLIC KEY-----")
            && trimmed.matches("-----BEGIN").count() == 1)
        {
            return Err(bad(
                "is not one PEM `PUBLIC KEY` block (a cosign .pub file) and nothing else".into(),
            ));
        }
        let key =
            CosignVerificationKey::from_pem(pem.as_bytes(), &SigningScheme::ECDSA_P256_SHA256_ASN1)
                .map_err(|e| bad(format!("not an ECDSA P-256 public key in PEM ({e})")))?;
        let der = pem_der(pem).ok_or_else(|| bad("its PEM does not decode".into()))?;
        Ok(Self {
            fingerprint: format!("sha256:{}", hex::encode(Sha256::digest(&der))),
            label,
            key: std::sync::Arc::new(key),
        })
    }

    /// The key in the file `path` (a `.pub` written by `cosign
    /// generate-key-pair` or `corral key new`), known by its file name.
    ///
    /// # Errors
    /// [`SignatureError::Key`] when it cannot be read or is not such a key.
    pub fn read(path: &Path) -> Result<Self, SignatureError> {
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let key = |message: String| SignatureError::Key {
            key: path.display().to_string(),
            message,
        };
        let pem = corral_files::read_text(path, corral_files::Kind::Key)
            .map_err(|e| key(e.reason()))?
            .ok_or_else(|| key("cannot read it: it does not exist".into()))?;
        Self::from_pem(&pem, label)
    }

    /// Whether `signature` (base64 of a DER ECDSA signature, as cosign
    /// writes it) signs `payload` with this key.
    pub fn verifies(&self, signature: &str, payload: &[u8]) -> bool {
        self.key
            .verify_signature(
                Signature::Base64Encoded(signature.trim().as_bytes()),
                payload,
            )
            .is_ok()
    }
}

/// A private key that signs.
pub struct SigningKey {
    pair: SigStoreKeyPair,
}

impl SigningKey {
    /// A new ECDSA P-256 key.
    ///
    /// # Errors
    /// [`SignatureError::Key`] if the key cannot be made.
    pub fn generate() -> Result<Self, SignatureError> {
        let fail = |e: sigstore::errors::SigstoreError| SignatureError::Key {
            key: "new key".into(),
            message: e.to_string(),
        };
        let signer = SigningScheme::ECDSA_P256_SHA256_ASN1
            .create_signer()
            .map_err(fail)?;
        Ok(Self {
            pair: signer.to_sigstore_keypair().map_err(fail)?,
        })
    }

    /// The key in `path`, in cosign's encrypted format (or an unencrypted
    /// PKCS#8 `PRIVATE KEY`), opened with `password`.
    ///
    /// # Errors
    /// [`SignatureError::Key`] when it cannot be read or opened.
    pub fn read(path: &Path, password: &[u8]) -> Result<Self, SignatureError> {
        let bad = |message: String| SignatureError::Key {
            key: path.display().to_string(),
            message,
        };
        let pem = corral_files::read_bytes(path, corral_files::Kind::Key)
            .map_err(|e| bad(e.reason()))?
            .ok_or_else(|| bad("cannot read it: it does not exist".into()))?;
        let pair = if String::from_utf8_lossy(&pem).contains("ENCRYPTED") {
            SigStoreKeyPair::from_encrypted_pem(&pem, password)
        } else {
            SigStoreKeyPair::from_pem(&pem)
        }
        .map_err(|e| bad(format!("cannot open it (wrong password?): {e}")))?;
        Ok(Self { pair })
    }

    /// Writes `PREFIX.key` (encrypted with `password`, mode 0600) and
    /// `PREFIX.pub`; answers their paths.
    ///
    /// # Errors
    /// [`SignatureError::Key`] when either exists already or cannot be
    /// written.
    pub fn write(
        &self,
        prefix: &Path,
        password: &[u8],
    ) -> Result<(PathBuf, PathBuf), SignatureError> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let private = prefix.with_extension("key");
        let public = prefix.with_extension("pub");
        let bad = |path: &Path, message: String| SignatureError::Key {
            key: path.display().to_string(),
            message,
        };
        let encrypted = self
            .pair
            .private_key_to_encrypted_pem(password)
            .map_err(|e| bad(&private, e.to_string()))?;
        let pem = self
            .pair
            .public_key_to_pem()
            .map_err(|e| bad(&public, e.to_string()))?;
        for (path, text, mode) in [
            (&private, encrypted.as_bytes(), 0o600),
            (&public, pem.as_bytes(), 0o644),
        ] {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(path)
                .and_then(|mut f| f.write_all(text))
                .map_err(|e| bad(path, format!("cannot write it: {e}")))?;
        }
        Ok((private, public))
    }

    /// The public half.
    ///
    /// # Errors
    /// [`SignatureError::Key`] if it cannot be exported.
    pub fn public(&self, label: impl Into<String>) -> Result<PublicKey, SignatureError> {
        let pem = self
            .pair
            .public_key_to_pem()
            .map_err(|e| SignatureError::Key {
                key: "public key".into(),
                message: e.to_string(),
            })?;
        PublicKey::from_pem(&pem, label)
    }

    /// Signs `payload`: base64 of the DER ECDSA-SHA256 signature, as cosign
    /// writes it.
    ///
    /// # Errors
    /// [`SignatureError::Key`] if signing fails.
    pub fn sign(&self, payload: &[u8]) -> Result<String, SignatureError> {
        use base64::Engine as _;
        let fail = |e: sigstore::errors::SigstoreError| SignatureError::Key {
            key: "signing key".into(),
            message: e.to_string(),
        };
        let signer = self
            .pair
            .to_sigstore_signer(&SigningScheme::ECDSA_P256_SHA256_ASN1)
            .map_err(fail)?;
        let signature = signer.sign(payload).map_err(fail)?;
        Ok(base64::engine::general_purpose::STANDARD.encode(signature))
    }
}
