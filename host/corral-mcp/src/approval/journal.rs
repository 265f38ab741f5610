//! A script's journal inside an approval's `requestState` (code mode under
//! MCP 2026-07-28's input-required flow).
//!
//! The journal holds every answer the script got before its gated call:
//! tool outputs the client must not read (the script returns only what it
//! chooses to). So, unlike the rest of the state, which is signed and
//! readable, the journal is encrypted and authenticated: ChaCha20-Poly1305
//! (RFC 8439, `ring`), with a key derived by HKDF-SHA256 (RFC 5869) from the
//! state key that replicas share, so any replica can finish a run. Each seal
//! takes a fresh random 96-bit nonce, and its associated data is the state's
//! own nonce: a journal cut from one state and pasted into another does not
//! open. The signature over the whole state still protects it as well.
//!
//! Sealed form: base64url (no padding) of the 12-byte AEAD nonce followed
//! by the ciphertext and its 16-byte tag.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::{aead, hkdf};

use corral::Journal;

/// The HKDF salt and info of the journal key: a key for this and nothing
/// else, whatever else the state key signs.
const SALT: &[u8] = b"corral/journal";
const INFO: &[u8] = b"chacha20-poly1305";

/// Seals and opens journals with the key derived from a state key.
pub(crate) struct JournalSeal {
    key: aead::LessSafeKey,
}

impl JournalSeal {
    /// The seal of the state key `state_key`.
    pub fn new(state_key: &[u8]) -> Self {
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, SALT).extract(state_key);
        let okm = prk
            .expand(&[INFO], &aead::CHACHA20_POLY1305)
            // 32 bytes of output is far below HKDF-SHA256's 8160.
            .expect("HKDF-SHA256 gives a 32-byte key");
        Self {
            key: aead::LessSafeKey::new(aead::UnboundKey::from(okm)),
        }
    }

    /// `journal`, encrypted for the state with nonce `state_nonce`.
    ///
    /// # Errors
    /// What went wrong, when there is no randomness for the nonce or the
    /// journal cannot be written.
    pub fn seal(&self, journal: &Journal, state_nonce: &str) -> Result<String, String> {
        let mut nonce = [0u8; aead::NONCE_LEN];
        getrandom::fill(&mut nonce)
            .map_err(|err| format!("no randomness for the journal: {err}"))?;
        let mut sealed = serde_json::to_vec(journal).map_err(|err| err.to_string())?;
        self.key
            .seal_in_place_append_tag(
                aead::Nonce::assume_unique_for_key(nonce),
                aead::Aad::from(state_nonce.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| "the journal could not be encrypted".to_string())?;
        let mut out = nonce.to_vec();
        out.append(&mut sealed);
        Ok(URL_SAFE_NO_PAD.encode(out))
    }

    /// The journal of `sealed`, encrypted for the state with nonce
    /// `state_nonce` with this key; `None` for anything else: another key,
    /// another state, or altered bytes (the caller refuses the state as
    /// forged).
    pub fn open(&self, sealed: &str, state_nonce: &str) -> Option<Journal> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if bytes.len() < aead::NONCE_LEN {
            return None;
        }
        let (nonce, ciphertext) = bytes.split_at(aead::NONCE_LEN);
        let nonce = aead::Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buffer = ciphertext.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, aead::Aad::from(state_nonce.as_bytes()), &mut buffer)
            .ok()?;
        serde_json::from_slice(plain).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal() -> Journal {
        serde_json::from_value(serde_json::json!({
            "code_sha256": "ab".repeat(32),
            "seed": 42,
            "start_ms": 1_700_000_000_000u64,
            "calls": [{
                "index": 0,
                "tool": "notes_write",
                "arguments_sha256": "cd".repeat(32),
                "ms": 3,
                "answer": {"as": "json", "text": "{\"secret\":\"s3cr3t\"}"}
            }]
        }))
        .expect("a journal")
    }

    #[test]
    fn a_journal_opens_with_its_key_and_state_and_reads_as_nothing_else() {
        let seal = JournalSeal::new(&[7; 32]);
        let sealed = seal.seal(&journal(), "nonce-a").expect("seal");
        assert!(!sealed.contains("s3cr3t") && !sealed.contains("notes_write"));
        assert_eq!(seal.open(&sealed, "nonce-a"), Some(journal()));
        // Pasted into another state.
        assert_eq!(seal.open(&sealed, "nonce-b"), None);
        // Another key (another server), and altered bytes.
        assert_eq!(JournalSeal::new(&[8; 32]).open(&sealed, "nonce-a"), None);
        let mut altered = URL_SAFE_NO_PAD.decode(&sealed).expect("base64");
        let last = altered.len() - 1;
        altered[last] ^= 1;
        assert_eq!(seal.open(&URL_SAFE_NO_PAD.encode(altered), "nonce-a"), None);
        assert_eq!(seal.open("", "nonce-a"), None);
        // Two seals of one journal differ (fresh nonces).
        assert_ne!(seal.seal(&journal(), "nonce-a").expect("seal"), sealed);
    }
}
