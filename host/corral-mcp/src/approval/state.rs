//! The `requestState` of an approval in MCP 2026-07-28's input-required
//! flow: what the server hands the client with the question and gets back,
//! unchanged, with the answer on the client's retry.
//!
//! The client carries it; no server process holds it, so any replica with
//! the same key finishes the exchange. It is signed (HMAC-SHA256, rmcp's
//! [`RequestStateCodec`], SEP-2322) with a key from configuration, and
//! binds the answer to the exact call:
//! - the tool, the sha256 of its plugin build, and the sha256 of the call's
//!   canonical arguments (keys sorted), so an answer cannot be moved to
//!   other arguments, another tool or a rebuilt plugin;
//! - the question it answers: the gate and the sha256 of the text the
//!   reviewer was shown (the tool's description, or a guest's mid-call
//!   request), so a guest that asks something else is asked again;
//! - the decisions of earlier rounds of the same call (a declared gate
//!   answered, then a guest's own request), so none is asked twice;
//! - a random nonce and an expiry: a state is good for [`DEFAULT_STATE_TTL`]
//!   (or what the server sets) and once. The process that accepts a state
//!   remembers its nonce until the state expires, so a replay to it is
//!   refused; a replay to another replica within the TTL is not detected.
//!
//! The state is signed, not encrypted: it holds hashes, decisions and the
//! reviewer's edits, nothing secret.

use std::time::Duration;

use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use corral::ApprovalDecision;

/// How long an approval's `requestState` stays good: 600 000 ms (ten
/// minutes, time for a person to read the question and answer).
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(600);

/// Shortest signing key accepted, in bytes: 32 (HMAC-SHA256).
pub const MIN_STATE_KEY_BYTES: usize = RequestStateCodec::MIN_KEY_LENGTH;

/// Most accepted nonces one process remembers: 100 000. Past that the
/// oldest are forgotten before their state expires, and a replay of one of
/// them to this process would then go unnoticed.
const MAX_REMEMBERED: u64 = 100_000;

/// Why a signing key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateKeyError {
    /// The key is shorter than [`MIN_STATE_KEY_BYTES`].
    #[error(
        "the request-state signing key has {actual} bytes; use at least {MIN_STATE_KEY_BYTES} \
         random bytes (for example 64 hex digits), the same on every replica"
    )]
    TooShort {
        /// Its length in bytes.
        actual: usize,
    },
    /// No randomness was available to generate a key.
    #[error("cannot generate a request-state signing key: {0}")]
    NoRandomness(String),
}

/// Why a client's `requestState` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Not signed with this server's key, or altered.
    #[error(
        "the requestState is not one this server issued, or it was altered; call the tool \
         again without it to be asked anew"
    )]
    Forged,
    /// Older than its TTL.
    #[error("the requestState has expired; call the tool again without it to be asked anew")]
    Expired,
    /// Already used once.
    #[error("the requestState was already used (a replay); call the tool again without it")]
    Replayed,
    /// Issued for another call.
    #[error(
        "the requestState was issued for {what}; call the tool again without it to be asked \
         about this call"
    )]
    OtherCall {
        /// What differs: other arguments, another tool, a rebuilt plugin.
        what: &'static str,
    },
}

/// Which call a state belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Binding {
    pub tool: String,
    pub plugin_sha256: String,
    pub arguments_sha256: String,
}

impl Binding {
    /// The binding of a call of `tool` (provided by a build with
    /// `plugin_sha256`, empty for pipelines and built-ins) with `arguments`.
    pub fn of(tool: &str, plugin_sha256: &str, arguments: &serde_json::Value) -> Self {
        Self {
            tool: tool.to_string(),
            plugin_sha256: plugin_sha256.to_string(),
            // serde_json's map is ordered: this is canonical JSON.
            arguments_sha256: sha256_hex(arguments.to_string().as_bytes()),
        }
    }
}

/// A question: which gate asked, and the sha256 of the text shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Question {
    pub gate: String,
    pub text_sha256: String,
}

impl Question {
    /// The question of a review request.
    pub fn of(request: &corral::ReviewRequest) -> Self {
        Self {
            gate: request.gate.to_string(),
            text_sha256: sha256_hex(request.description.as_bytes()),
        }
    }
}

/// A decision made in an earlier round, as the state keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", content = "value", rename_all = "snake_case")]
pub(crate) enum Decided {
    /// Go ahead (a standing approval, if asked for, was granted when the
    /// answer came).
    Continue,
    /// Denied, with the reason.
    ExitEarly(String),
    /// Go ahead with these arguments (JSON text).
    Edit(String),
}

impl Decided {
    /// What to carry into a later round for `decision`; `None` for one that
    /// decides nothing.
    pub fn of(decision: &ApprovalDecision) -> Option<Self> {
        match decision {
            ApprovalDecision::Continue | ApprovalDecision::ContinueAlways => Some(Self::Continue),
            ApprovalDecision::ExitEarly(reason) => Some(Self::ExitEarly(reason.clone())),
            ApprovalDecision::Edit(text) => Some(Self::Edit(text.clone())),
            _ => None,
        }
    }

    /// The decision a reviewer returns for it.
    pub fn decision(&self) -> ApprovalDecision {
        match self {
            Self::Continue => ApprovalDecision::Continue,
            Self::ExitEarly(reason) => ApprovalDecision::ExitEarly(reason.clone()),
            Self::Edit(text) => ApprovalDecision::Edit(text.clone()),
        }
    }
}

/// What a state says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Payload {
    pub binding: Binding,
    /// Answers of earlier rounds of this call.
    pub answered: Vec<(Question, Decided)>,
    /// The question the client's `inputResponses` answer.
    pub pending: Question,
    /// Random, hex; a state is accepted once.
    pub nonce: String,
}

/// Seals and opens approval states; remembers the nonces it accepted.
pub(crate) struct States {
    codec: RequestStateCodec,
    ttl: Duration,
    used: moka::sync::Cache<String, ()>,
    /// Whether the key was generated by this process (single replica).
    pub generated: bool,
}

impl std::fmt::Debug for States {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("States")
            .field("ttl", &self.ttl)
            .field("generated", &self.generated)
            .finish_non_exhaustive()
    }
}

impl States {
    /// States signed with `key`, good for `ttl`.
    ///
    /// # Errors
    /// [`StateKeyError::TooShort`] for a key under [`MIN_STATE_KEY_BYTES`].
    pub fn new(key: &[u8], ttl: Duration) -> Result<Self, StateKeyError> {
        let codec = RequestStateCodec::try_new(key.to_vec())
            .map_err(|_| StateKeyError::TooShort { actual: key.len() })?;
        Ok(Self {
            codec,
            ttl,
            used: moka::sync::Cache::builder()
                .max_capacity(MAX_REMEMBERED)
                .time_to_live(ttl)
                .build(),
            generated: false,
        })
    }

    /// States signed with a random key of this process: a state issued here
    /// is good only here.
    ///
    /// # Errors
    /// [`StateKeyError::NoRandomness`] when the OS gives no random bytes.
    pub fn generated(ttl: Duration) -> Result<Self, StateKeyError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|err| StateKeyError::NoRandomness(err.to_string()))?;
        let mut states = Self::new(&key, ttl)?;
        states.generated = true;
        Ok(states)
    }

    /// A fresh random nonce.
    pub fn nonce() -> String {
        let mut bytes = [0u8; 16];
        // Without randomness the nonce is still unique enough per state in
        // practice; the signature, not the nonce, protects integrity.
        if getrandom::fill(&mut bytes).is_err() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            bytes = now.to_le_bytes();
        }
        hex(&bytes)
    }

    /// `payload`, signed, expiring after the TTL.
    pub fn seal(&self, payload: &Payload) -> String {
        self.codec
            .seal_json_with(payload, &SealOptions::new().ttl(self.ttl))
            .unwrap_or_default()
    }

    /// `value`, signed with the same key, expiring after `ttl`: for other
    /// client-carried state (the unfolded facades of a 2026-07-28 client).
    pub fn seal_value<T: Serialize>(&self, value: &T, ttl: Duration) -> String {
        self.codec
            .seal_json_with(value, &SealOptions::new().ttl(ttl))
            .unwrap_or_default()
    }

    /// The value of `sealed` from [`seal_value`](Self::seal_value), when
    /// signed by this key and not expired.
    ///
    /// # Errors
    /// [`StateError::Forged`] or [`StateError::Expired`].
    pub fn open_value<T: serde::de::DeserializeOwned>(
        &self,
        sealed: &str,
    ) -> Result<T, StateError> {
        self.codec
            .open_json_with(sealed, &[])
            .map_err(|err| match err {
                RequestStateError::Expired => StateError::Expired,
                _ => StateError::Forged,
            })
    }

    /// The payload of `sealed`, checked: signed by this key, not expired,
    /// for the call `binding`, and not used before (it is used now).
    ///
    /// # Errors
    /// [`StateError`] naming what is wrong.
    pub fn open(&self, sealed: &str, binding: &Binding) -> Result<Payload, StateError> {
        let payload: Payload = self.open_value(sealed)?;
        let b = &payload.binding;
        let other = if b.tool != binding.tool {
            Some("another tool")
        } else if b.plugin_sha256 != binding.plugin_sha256 {
            Some("another build of the plugin (it was rebuilt since)")
        } else if b.arguments_sha256 != binding.arguments_sha256 {
            Some("other arguments")
        } else {
            None
        };
        if let Some(what) = other {
            return Err(StateError::OtherCall { what });
        }
        let entry = self.used.entry(payload.nonce.clone()).or_insert(());
        if !entry.is_fresh() {
            return Err(StateError::Replayed);
        }
        Ok(payload)
    }
}

/// Lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lowercase hex sha256 of `bytes`.
fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload(binding: Binding) -> Payload {
        Payload {
            binding,
            answered: vec![],
            pending: Question {
                gate: "declared".into(),
                text_sha256: "00".into(),
            },
            nonce: States::nonce(),
        }
    }

    #[test]
    fn a_state_opens_once_for_its_call_and_never_for_another() {
        let states = States::new(&[7; 32], DEFAULT_STATE_TTL).expect("key");
        let call = Binding::of("notes_delete", "ab", &json!({"name": "todo"}));
        let sealed = states.seal(&payload(call.clone()));
        let other_args = Binding::of("notes_delete", "ab", &json!({"name": "all"}));
        assert_eq!(
            states.open(&sealed, &other_args),
            Err(StateError::OtherCall {
                what: "other arguments"
            })
        );
        let rebuilt = Binding::of("notes_delete", "cd", &json!({"name": "todo"}));
        assert!(matches!(
            states.open(&sealed, &rebuilt),
            Err(StateError::OtherCall { .. })
        ));
        assert!(states.open(&sealed, &call).is_ok());
        assert_eq!(states.open(&sealed, &call), Err(StateError::Replayed));
    }

    #[test]
    fn a_forged_or_foreign_state_is_refused() {
        let states = States::new(&[7; 32], DEFAULT_STATE_TTL).expect("key");
        let call = Binding::of("t", "", &json!({}));
        let sealed = states.seal(&payload(call.clone()));
        // One character changed in the signed body.
        let mut forged: Vec<char> = sealed.chars().collect();
        let at = forged.len() / 2;
        forged[at] = if forged[at] == 'A' { 'B' } else { 'A' };
        let forged: String = forged.into_iter().collect();
        assert_eq!(states.open(&forged, &call), Err(StateError::Forged));
        // Signed with another key: another server's, or the client's own.
        let other = States::new(&[8; 32], DEFAULT_STATE_TTL).expect("key");
        assert_eq!(
            other.open(&states.seal(&payload(call.clone())), &call),
            Err(StateError::Forged)
        );
        assert_eq!(states.open("not a state", &call), Err(StateError::Forged));
        // The same key in another process (a replica) opens it.
        let replica = States::new(&[7; 32], DEFAULT_STATE_TTL).expect("key");
        assert!(replica.open(&sealed, &call).is_ok());
    }

    #[test]
    fn a_short_key_is_refused_and_an_expired_state_too() {
        assert_eq!(
            States::new(&[1; 16], DEFAULT_STATE_TTL).err(),
            Some(StateKeyError::TooShort { actual: 16 })
        );
        let states = States::new(&[7; 32], Duration::from_millis(1)).expect("key");
        let call = Binding::of("t", "", &json!({}));
        let sealed = states.seal(&payload(call.clone()));
        // Waiting out the 1 ms TTL is the behaviour under test.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(states.open(&sealed, &call), Err(StateError::Expired));
    }
}
