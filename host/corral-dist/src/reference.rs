//! `oci://REGISTRY/REPOSITORY[:TAG|@sha256:…]`: parsing, the plugin name a
//! reference gives, and which registries may be spoken to over plain HTTP
//! (loopback ones only).

use std::net::IpAddr;

use crate::DistError;

/// A parsed `oci://` reference.
#[derive(Debug, Clone)]
pub struct OciReference {
    /// The text as given, `oci://` included.
    pub text: String,
    /// The parsed reference.
    pub(crate) inner: oci_client::Reference,
}

impl OciReference {
    /// Parses `text`.
    ///
    /// # Errors
    /// [`DistError::Reference`] without the `oci://` scheme, or when the
    /// rest is not `REGISTRY/REPOSITORY[:TAG|@DIGEST]`.
    pub fn parse(text: &str) -> Result<Self, DistError> {
        let error = |message: String| DistError::Reference {
            reference: corral::untrusted_text::escape_line(text).into_owned(),
            message,
        };
        let rest = text.strip_prefix("oci://").ok_or_else(|| {
            error("write it as oci://REGISTRY/REPOSITORY:TAG (or @sha256:…)".into())
        })?;
        let registry = rest.split_once('/').map(|(registry, _)| registry);
        if !registry.is_some_and(|r| r.contains(['.', ':']) || r == "localhost") {
            return Err(error(
                "name the registry first (oci://registry.example/tools/fetch:1.0)".into(),
            ));
        }
        let inner: oci_client::Reference = rest.parse().map_err(|e| error(format!("{e}")))?;
        Ok(Self {
            text: text.to_string(),
            inner,
        })
    }

    /// The registry, `host[:port]`.
    pub fn registry(&self) -> &str {
        self.inner.resolve_registry()
    }

    /// The plugin name this reference gives: the repository's last segment.
    pub fn default_name(&self) -> &str {
        self.inner
            .repository()
            .rsplit('/')
            .next()
            .unwrap_or_default()
    }

    /// Whether the registry is on a loopback address (or `localhost`), the
    /// only ones spoken to over plain HTTP.
    pub fn is_loopback(&self) -> bool {
        let registry = self.registry();
        let host = match registry.rsplit_once(':') {
            Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
            _ => registry,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// Whether `other` names the same registry and repository.
    pub fn same_repository(&self, other: &Self) -> bool {
        self.inner.resolve_registry() == other.inner.resolve_registry()
            && self.inner.repository() == other.inner.repository()
    }

    /// The same repository at `digest`.
    pub(crate) fn at_digest(&self, digest: &str) -> oci_client::Reference {
        oci_client::Reference::with_digest(
            self.inner.registry().to_string(),
            self.inner.repository().to_string(),
            digest.to_string(),
        )
    }
}

impl std::fmt::Display for OciReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&corral::untrusted_text::escape_line(&self.text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_with_their_registry_name_and_reach() {
        let r = OciReference::parse("oci://127.0.0.1:5000/tools/fetch:1.0").expect("parse");
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.default_name(), "fetch");
        assert!(r.is_loopback());
        let r = OciReference::parse("oci://ghcr.io/acme/echo@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef").expect("digest");
        assert!(!r.is_loopback());
        assert_eq!(r.default_name(), "echo");
        assert!(
            OciReference::parse("oci://localhost:5000/x:1")
                .expect("l")
                .is_loopback()
        );
        for bad in [
            "ghcr.io/acme/echo:1",
            "oci://echo:1",
            "oci://ghcr.io/Bad Name:1",
        ] {
            assert!(OciReference::parse(bad).is_err(), "{bad}");
        }
    }
}
