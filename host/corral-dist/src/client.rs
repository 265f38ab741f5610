//! The registry client of one reference: `oci-client` over rustls (ring),
//! plain HTTP only for a loopback registry, credentials from the docker
//! `config.json`.

use std::time::Duration;

use oci_client::Client;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;

use crate::DistError;
use crate::reference::OciReference;

/// How long connecting to a registry may take: 10 s.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a registry may stay silent mid-transfer: 30 s.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A client for `reference`'s registry, and its credentials.
pub(crate) fn for_reference(reference: &OciReference) -> (Client, RegistryAuth) {
    // reqwest is built without a provider of its own; use the ring one the
    // host already has (a second install is refused, harmlessly).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let protocol = if reference.is_loopback() {
        ClientProtocol::HttpsExcept(vec![reference.registry().to_string()])
    } else {
        ClientProtocol::Https
    };
    let config = ClientConfig {
        protocol,
        connect_timeout: Some(CONNECT_TIMEOUT),
        read_timeout: Some(READ_TIMEOUT),
        ..ClientConfig::default()
    };
    (Client::new(config), auth(reference.registry()))
}

/// The credentials the docker `config.json` holds for `registry`
/// (credential helpers included); anonymous when it holds none.
fn auth(registry: &str) -> RegistryAuth {
    use docker_credential::{CredentialRetrievalError as E, DockerCredential};
    match docker_credential::get_credential(registry) {
        Ok(DockerCredential::UsernamePassword(user, password)) => {
            RegistryAuth::Basic(user, password)
        }
        Ok(DockerCredential::IdentityToken(token)) => RegistryAuth::Bearer(token),
        Err(E::ConfigNotFound | E::NoCredentialConfigured | E::ConfigReadError) => {
            RegistryAuth::Anonymous
        }
        Err(E::HelperFailure { helper, .. }) => {
            // Its output is not logged: it may hold a credential.
            tracing::warn!(
                registry,
                "docker credential helper `{}` failed; going anonymous",
                corral::untrusted_text::escape_line(&helper)
            );
            RegistryAuth::Anonymous
        }
        Err(err) => {
            tracing::warn!(
                registry,
                "cannot read docker credentials ({err}); going anonymous"
            );
            RegistryAuth::Anonymous
        }
    }
}

/// A registry failure as a [`DistError`], its text escaped and cut (a
/// registry is not trusted either).
pub(crate) fn registry_error(
    reference: &OciReference,
    err: &oci_client::errors::OciDistributionError,
) -> DistError {
    use oci_client::errors::OciDistributionError as E;
    let said = corral::untrusted_text::escape_line(&corral::untrusted_text::truncate(
        err.to_string(),
        512,
    ))
    .into_owned();
    let unknown = |envelope: &oci_client::errors::OciEnvelope| {
        use oci_client::errors::OciErrorCode as C;
        envelope
            .errors
            .iter()
            .any(|e| matches!(e.code, C::ManifestUnknown | C::NameUnknown))
    };
    let message = match err {
        E::RegistryError { envelope, .. } if unknown(envelope) => {
            format!("the registry has no such tag or digest; check the reference ({said})")
        }
        E::RequestError(_) => format!("cannot reach the registry, or it broke off ({said})"),
        E::ImageManifestNotFoundError(_) => {
            format!("the registry has no such tag or digest; check the reference ({said})")
        }
        E::UnauthorizedError { .. }
        | E::AuthenticationFailure(_)
        | E::ServerError { code: 401, .. } => format!(
            "the registry wants credentials it was not given; log in to it so that the \
             docker config.json holds them ({said})"
        ),
        E::DigestError(_) => format!(
            "what the registry sent does not match its digest; nothing was written ({said})"
        ),
        _ => said,
    };
    DistError::Registry {
        reference: reference.to_string(),
        message,
    }
}
