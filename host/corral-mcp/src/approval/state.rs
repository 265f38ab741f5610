//! The `requestState` of an approval in MCP 2026-07-28's input-required
//! flow: what the server hands the client with the question and gets back,
//! unchanged, with the answer on the client's retry.
//!
//! The client carries it; no server process holds it, so any replica with
//! the same key finishes the exchange. It is signed (HMAC-SHA256, rmcp's
//! [`RequestStateCodec`], SEP-2322) with a key from configuration, and
//! binds the answer to the exact call:
//! - the call: the tool; its build (the sha256 of the plugin's bytes, its
//!   policy's grants and limits, and its spec, so a rebuilt plugin, a
//!   widened policy or a redefined pipeline is asked about again); the
//!   sha256 of the call's canonical arguments (keys sorted); and the sha256
//!   of the context it carries (`_meta["corral/context"]`);
//! - the question each answer is for: the gate, the tool and plugin build
//!   that asked, the sha256 of the text shown, and which time in the call
//!   that same question came (a guest that asks twice is answered twice);
//! - the decisions of earlier rounds of the same call (a declared gate
//!   answered, then a guest's own request), so none is asked twice;
//! - the client's answers to the guest's requests of earlier rounds
//!   (`requests.rs`), each bound to one request (key, kind, sha256 of the
//!   whole request, occurrence), and which requests the retry answers;
//! - a random nonce and an expiry: a state is good for [`DEFAULT_STATE_TTL`]
//!   (or what the server sets) and once. The process that accepts a state
//!   remembers its nonce until the state expires (the most recent
//!   [`MAX_REMEMBERED`] of them, least recently used forgotten first), so a
//!   replay to it is refused; a replay to another replica within the TTL
//!   is not detected.
//!
//! The signature covers a purpose label, so an approval state and a
//! disclosure token, signed with the same key, cannot stand for each other.
//!
//! The state is signed, not encrypted: it holds hashes, decisions, the
//! reviewer's edits and the client's own answers, nothing secret. The one exception is a script's
//! journal (code mode), which holds tool outputs: it is encrypted inside
//! the signed state (`journal.rs`).

use std::time::Duration;

use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::Serialize;

use super::journal::JournalSeal;
use super::payload::{Binding, Payload, hex};

/// How long an approval's `requestState` stays good: 600 000 ms (ten
/// minutes, time for a person to read the question and answer).
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(600);

/// Shortest signing key accepted, in bytes: 32 (HMAC-SHA256).
pub const MIN_STATE_KEY_BYTES: usize = RequestStateCodec::MIN_KEY_LENGTH;

/// Most accepted nonces one process remembers: 100 000. Past that the
/// least recently used are forgotten before their state expires, and a
/// replay of one of them to this process would then go unnoticed.
pub const MAX_REMEMBERED: u64 = 100_000;

/// The purpose label of approval states.
const APPROVAL: &[u8] = b"corral/approval";

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
    /// The state could not be written (not expected: it is plain JSON).
    #[error("cannot write the requestState: {0}")]
    Seal(String),
}

/// Seals and opens approval states; remembers the nonces it accepted.
pub(crate) struct States {
    codec: RequestStateCodec,
    ttl: Duration,
    used: moka::sync::Cache<String, ()>,
    /// Encrypts scripts' journals with a key derived from the same key.
    pub journals: JournalSeal,
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
            // Least recently used first: moka's default admission policy
            // would turn new nonces away once full, not forget old ones.
            used: moka::sync::Cache::builder()
                .max_capacity(MAX_REMEMBERED)
                .time_to_live(ttl)
                .eviction_policy(moka::policy::EvictionPolicy::lru())
                .build(),
            journals: JournalSeal::new(key),
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
    ///
    /// # Errors
    /// [`StateError::Seal`] when it cannot be written.
    pub fn seal(&self, payload: &Payload) -> Result<String, StateError> {
        self.seal_value(payload, APPROVAL, self.ttl)
    }

    /// `value`, signed with the same key for `purpose` (a label the
    /// signature covers), expiring after `ttl`: for other client-carried
    /// state (the unfolded facades of a 2026-07-28 client).
    ///
    /// # Errors
    /// [`StateError::Seal`] when it cannot be written.
    pub fn seal_value<T: Serialize>(
        &self,
        value: &T,
        purpose: &[u8],
        ttl: Duration,
    ) -> Result<String, StateError> {
        self.codec
            .seal_json_with(value, &SealOptions::new().associated_data(purpose).ttl(ttl))
            .map_err(|err| StateError::Seal(err.to_string()))
    }

    /// The value of `sealed` from [`seal_value`](Self::seal_value) for
    /// `purpose`, when signed by this key and not expired.
    ///
    /// # Errors
    /// [`StateError::Forged`] or [`StateError::Expired`].
    pub fn open_value<T: serde::de::DeserializeOwned>(
        &self,
        sealed: &str,
        purpose: &[u8],
    ) -> Result<T, StateError> {
        self.codec
            .open_json_with(sealed, purpose)
            .map_err(|err| match err {
                RequestStateError::Expired => StateError::Expired,
                _ => StateError::Forged,
            })
    }

    /// Records that the state with `nonce` has been used.
    ///
    /// # Errors
    /// [`StateError::Replayed`] when it was used before.
    /// How long a state is good for.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    pub fn consume(&self, nonce: &str) -> Result<(), StateError> {
        let entry = self.used.entry(nonce.to_string()).or_insert(());
        if entry.is_fresh() {
            Ok(())
        } else {
            Err(StateError::Replayed)
        }
    }

    /// The payload of `sealed`, checked: signed by this key, not expired,
    /// and for the call `binding`. It is not used up here
    /// ([`consume`](Self::consume) does that once the answer is read).
    ///
    /// # Errors
    /// [`StateError`] naming what is wrong.
    pub fn open(&self, sealed: &str, binding: &Binding) -> Result<Payload, StateError> {
        let payload: Payload = self.open_value(sealed, APPROVAL)?;
        let b = &payload.binding;
        let other = if b.tool != binding.tool {
            Some("another tool")
        } else if b.build_sha256 != binding.build_sha256 {
            Some("another build of the tool (its plugin, policy or definition changed since)")
        } else if b.arguments_sha256 != binding.arguments_sha256 {
            Some("other arguments")
        } else if b.context_sha256 != binding.context_sha256 {
            Some("another context (`_meta[\"corral/context\"]`)")
        } else {
            None
        };
        if let Some(what) = other {
            return Err(StateError::OtherCall { what });
        }
        Ok(payload)
    }
}

/// Marks the state `nonce` used in the store the replicas share, for
/// `ttl`: `Ok` the first time on any replica, an error every later time, and
/// an error (fail closed) when the store cannot say. The process's own
/// memory of used states ([`States::consume`]) refuses a local replay first.
///
/// # Errors
/// `invalid_params` ([`StateError::Replayed`]) for a state already used;
/// `internal_error` when the store fails.
pub(crate) async fn use_once(
    store: &dyn corral_store::SharedStore,
    nonce: &str,
    ttl: std::time::Duration,
) -> Result<(), rmcp::ErrorData> {
    let fresh = store
        .put_new(&format!("state:{nonce}"), b"1".to_vec(), ttl)
        .await
        .map_err(|err| {
            rmcp::ErrorData::internal_error(
                format!("cannot check that the request state is used once: {err}"),
                None,
            )
        })?;
    if fresh {
        Ok(())
    } else {
        Err(rmcp::ErrorData::invalid_params(
            StateError::Replayed.to_string(),
            None,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::payload::{Question, sha256_hex};
    use super::*;

    fn binding(tool: &str, build: &str, arguments: &str) -> Binding {
        Binding {
            tool: tool.into(),
            build_sha256: sha256_hex(build.as_bytes()),
            arguments_sha256: sha256_hex(arguments.as_bytes()),
            context_sha256: sha256_hex(b"[]"),
        }
    }

    fn payload(binding: Binding) -> Payload {
        Payload {
            binding,
            answered: vec![],
            pending: Some(Question {
                gate: "declared".into(),
                tool: "t".into(),
                plugin_sha256: String::new(),
                text_sha256: "00".into(),
                occurrence: 0,
                script_call: None,
            }),
            asked: vec![],
            given: vec![],
            nonce: States::nonce(),
            journal: None,
        }
    }

    #[test]
    fn a_state_opens_for_its_call_once_and_never_for_another() {
        let states = States::new(&[7; 32], DEFAULT_STATE_TTL).expect("key");
        let call = binding("notes_delete", "ab", r#"{"name":"todo"}"#);
        let state = payload(call.clone());
        let sealed = states.seal(&state).expect("seal");
        assert_eq!(
            states.open(&sealed, &binding("notes_delete", "ab", r#"{"name":"all"}"#)),
            Err(StateError::OtherCall {
                what: "other arguments"
            })
        );
        assert!(matches!(
            states.open(
                &sealed,
                &binding("notes_delete", "cd", r#"{"name":"todo"}"#)
            ),
            Err(StateError::OtherCall { .. })
        ));
        let mut other_context = call.clone();
        other_context.context_sha256 = sha256_hex(b"tenant b");
        assert!(matches!(
            states.open(&sealed, &other_context),
            Err(StateError::OtherCall { .. })
        ));
        assert_eq!(states.open(&sealed, &call), Ok(state.clone()));
        assert_eq!(states.consume(&state.nonce), Ok(()));
        assert_eq!(states.consume(&state.nonce), Err(StateError::Replayed));
    }

    #[test]
    fn a_forged_or_foreign_state_is_refused() {
        let states = States::new(&[7; 32], DEFAULT_STATE_TTL).expect("key");
        let call = binding("t", "", "{}");
        let sealed = states.seal(&payload(call.clone())).expect("seal");
        // One character changed in the signed body.
        let mut forged: Vec<char> = sealed.chars().collect();
        let at = forged.len() / 2;
        forged[at] = if forged[at] == 'A' { 'B' } else { 'A' };
        let forged: String = forged.into_iter().collect();
        assert_eq!(states.open(&forged, &call), Err(StateError::Forged));
        // Signed with another key: another server's, or the client's own.
        let other = States::new(&[8; 32], DEFAULT_STATE_TTL).expect("key");
        let foreign = states.seal(&payload(call.clone())).expect("seal");
        assert_eq!(other.open(&foreign, &call), Err(StateError::Forged));
        assert_eq!(states.open("not a state", &call), Err(StateError::Forged));
        // Signed for another purpose with the same key: a disclosure token.
        let token = states
            .seal_value(
                &payload(call.clone()),
                b"corral/disclosure",
                DEFAULT_STATE_TTL,
            )
            .expect("seal");
        assert_eq!(states.open(&token, &call), Err(StateError::Forged));
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
        let call = binding("t", "", "{}");
        let sealed = states.seal(&payload(call.clone())).expect("seal");
        // Waiting out the 1 ms TTL is the behaviour under test.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(states.open(&sealed, &call), Err(StateError::Expired));
    }

    #[test]
    fn the_replay_memory_forgets_the_oldest_when_full_not_the_newest() {
        let states = States::new(&[7; 32], DEFAULT_STATE_TTL).expect("key");
        let cap = MAX_REMEMBERED as usize;
        for i in 0..cap + 10 {
            assert_eq!(states.consume(&format!("n{i}")), Ok(()));
        }
        states.used.run_pending_tasks();
        // The newest is remembered: its replay is refused.
        assert_eq!(
            states.consume(&format!("n{}", cap + 9)),
            Err(StateError::Replayed)
        );
    }
}
