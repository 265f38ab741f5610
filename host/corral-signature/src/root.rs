//! The offline trust of keyless signatures: a Sigstore trusted root file
//! (`trusted_root.json`, media type
//! `application/vnd.dev.sigstore.trustedroot+json;version=0.1`, the
//! protobuf-specs `TrustedRoot` in its JSON form, as sigstore clients and
//! `cosign --trusted-root` read it), and the check of a certificate chain
//! against it; who the certificate names is [`super::identity`]'s.
//!
//! Only what a keyless blob signature needs is read: the certificate
//! authorities (`certificateAuthorities`: chains and validity) and the
//! transparency logs (`tlogs`: public keys, log ids and validity).
//! `ctlogs` and `timestampAuthorities` are accepted and not used: signed
//! certificate timestamps and RFC 3161 timestamps are not checked, the
//! signing time comes from the log's signed entry timestamp.

use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use serde::Deserialize;
use sigstore::crypto::{CosignVerificationKey, Signature};
use x509_cert::der::Decode as _;

use super::SignatureError;
use super::identity::CODE_SIGNING;

/// Text a bundle or certificate supplied, fit for a one-line message:
/// escaped, newlines included (`corral_names::text::escape_line`), and cut at 200
/// bytes.
pub(super) fn shown(text: &str) -> String {
    corral_names::text::escape_line(&corral_names::text::truncate(text.to_string(), 200))
        .into_owned()
}

/// A Unix time for a message, RFC 3339.
pub(super) fn when(at: i64) -> String {
    chrono::DateTime::from_timestamp(at, 0).map_or_else(|| at.to_string(), |t| t.to_rfc3339())
}

/// Protobuf JSON's `bytes`: base64, standard alphabet (URL-safe accepted).
pub(super) fn b64(text: &str) -> Result<Vec<u8>, String> {
    let engine = &base64::engine::general_purpose::STANDARD;
    engine
        .decode(text.trim())
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(text.trim()))
        .map_err(|e| format!("not base64 ({e})"))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRoot {
    media_type: String,
    #[serde(default)]
    tlogs: Vec<RawLog>,
    #[serde(default)]
    certificate_authorities: Vec<RawAuthority>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLog {
    public_key: RawPublicKey,
    log_id: RawLogId,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPublicKey {
    raw_bytes: String,
    valid_for: Option<RawRange>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawLogId {
    pub(super) key_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawAuthority {
    cert_chain: RawChain,
    valid_for: Option<RawRange>,
}

#[derive(Deserialize)]
pub(super) struct RawChain {
    pub(super) certificates: Vec<RawBytes>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawBytes {
    pub(super) raw_bytes: String,
}

#[derive(Deserialize)]
struct RawRange {
    start: Option<String>,
    end: Option<String>,
}

/// A validity window in Unix seconds; `end` open when absent.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: i64,
    end: Option<i64>,
}

impl Window {
    fn parse(range: Option<RawRange>) -> Result<Self, String> {
        let time = |t: &str| {
            chrono::DateTime::parse_from_rfc3339(t)
                .map(|t| t.timestamp())
                .map_err(|e| format!("`{t}` is not an RFC 3339 time ({e})"))
        };
        let Some(range) = range else {
            return Ok(Self {
                start: i64::MIN,
                end: None,
            });
        };
        Ok(Self {
            start: range
                .start
                .as_deref()
                .map(time)
                .transpose()?
                .unwrap_or(i64::MIN),
            end: range.end.as_deref().map(time).transpose()?,
        })
    }

    fn covers(self, at: i64) -> bool {
        at >= self.start && self.end.is_none_or(|end| at <= end)
    }
}

/// A transparency log (Rekor) the root trusts.
#[derive(Clone)]
pub(crate) struct Log {
    /// `logId.keyId`: the sha256 of the key's DER (SPKI).
    pub(crate) key_id: Vec<u8>,
    key: Arc<CosignVerificationKey>,
    window: Window,
}

impl Log {
    /// Whether the log's key signed `payload` with `signature` (DER ECDSA)
    /// and was valid at `at` (Unix seconds).
    pub(crate) fn verifies(&self, signature: &[u8], payload: &[u8], at: i64) -> bool {
        self.window.covers(at)
            && self
                .key
                .verify_signature(Signature::Raw(signature), payload)
                .is_ok()
    }
}

/// A certificate authority (Fulcio) the root trusts: its chain, DER, the
/// issuing certificate first and the root last.
#[derive(Debug, Clone)]
struct Authority {
    chain: Vec<Vec<u8>>,
    window: Window,
}

/// A Sigstore trusted root: the certificate authorities and transparency
/// logs whose word keyless signatures need (see the module docs).
#[derive(Clone)]
pub struct TrustedRoot {
    /// Who it is, for people: the file's name.
    pub label: String,
    authorities: Vec<Authority>,
    logs: Vec<Log>,
}

impl std::fmt::Debug for TrustedRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TrustedRoot({}, {} authorities, {} logs)",
            self.label,
            self.authorities.len(),
            self.logs.len()
        )
    }
}

impl TrustedRoot {
    /// The root in the JSON text `json`, known as `label`.
    ///
    /// # Errors
    /// [`SignatureError::Key`] when it is not a trusted root of media type
    /// `application/vnd.dev.sigstore.trustedroot+json;version=0.1`, names
    /// no certificate authority, or holds a certificate, key or time that
    /// does not parse.
    pub fn from_json(json: &str, label: impl Into<String>) -> Result<Self, SignatureError> {
        let label = label.into();
        let bad = |message: String| SignatureError::Key {
            key: label.clone(),
            message,
        };
        let raw: RawRoot = serde_json::from_str(json)
            .map_err(|e| bad(format!("is not a Sigstore trusted root ({e})")))?;
        if !raw
            .media_type
            .starts_with("application/vnd.dev.sigstore.trustedroot")
        {
            return Err(bad(format!(
                "has media type `{}`, not application/vnd.dev.sigstore.trustedroot+json",
                raw.media_type
            )));
        }
        let mut authorities = Vec::new();
        for (n, ca) in raw.certificate_authorities.into_iter().enumerate() {
            let at = |e: String| bad(format!("certificateAuthorities[{n}]: {e}"));
            let chain = ca
                .cert_chain
                .certificates
                .iter()
                .map(|c| {
                    let der = b64(&c.raw_bytes)?;
                    x509_cert::Certificate::from_der(&der)
                        .map_err(|e| format!("a certificate does not parse ({e})"))?;
                    Ok(der)
                })
                .collect::<Result<Vec<_>, String>>()
                .map_err(at)?;
            if chain.is_empty() {
                return Err(at("its certChain is empty".into()));
            }
            authorities.push(Authority {
                chain,
                window: Window::parse(ca.valid_for).map_err(at)?,
            });
        }
        if authorities.is_empty() {
            return Err(bad(
                "names no certificate authority (certificateAuthorities)".into(),
            ));
        }
        let mut logs = Vec::new();
        for (n, log) in raw.tlogs.into_iter().enumerate() {
            let at = |e: String| bad(format!("tlogs[{n}]: {e}"));
            let der = b64(&log.public_key.raw_bytes).map_err(at)?;
            let key = CosignVerificationKey::try_from_der(&der)
                .map_err(|e| at(format!("its public key does not parse ({e})")))?;
            logs.push(Log {
                key_id: b64(&log.log_id.key_id).map_err(at)?,
                key: Arc::new(key),
                window: Window::parse(log.public_key.valid_for).map_err(at)?,
            });
        }
        Ok(Self {
            label,
            authorities,
            logs,
        })
    }

    /// The root in the file `path`, known by its file name.
    ///
    /// # Errors
    /// [`SignatureError::Key`] when it cannot be read, or as
    /// [`TrustedRoot::from_json`].
    pub fn read(path: &Path) -> Result<Self, SignatureError> {
        let key = |message: String| SignatureError::Key {
            key: path.display().to_string(),
            message,
        };
        let json = corral_files::read_text(path, corral_files::Kind::Key)
            .map_err(|e| key(e.reason()))?
            .ok_or_else(|| key("cannot read it: it does not exist".into()))?;
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Self::from_json(&json, label)
    }

    /// The log whose `logId.keyId` is `key_id`.
    pub(crate) fn log(&self, key_id: &[u8]) -> Option<&Log> {
        self.logs.iter().find(|l| l.key_id == key_id)
    }

    /// Whether `leaf` (DER) chains, with the `extra` certificates a bundle
    /// carried, to one of the root's authorities whose `validFor` window
    /// holds `at` (Unix seconds), with `at` inside the validity of the leaf
    /// and every intermediate (the root certificate's own dates are not
    /// checked: the window stands for them, as in sigstore clients), and no
    /// certificate on the path whose extended key usage leaves out code
    /// signing (the leaf's own must name it: [`super::identity::holder`] checks that).
    pub(crate) fn chains(&self, leaf: &[u8], extra: &[Vec<u8>], at: i64) -> Result<(), String> {
        use rustls_pki_types::{CertificateDer, UnixTime};
        let algorithms = [
            webpki::ring::ECDSA_P256_SHA256,
            webpki::ring::ECDSA_P256_SHA384,
            webpki::ring::ECDSA_P384_SHA256,
            webpki::ring::ECDSA_P384_SHA384,
            webpki::ring::ED25519,
            webpki::ring::RSA_PKCS1_2048_8192_SHA256,
        ];
        let leaf_der = CertificateDer::from(leaf);
        let end = webpki::EndEntityCert::try_from(&leaf_der)
            .map_err(|e| format!("its certificate does not parse ({e})"))?;
        let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(
            u64::try_from(at).map_err(|_| "the signing time is before 1970".to_string())?,
        ));
        let mut why = Vec::new();
        for ca in self.authorities.iter().filter(|ca| ca.window.covers(at)) {
            let (root, intermediates) = ca.chain.split_last().expect("a chain is never empty");
            let root = CertificateDer::from(root.as_slice());
            let anchor = webpki::anchor_from_trusted_cert(&root)
                .map_err(|e| format!("{}: its root does not parse ({e})", self.label))?;
            let intermediates: Vec<CertificateDer<'_>> = intermediates
                .iter()
                .chain(extra)
                .map(|c| CertificateDer::from(c.as_slice()))
                .collect();
            match end.verify_for_usage(
                &algorithms,
                &[anchor],
                &intermediates,
                time,
                webpki::KeyUsage::required_if_present(CODE_SIGNING),
                None,
                None,
            ) {
                Ok(_) => return Ok(()),
                Err(e) => why.push(chain_error(&e)),
            }
        }
        let at = when(at);
        Err(if why.is_empty() {
            format!(
                "{} has no certificate authority valid at the signing time ({at})",
                self.label
            )
        } else {
            why.dedup();
            format!(
                "its certificate does not chain to {} at the signing time ({at}): {}",
                self.label,
                why.join("; ")
            )
        })
    }
}

/// What a chain error means, for the one who has to fix it.
fn chain_error(error: &webpki::Error) -> String {
    use webpki::Error as E;
    match error {
        E::CertExpired { .. } | E::CertNotValidYet { .. } => {
            "a certificate was not valid then (signed outside its lifetime)".into()
        }
        E::UnknownIssuer | E::InvalidSignatureForPublicKey => {
            "it was not issued by this authority (a bundle from another Sigstore instance, \
             such as staging, checked against this root?)"
                .into()
        }
        E::RequiredEkuNotFoundContext(_) => {
            "a certificate of its chain is not for code signing".into()
        }
        other => format!("{other:?}"),
    }
}
