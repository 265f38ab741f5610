//! Who signed, for keyless signatures: the [`Identity`] a host or policy
//! accepts, and what a Fulcio-style certificate says of its holder
//! ([`holder`]: subject alternative names, the OIDC issuer from Fulcio's
//! extensions, and the public key, which must be for code signing).

use serde::Deserialize;
use sigstore::crypto::{CosignVerificationKey, Signature};
use x509_cert::der::Decode as _;

use super::SignatureError;

/// A signer identity of keyless signatures: the certificate's subject
/// alternative name (an email address or a URI, such as a CI workflow's)
/// and the OIDC issuer that vouched for it (Fulcio's issuer extension).
/// Both must match exactly.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// The subject: `alice@example.com`, or a URI.
    pub subject: String,
    /// The OIDC issuer: `https://accounts.example.com`.
    pub issuer: String,
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (issuer {})", self.subject, self.issuer)
    }
}

impl std::str::FromStr for Identity {
    type Err = SignatureError;

    /// `subject=SUBJECT,issuer=ISSUER`; the issuer is what follows the last
    /// `,issuer=`, so a subject may hold commas.
    fn from_str(spec: &str) -> Result<Self, SignatureError> {
        let bad = || SignatureError::Key {
            key: spec.to_string(),
            message: "is not an identity: write subject=SUBJECT,issuer=ISSUER, for example \
                      subject=alice@example.com,issuer=https://accounts.example.com"
                .into(),
        };
        let rest = spec.strip_prefix("subject=").ok_or_else(bad)?;
        let (subject, issuer) = rest.rsplit_once(",issuer=").ok_or_else(bad)?;
        if subject.is_empty() || issuer.is_empty() {
            return Err(bad());
        }
        Ok(Self {
            subject: subject.into(),
            issuer: issuer.into(),
        })
    }
}

/// id-kp-codeSigning, 1.3.6.1.5.5.7.3.3, as DER content octets.
pub(super) const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

/// Fulcio's OIDC issuer extensions: v2 (a DER UTF8String), then v1 (the raw
/// text).
const ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";

/// What a Fulcio-style certificate (DER) says of its holder: the subject
/// alternative names (emails and URIs), the OIDC issuer, and the public key.
pub(crate) struct Holder {
    pub(crate) subjects: Vec<String>,
    pub(crate) issuer: Option<String>,
    key: CosignVerificationKey,
    /// The public key's point, when it is on P-384 (see [`Holder::verifies`]).
    p384: Option<Vec<u8>>,
}

impl Holder {
    /// Whether the certificate's key signed `message` with `signature` (DER
    /// ECDSA). A P-384 key may have hashed with SHA-384 or SHA-256 (some
    /// sigstore clients do the latter); both are tried.
    pub(crate) fn verifies(&self, signature: &[u8], message: &[u8]) -> bool {
        self.key
            .verify_signature(Signature::Raw(signature), message)
            .is_ok()
            || self.p384.as_ref().is_some_and(|point| {
                ring::signature::UnparsedPublicKey::new(
                    &ring::signature::ECDSA_P384_SHA256_ASN1,
                    point,
                )
                .verify(message, signature)
                .is_ok()
            })
    }
}

/// Reads [`Holder`] out of the certificate `der`, whose extended key usage
/// must name code signing.
pub(crate) fn holder(der: &[u8]) -> Result<Holder, String> {
    use x509_cert::der::Encode as _;
    use x509_cert::der::oid::ObjectIdentifier;
    use x509_cert::ext::pkix::name::GeneralName;
    use x509_cert::ext::pkix::{ExtendedKeyUsage, SubjectAltName};
    let cert = x509_cert::Certificate::from_der(der)
        .map_err(|e| format!("its certificate does not parse ({e})"))?;
    let tbs = cert.tbs_certificate();
    let code_signing = ObjectIdentifier::from_bytes(CODE_SIGNING).expect("a valid OID");
    if !matches!(
        tbs.get_extension::<ExtendedKeyUsage>(),
        Ok(Some((_, eku))) if eku.0.contains(&code_signing)
    ) {
        return Err("its certificate is not for code signing (no such extended key usage)".into());
    }
    let subjects = match tbs.get_extension::<SubjectAltName>() {
        Ok(Some((_, san))) => san
            .0
            .iter()
            .filter_map(|name| match name {
                GeneralName::Rfc822Name(s) | GeneralName::UniformResourceIdentifier(s) => {
                    Some(s.to_string())
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let extension = |oid: &str| {
        let oid = ObjectIdentifier::new_unwrap(oid);
        tbs.extensions()
            .into_iter()
            .flatten()
            .find(|e| e.extn_id == oid)
            .map(|e| e.extn_value.as_bytes().to_vec())
    };
    let issuer = match extension(ISSUER_V2) {
        Some(v) => Some(
            x509_cert::der::asn1::Utf8StringRef::from_der(&v)
                .map(|s| s.as_str().to_string())
                .map_err(|_| {
                    "its certificate's issuer extension (v2) does not parse".to_string()
                })?,
        ),
        None => extension(ISSUER_V1).and_then(|v| String::from_utf8(v).ok()),
    };
    let info = tbs.subject_public_key_info();
    let spki = info
        .to_der()
        .map_err(|e| format!("its public key does not encode ({e})"))?;
    let key = CosignVerificationKey::try_from_der(&spki)
        .map_err(|e| format!("its public key is not one sigstore verifies ({e})"))?;
    let p384 = matches!(key, CosignVerificationKey::ECDSA_P384_SHA384_ASN1(_))
        .then(|| info.subject_public_key.raw_bytes().to_vec());
    Ok(Holder {
        subjects,
        issuer,
        key,
        p384,
    })
}
