//! The tokens file of streamable HTTP (`corral serve --tokens FILE`): each
//! bearer token a caller may present, and the tenant it authenticates. A
//! request whose token is listed runs as that tenant (`corral::Tenant::
//! authenticated`): its quotas, tasks and resources are the tenant's, and
//! the client's own `tenant` context key no longer decides them.
//!
//! ```toml
//! version = 1
//!
//! [[token]]
//! tenant = "acme"
//! sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//!
//! [[token]]
//! tenant = "globex"
//! token = "a-token-written-out"   # or its sha256, which keeps it out of the file
//! ```
//!
//! Tokens are compared by their sha256, so the comparison's time says
//! nothing about a listed token. A tenant name is 1 to 64 characters of
//! `[A-Za-z0-9_.@-]`: it appears in errors and metrics.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use sha2::{Digest as _, Sha256};

/// The most tokens a tokens file may list: 100 000.
pub const MAX_TOKENS: usize = 100_000;

/// Bearer tokens and their tenants, by the sha256 of the token.
#[derive(Debug, Clone, Default)]
pub struct TokenTenants {
    by_digest: HashMap<[u8; 32], corral::Tenant>,
}

/// Why a tokens file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the tokens file {path}: {message}")]
pub struct TokensError {
    /// The file.
    pub path: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    version: u32,
    #[serde(default)]
    token: Vec<RawToken>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    tenant: String,
    token: Option<String>,
    sha256: Option<String>,
}

fn valid_tenant(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.@-".contains(&b))
}

impl TokenTenants {
    /// Reads a tokens file (see the module docs).
    ///
    /// # Errors
    /// [`TokensError`] naming the file, and the entry (1-based) where one
    /// is at fault: unreadable, not version 1, an unknown key, an entry
    /// with both or neither of `token` and `sha256`, a `sha256` that is not
    /// 64 hex digits, a tenant name outside the rule, a token listed twice,
    /// or more than [`MAX_TOKENS`].
    pub fn from_file(path: &Path) -> Result<Self, TokensError> {
        let fail = |message: String| TokensError {
            path: path.display().to_string(),
            message,
        };
        let text = corral_files::read_text(path, corral_files::Kind::Tokens)
            .map_err(|err| fail(err.reason()))?
            .ok_or_else(|| fail("there is no such file; check the path".into()))?;
        let raw: RawFile = toml::from_str(&text).map_err(|err| fail(err.to_string()))?;
        if raw.version != 1 {
            return Err(fail(format!(
                "version {} is not supported; this corral reads version 1",
                raw.version
            )));
        }
        if raw.token.len() > MAX_TOKENS {
            return Err(fail(format!(
                "{} tokens, more than {MAX_TOKENS}; split the callers across replicas",
                raw.token.len()
            )));
        }
        let mut by_digest = HashMap::new();
        for (n, entry) in raw.token.into_iter().enumerate() {
            let at = |message: &str| fail(format!("token {}: {message}", n + 1));
            if !valid_tenant(&entry.tenant) {
                return Err(at(
                    "`tenant` must be 1 to 64 characters of letters, digits, `_`, `.`, `@` and `-`",
                ));
            }
            let digest: [u8; 32] = match (entry.token, entry.sha256) {
                (Some(token), None) if !token.is_empty() => Sha256::digest(token.as_bytes()).into(),
                (None, Some(hex_digest)) => hex::decode(hex_digest.trim())
                    .ok()
                    .and_then(|d| <[u8; 32]>::try_from(d).ok())
                    .ok_or_else(|| at("`sha256` must be 64 hex digits (sha256sum of the token)"))?,
                _ => return Err(at("give exactly one of `token` and `sha256`")),
            };
            let tenant = corral::Tenant::authenticated(entry.tenant);
            if by_digest.insert(digest, tenant).is_some() {
                return Err(at("this token is listed already; a token has one tenant"));
            }
        }
        Ok(Self { by_digest })
    }

    /// The tenant of the bearer `token`, if it is listed.
    pub fn tenant(&self, token: &str) -> Option<&corral::Tenant> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        self.by_digest.get(&digest)
    }

    /// How many tokens are listed.
    pub fn len(&self) -> usize {
        self.by_digest.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> Result<TokenTenants, TokensError> {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("tokens.toml");
        std::fs::write(&path, text).expect("write");
        TokenTenants::from_file(&path)
    }

    #[test]
    fn tokens_map_to_tenants_and_each_mistake_names_its_entry() {
        let digest = hex::encode(Sha256::digest(b"t-acme"));
        let tokens = file(&format!(
            "version = 1\n[[token]]\ntenant = \"acme\"\nsha256 = \"{digest}\"\n\
             [[token]]\ntenant = \"globex\"\ntoken = \"t-globex\"\n"
        ))
        .expect("valid");
        assert_eq!(tokens.len(), 2);
        assert_eq!(
            tokens.tenant("t-acme").map(corral::Tenant::id),
            Some("acme")
        );
        assert_eq!(
            tokens.tenant("t-globex").map(corral::Tenant::id),
            Some("globex")
        );
        assert!(tokens.tenant("t-other").is_none());

        for (text, wanted) in [
            ("version = 2\n", "version 2 is not supported"),
            (
                "version = 1\n[[token]]\ntenant = \"a\"\n",
                "token 1: give exactly one of",
            ),
            (
                "version = 1\n[[token]]\ntenant = \"a b\"\ntoken = \"x\"\n",
                "token 1: `tenant` must be",
            ),
            (
                "version = 1\n[[token]]\ntenant = \"a\"\nsha256 = \"abc\"\n",
                "64 hex digits",
            ),
            (
                "version = 1\n[[token]]\ntenant = \"a\"\ntoken = \"x\"\n[[token]]\ntenant = \"b\"\ntoken = \"x\"\n",
                "token 2: this token is listed already",
            ),
            ("version = 1\nusers = 3\n", "unknown field `users`"),
        ] {
            let err = file(text).expect_err(text).to_string();
            assert!(err.contains("tokens.toml"), "{err}");
            assert!(err.contains(wanted), "{text}: {err}");
        }
    }
}
