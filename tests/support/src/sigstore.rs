//! A test Sigstore, since no public instance can be reached: a certificate
//! authority standing in for Fulcio (a P-384 root and intermediate, as
//! Fulcio's), a transparency log key standing in for Rekor, the trusted
//! root file naming both, and keyless bundles they vouch for, in the
//! formats sigstore clients write (bundle v0.3, `hashedrekord` 0.0.1
//! entries with a signed entry timestamp, an inclusion proof and a signed
//! checkpoint).

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, PublicKeyData as _, SanType,
    SigningKey as _,
};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Unix seconds of 2026-01-01T00:00:00Z: the day the test certificates are
/// valid by default.
pub const DAY: i64 = 1_767_225_600;

/// What a keyless bundle says.
#[derive(Debug, Clone)]
pub struct Keyless {
    /// The certificate's subject alternative name (an email address).
    pub subject: String,
    /// The OIDC issuer in Fulcio's issuer extension.
    pub issuer: String,
    /// When the log took the entry in (Unix seconds).
    pub integrated_time: i64,
    /// The entry's index in the log.
    pub log_index: i64,
    /// How many entries the log holds, for the inclusion proof.
    pub tree_size: i64,
    /// Whether the bundle carries an inclusion proof and checkpoint; without
    /// one it is a v0.1 bundle (the certificate as a one-element
    /// `x509CertificateChain`), the last version where a proof is optional.
    pub proof: bool,
    /// Whether the certificate allows code signing.
    pub code_signing: bool,
}

impl Default for Keyless {
    fn default() -> Self {
        Self {
            subject: "alice@example.com".into(),
            issuer: "https://accounts.example.com".into(),
            integrated_time: DAY + 1800,
            log_index: 5,
            tree_size: 9,
            proof: true,
            code_signing: true,
        }
    }
}

/// A test certificate authority and transparency log.
pub struct TestSigstore {
    root: Vec<u8>,
    intermediate: Vec<u8>,
    intermediate_params: CertificateParams,
    intermediate_key: KeyPair,
    log_key: KeyPair,
}

fn ca(name: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "corral test");
    dn.push(DnType::CommonName, name);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2040, 1, 1);
    params
}

impl Default for TestSigstore {
    fn default() -> Self {
        Self::new()
    }
}

impl TestSigstore {
    /// A new authority (root and intermediate) and log, with fresh keys.
    pub fn new() -> Self {
        let root_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).expect("key");
        let root_params = ca("fulcio.test root");
        let root = root_params.self_signed(&root_key).expect("root");
        let intermediate_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).expect("key");
        let intermediate_params = ca("fulcio.test intermediate");
        let intermediate = intermediate_params
            .signed_by(
                &intermediate_key,
                &Issuer::from_params(&root_params, &root_key),
            )
            .expect("intermediate");
        Self {
            root: root.der().to_vec(),
            intermediate: intermediate.der().to_vec(),
            intermediate_params,
            intermediate_key,
            log_key: KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key"),
        }
    }

    fn log_id(&self) -> Vec<u8> {
        Sha256::digest(self.log_key.subject_public_key_info()).to_vec()
    }

    /// The trusted root file (`trusted_root.json`) naming the authority and
    /// the log.
    pub fn trusted_root(&self) -> String {
        let since = json!({ "start": "2020-01-01T00:00:00Z" });
        json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [{
                "baseUrl": "https://rekor.test",
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": b64(&self.log_key.subject_public_key_info()),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": since,
                },
                "logId": { "keyId": b64(&self.log_id()) },
            }],
            "certificateAuthorities": [{
                "subject": { "organization": "corral test", "commonName": "fulcio.test" },
                "uri": "https://fulcio.test",
                "certChain": { "certificates": [
                    { "rawBytes": b64(&self.intermediate) },
                    { "rawBytes": b64(&self.root) },
                ]},
                "validFor": since,
            }],
            "ctlogs": [],
            "timestampAuthorities": [],
        })
        .to_string()
    }

    /// A short-lived certificate for `who` (valid on [`DAY`]), and its
    /// P-256 key.
    pub fn certificate(&self, who: &Keyless) -> (Vec<u8>, KeyPair) {
        self.certificate_for(who, &rcgen::PKCS_ECDSA_P256_SHA256)
    }

    /// [`Self::certificate`] with a key for `algorithm`.
    pub fn certificate_for(
        &self,
        who: &Keyless,
        algorithm: &'static rcgen::SignatureAlgorithm,
    ) -> (Vec<u8>, KeyPair) {
        let key = KeyPair::generate_for(algorithm).expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name = DistinguishedName::new();
        params.subject_alt_names = vec![SanType::Rfc822Name(
            who.subject.as_str().try_into().expect("an ASCII subject"),
        )];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        if who.code_signing {
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
        } else {
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        }
        // Fulcio's OIDC issuer extension (v2): a DER UTF8String.
        let mut issuer = vec![0x0c, u8::try_from(who.issuer.len()).expect("short issuer")];
        issuer.extend_from_slice(who.issuer.as_bytes());
        params.custom_extensions = vec![CustomExtension::from_oid_content(
            &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
            issuer,
        )];
        params.not_before = rcgen::date_time_ymd(2026, 1, 1);
        params.not_after = rcgen::date_time_ymd(2026, 1, 2);
        let cert = params
            .signed_by(
                &key,
                &Issuer::from_params(&self.intermediate_params, &self.intermediate_key),
            )
            .expect("leaf");
        (cert.der().to_vec(), key)
    }

    /// A keyless bundle of `bytes` signed as `who` says.
    pub fn bundle(&self, bytes: &[u8], who: &Keyless) -> Value {
        let (cert, key) = self.certificate(who);
        let signature = key.sign(bytes).expect("sign");
        self.bundle_with(bytes, &cert, &signature, who)
    }

    /// A keyless bundle of `bytes` with the certificate `cert` and the
    /// signature `signature`, logged as `who` says.
    pub fn bundle_with(&self, bytes: &[u8], cert: &[u8], signature: &[u8], who: &Keyless) -> Value {
        let sha = Sha256::digest(bytes);
        let pem = format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            b64(cert)
                .as_bytes()
                .chunks(64)
                .map(|c| std::str::from_utf8(c).expect("ascii"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let body = json!({
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": { "hash": { "algorithm": "sha256", "value": hex::encode(sha) } },
                "signature": { "content": b64(signature), "publicKey": { "content": b64(pem.as_bytes()) } },
            },
        })
        .to_string();
        let mut entry = json!({
            "logIndex": who.log_index.to_string(),
            "logId": { "keyId": b64(&self.log_id()) },
            "kindVersion": { "kind": "hashedrekord", "version": "0.0.1" },
            "integratedTime": who.integrated_time.to_string(),
            "inclusionPromise": { "signedEntryTimestamp": b64(&self.promise(&body, who)) },
            "canonicalizedBody": b64(body.as_bytes()),
        });
        let (media_type, material) = if who.proof {
            entry["inclusionProof"] = self.proof(body.as_bytes(), who);
            (
                "application/vnd.dev.sigstore.bundle.v0.3+json",
                json!({ "certificate": { "rawBytes": b64(cert) }, "tlogEntries": [entry] }),
            )
        } else {
            (
                "application/vnd.dev.sigstore.bundle+json;version=0.1",
                json!({
                    "x509CertificateChain": { "certificates": [{ "rawBytes": b64(cert) }] },
                    "tlogEntries": [entry],
                }),
            )
        };
        json!({
            "mediaType": media_type,
            "verificationMaterial": material,
            "messageSignature": {
                "messageDigest": { "algorithm": "SHA2_256", "digest": b64(&sha) },
                "signature": b64(signature),
            },
        })
    }

    /// The log's signed entry timestamp of `body`.
    pub fn promise(&self, body: &str, who: &Keyless) -> Vec<u8> {
        let payload = format!(
            r#"{{"body":"{}","integratedTime":{},"logID":"{}","logIndex":{}}}"#,
            b64(body.as_bytes()),
            who.integrated_time,
            hex::encode(self.log_id()),
            who.log_index
        );
        self.log_key.sign(payload.as_bytes()).expect("sign")
    }

    /// An inclusion proof of `body` at `who.log_index` in a log of
    /// `who.tree_size` entries (the others made up), with a checkpoint the
    /// log signed.
    fn proof(&self, body: &[u8], who: &Keyless) -> Value {
        let index = usize::try_from(who.log_index).expect("index");
        let size = usize::try_from(who.tree_size).expect("size");
        let leaves: Vec<[u8; 32]> = (0..size)
            .map(|i| {
                let mut h = Sha256::new();
                h.update([0]);
                if i == index {
                    h.update(body);
                } else {
                    h.update(format!("another entry {i}"));
                }
                h.finalize().into()
            })
            .collect();
        let root = tree(&leaves);
        let note = format!("rekor.test - 1\n{size}\n{}\n", b64(&root));
        let mut signed = self.log_id()[..4].to_vec();
        signed.extend(self.log_key.sign(note.as_bytes()).expect("sign"));
        json!({
            "logIndex": who.log_index.to_string(),
            "rootHash": b64(&root),
            "treeSize": who.tree_size.to_string(),
            "hashes": path(&leaves, index).iter().map(|h| b64(h)).collect::<Vec<_>>(),
            "checkpoint": { "envelope": format!("{note}\n— rekor.test {}\n", b64(&signed)) },
        })
    }
}

fn node(left: &[u8], right: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The Merkle tree hash of `leaves` (RFC 9162 §2.1.1).
fn tree(leaves: &[[u8; 32]]) -> [u8; 32] {
    if leaves.len() == 1 {
        return leaves[0];
    }
    let k = leaves.len().next_power_of_two() / 2;
    node(&tree(&leaves[..k]), &tree(&leaves[k..]))
}

/// The inclusion proof of `index` (RFC 9162 §2.1.3.1), leaf side first.
fn path(leaves: &[[u8; 32]], index: usize) -> Vec<[u8; 32]> {
    if leaves.len() == 1 {
        return Vec::new();
    }
    let k = leaves.len().next_power_of_two() / 2;
    let (mut p, sibling) = if index < k {
        (path(&leaves[..k], index), tree(&leaves[k..]))
    } else {
        (path(&leaves[k..], index - k), tree(&leaves[..k]))
    };
    p.push(sibling);
    p
}

/// The identity the test Sigstore signs for by default: its subject and
/// issuer, as a policy's `identities` names it.
pub const ALICE: &str = "subject=alice@example.com,issuer=https://accounts.example.com";

impl TestSigstore {
    /// Trust in this Sigstore's root for `identities`, required.
    pub fn trust(&self, identities: &[&str]) -> corral::Trust {
        corral::Trust::new(
            Vec::new(),
            vec![corral::TrustedRoot::from_json(&self.trusted_root(), "root.json").expect("root")],
            identities
                .iter()
                .map(|i| i.parse::<corral::Identity>().expect("identity"))
                .collect(),
            true,
        )
    }
}
