//! A policy's grants in the form the sandbox applies ([`Grants`]): its
//! directories and environment as they are, pass-through variables read from
//! the host now, and its `[[http.credentials]]` with their secrets filled in
//! (and the leak scan of those secrets).

use std::collections::BTreeMap;

use corral_sandbox::{Grants, Injected, Redactor};

use super::Policy;

/// The grants of `policy`, with the secrets of `secrets` filled into its
/// `[[http.credentials]]`. Pass-through variables are read from the
/// host's environment now; unset ones are skipped with a WARN.
///
/// # Errors
/// A message naming a credential's secret the store lacks, or one that
/// cannot be in a header.
pub(crate) fn grants(
    policy: &Policy,
    plugin: &str,
    secrets: &BTreeMap<String, String>,
) -> Result<Grants, String> {
    let mut injected = Vec::new();
    let mut used = BTreeMap::new();
    for credential in &policy.http_credentials {
        let value = credential.render(secrets)?;
        let mut value = http::HeaderValue::from_str(&value).map_err(|_| {
            format!(
                "the header `{}` for {} is not a valid header value once its secrets are \
                 filled in; check them",
                credential.header, credential.host
            )
        })?;
        value.set_sensitive(true);
        injected.push(Injected {
            host: credential.host.clone(),
            name: http::HeaderName::from_bytes(credential.header.as_bytes())
                .map_err(|e| e.to_string())?,
            value,
        });
        for name in credential.secrets() {
            if let Some(secret) = secrets.get(name) {
                if secret.len() < 8 {
                    tracing::warn!(
                        plugin,
                        secret = name,
                        "the secret is shorter than 8 bytes: the leak scan cannot look for \
                         it as it is (only its longer forms)"
                    );
                }
                used.insert(name.to_string(), secret.clone());
            }
        }
    }
    let env = policy
        .environment
        .iter()
        .filter_map(|grant| match grant.value() {
            Some(value) => Some((grant.name().to_string(), value)),
            None => {
                tracing::warn!(
                    plugin,
                    variable = grant.name(),
                    "policy passes through an environment variable the host does not have"
                );
                None
            }
        })
        .collect();
    Ok(Grants {
        dirs: policy.filesystem.clone(),
        env,
        http_allow: policy.http_allow.clone().into(),
        http_private: policy.http_private,
        http_credentials: injected.into(),
        redactor: Redactor::new(&used.into_iter().collect::<Vec<_>>()),
        client: policy.client,
        learning_root: None,
        learning_root_writable: false,
    })
}
