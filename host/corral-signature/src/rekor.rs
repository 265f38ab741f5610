//! A bundle's transparency log entry (Rekor), checked offline against the
//! logs of a trusted root: the entry's body must record this signature of
//! these bytes by this certificate (a `hashedrekord` 0.0.1 entry), its
//! signed entry timestamp (the inclusion promise) must be the log's
//! signature, and its inclusion proof, when the bundle carries one, must
//! lead to the root hash of a checkpoint the log signed (RFC 9162 §2.1.3.2,
//! and the C2SP signed-note format).
//!
//! The signing time that the certificate is checked at is the entry's
//! integrated time, which only the signed entry timestamp vouches for: an
//! entry without one is refused (RFC 3161 timestamps are not read, so
//! Rekor v2 entries, `hashedrekord` 0.0.2 with no integrated time, are
//! refused too). Bundles from v0.2 on must also carry the inclusion proof,
//! as the bundle specification requires.

use base64::Engine as _;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::root::{RawLogId, TrustedRoot, b64, shown};

/// Protobuf JSON's int64: a string of digits, or a number.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Int {
    Text(String),
    Number(i64),
}

impl Int {
    fn get(&self, what: &str) -> Result<i64, String> {
        match self {
            Self::Number(n) => Ok(*n),
            Self::Text(t) => t
                .parse()
                .map_err(|_| format!("its {what} `{}` is not an integer", shown(t))),
        }
    }
}

/// `verificationMaterial.tlogEntries[]` of a bundle.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawEntry {
    log_index: Int,
    log_id: RawLogId,
    kind_version: RawKind,
    integrated_time: Option<Int>,
    inclusion_promise: Option<RawPromise>,
    inclusion_proof: Option<RawProof>,
    canonicalized_body: String,
}

#[derive(Deserialize)]
struct RawKind {
    kind: String,
    version: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPromise {
    signed_entry_timestamp: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawProof {
    log_index: Int,
    root_hash: String,
    tree_size: Int,
    #[serde(default)]
    hashes: Vec<String>,
    checkpoint: Option<RawCheckpoint>,
}

#[derive(Deserialize)]
struct RawCheckpoint {
    envelope: String,
}

/// What a checked entry vouches for.
pub(crate) struct Logged {
    /// When the log took it in (Unix seconds).
    pub(crate) integrated_time: i64,
    /// Its index in the log.
    pub(crate) log_index: i64,
}

/// The payload of a signed entry timestamp: RFC 8785 canonical JSON, whose
/// keys this struct lists in their canonical (sorted) order.
#[derive(serde::Serialize)]
struct Promise<'a> {
    body: &'a str,
    #[serde(rename = "integratedTime")]
    integrated_time: i64,
    #[serde(rename = "logID")]
    log_id: &'a str,
    #[serde(rename = "logIndex")]
    log_index: i64,
}

/// Checks `entry` against `roots`: it records `signature` of the bytes
/// whose sha256 is `sha256` (hex) by the certificate `leaf` (DER); with
/// `proof_required` (bundles from v0.2 on) it must carry an inclusion proof.
pub(super) fn check(
    entry: &RawEntry,
    roots: &[TrustedRoot],
    sha256: &str,
    signature: &[u8],
    leaf: &[u8],
    proof_required: bool,
) -> Result<Logged, String> {
    let key_id = b64(&entry.log_id.key_id).map_err(|e| format!("its log id is {e}"))?;
    let log = roots.iter().find_map(|r| r.log(&key_id)).ok_or_else(|| {
        format!(
            "its log entry is from a log no trusted root names (log id {})",
            hex::encode(&key_id)
        )
    })?;
    if (
        entry.kind_version.kind.as_str(),
        entry.kind_version.version.as_str(),
    ) != ("hashedrekord", "0.0.1")
    {
        return Err(format!(
            "its log entry is a {} {} entry, not hashedrekord 0.0.1 (Rekor v2 entries are \
             not supported yet)",
            shown(&entry.kind_version.kind),
            shown(&entry.kind_version.version)
        ));
    }
    let body = b64(&entry.canonicalized_body).map_err(|e| format!("its log entry body is {e}"))?;
    records(&body, sha256, signature, leaf)?;
    let integrated_time = entry
        .integrated_time
        .as_ref()
        .ok_or(
            "its log entry has no integrated time (an RFC 3161 timestamp instead is not \
             supported yet)",
        )?
        .get("integrated time")?;
    let log_index = entry.log_index.get("log index")?;

    let promise = entry.inclusion_promise.as_ref().ok_or(
        "its log entry has no signed entry timestamp (inclusionPromise), which vouches for \
         the signing time",
    )?;
    let set = b64(&promise.signed_entry_timestamp)
        .map_err(|e| format!("its signed entry timestamp is {e}"))?;
    let encoded = base64::engine::general_purpose::STANDARD.encode(&body);
    let payload = serde_json::to_vec(&Promise {
        body: &encoded,
        integrated_time,
        log_id: &hex::encode(&key_id),
        log_index,
    })
    .map_err(|e| e.to_string())?;
    if !log.verifies(&set, &payload, integrated_time) {
        return Err(
            "its signed entry timestamp is not the log's signature of this entry (the entry \
             or its time was changed, or another key signed it)"
                .into(),
        );
    }

    if proof_required && entry.inclusion_proof.is_none() {
        return Err(
            "its log entry has no inclusion proof, which bundles from v0.2 on must carry".into(),
        );
    }
    if let Some(proof) = &entry.inclusion_proof {
        let index = proof.log_index.get("proof's log index")?;
        if index != log_index {
            return Err("its inclusion proof is for another log index".into());
        }
        let size = proof.tree_size.get("proof's tree size")?;
        let sha256_bytes = |h: &str| {
            b64(h).and_then(|h| {
                if h.len() == 32 {
                    Ok(h)
                } else {
                    Err(format!("{} bytes long, not 32", h.len()))
                }
            })
        };
        let root =
            sha256_bytes(&proof.root_hash).map_err(|e| format!("its proof's root hash is {e}"))?;
        let hashes = proof
            .hashes
            .iter()
            .map(|h| sha256_bytes(h))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("a hash of its proof is {e}"))?;
        let leaf_hash: [u8; 32] = Sha256::new()
            .chain_update([0])
            .chain_update(&body)
            .finalize()
            .into();
        let computed = root_from_proof(index, size, leaf_hash, &hashes);
        if computed.as_ref().map(<[u8; 32]>::as_slice) != Some(root.as_slice()) {
            return Err(
                "its inclusion proof does not lead from the entry to the proof's root hash".into(),
            );
        }
        let checkpoint = proof
            .checkpoint
            .as_ref()
            .ok_or("its inclusion proof has no checkpoint, the log's signature of the root")?;
        checkpoint_signed(&checkpoint.envelope, log, size, &root, integrated_time)?;
    }
    Ok(Logged {
        integrated_time,
        log_index,
    })
}

/// Whether the `hashedrekord` body records this signature, digest and
/// certificate.
fn records(body: &[u8], sha256: &str, signature: &[u8], leaf: &[u8]) -> Result<(), String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| format!("its log entry body is not JSON ({e})"))?;
    if value["kind"] != "hashedrekord" || value["apiVersion"] != "0.0.1" {
        return Err("its log entry body is not a hashedrekord 0.0.1 entry".into());
    }
    let spec = &value["spec"];
    let hash = &spec["data"]["hash"];
    if hash["algorithm"] != "sha256" || hash["value"] != sha256 {
        return Err("its log entry records another file (its sha256 differs)".into());
    }
    let logged_signature = spec["signature"]["content"]
        .as_str()
        .map(b64)
        .transpose()?
        .unwrap_or_default();
    if logged_signature != signature {
        return Err("its log entry records another signature".into());
    }
    let pem = spec["signature"]["publicKey"]["content"]
        .as_str()
        .map(b64)
        .transpose()?
        .unwrap_or_default();
    if super::keys::pem_der(&String::from_utf8_lossy(&pem)).as_deref() != Some(leaf) {
        return Err("its log entry records another certificate".into());
    }
    Ok(())
}

fn node(left: &[u8], right: &[u8]) -> [u8; 32] {
    Sha256::new()
        .chain_update([1])
        .chain_update(left)
        .chain_update(right)
        .finalize()
        .into()
}

/// The root hash an inclusion proof leads to (RFC 9162 §2.1.3.2), or `None`
/// when the proof's shape does not fit the index and tree size.
pub(crate) fn root_from_proof(
    index: i64,
    size: i64,
    leaf: [u8; 32],
    proof: &[Vec<u8>],
) -> Option<[u8; 32]> {
    if index < 0 || index >= size {
        return None;
    }
    let (mut f, mut s) = (index as u64, (size - 1) as u64);
    let mut r = leaf;
    for p in proof {
        if s == 0 {
            return None;
        }
        if f & 1 == 1 || f == s {
            r = node(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    (s == 0).then_some(r)
}

/// Checks a checkpoint (a C2SP signed note: origin, tree size, base64 root
/// hash, then after a blank line `— NAME BASE64(KEYHINT ‖ SIGNATURE)`):
/// the log signed it, and it names `size` and `root`.
fn checkpoint_signed(
    envelope: &str,
    log: &super::root::Log,
    size: i64,
    root: &[u8],
    at: i64,
) -> Result<(), String> {
    let bad = |what: &str| Err(format!("its checkpoint {what}"));
    let Some((note, signatures)) = envelope.split_once("\n\n") else {
        return bad("is not a signed note");
    };
    let text = format!("{note}\n");
    let mut lines = note.lines();
    let (_origin, tree_size, root_hash) = (lines.next(), lines.next(), lines.next());
    if tree_size != Some(size.to_string().as_str())
        || root_hash.map(b64).and_then(Result::ok).as_deref() != Some(root)
    {
        return bad("names another tree size or root hash than the proof");
    }
    let hint = log.key_id.get(..4).unwrap_or_default();
    let signed = signatures.lines().any(|line| {
        let Some(sig) = line.strip_prefix("— ").and_then(|l| l.rsplit(' ').next()) else {
            return false;
        };
        b64(sig).is_ok_and(|sig| {
            sig.len() > 4 && &sig[..4] == hint && log.verifies(&sig[4..], text.as_bytes(), at)
        })
    });
    if signed {
        Ok(())
    } else {
        bad("is not signed by the log")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(n: u8) -> [u8; 32] {
        Sha256::new().chain_update([0, n]).finalize().into()
    }

    /// The Merkle tree hash of leaves (RFC 9162 §2.1.1), and the inclusion
    /// proof of `index`, built the simple recursive way.
    fn tree(leaves: &[[u8; 32]]) -> [u8; 32] {
        if leaves.len() == 1 {
            return leaves[0];
        }
        let k = leaves.len().next_power_of_two() / 2;
        node(&tree(&leaves[..k]), &tree(&leaves[k..]))
    }

    fn path(leaves: &[[u8; 32]], index: usize) -> Vec<Vec<u8>> {
        if leaves.len() == 1 {
            return Vec::new();
        }
        let k = leaves.len().next_power_of_two() / 2;
        if index < k {
            let mut p = path(&leaves[..k], index);
            p.push(tree(&leaves[k..]).to_vec());
            p
        } else {
            let mut p = path(&leaves[k..], index - k);
            p.push(tree(&leaves[..k]).to_vec());
            p
        }
    }

    #[test]
    fn inclusion_proofs_verify_at_every_index_and_size_and_nowhere_else() {
        for size in 1..=9usize {
            let leaves: Vec<[u8; 32]> = (0..size as u8).map(leaf).collect();
            let root = tree(&leaves);
            for index in 0..size {
                let proof = path(&leaves, index);
                let (i, s) = (index as i64, size as i64);
                assert_eq!(root_from_proof(i, s, leaves[index], &proof), Some(root));
                // Another leaf, another index or a cut proof leads elsewhere.
                assert_ne!(root_from_proof(i, s, leaf(99), &proof), Some(root));
                if size > 1 {
                    assert_ne!(
                        root_from_proof((i + 1) % s, s, leaves[index], &proof),
                        Some(root)
                    );
                    assert_ne!(
                        root_from_proof(i, s, leaves[index], &proof[..proof.len() - 1]),
                        Some(root)
                    );
                }
            }
        }
        assert_eq!(root_from_proof(3, 3, leaf(0), &[]), None);
    }
}
