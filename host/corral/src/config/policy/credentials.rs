//! The policy's `[[http.credentials]]`: a header the host sets on outbound
//! requests to one destination, built from secrets in the secret store
//! ([`crate::SecretStore`]), after the guest built the request, so that no
//! guest ever holds the secret.
//!
//! ```toml
//! [[http.credentials]]
//! host = "https://api.example.com"     # a destination as in [http] allow (a bare name means https)
//! header = "Authorization"
//! value = "Bearer {secret:EXAMPLE_KEY}"
//! ```

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Serialize;
use toml::Spanned;

use super::{Policy, PolicyError};
use corral_sandbox::HostPattern;

/// One `[[http.credentials]]` entry, validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Credential {
    /// The destinations it is sent to (scheme, host, port).
    pub host: HostPattern,
    /// The header's name, lowercase.
    pub header: String,
    /// Its value: text and secrets by name.
    pub value: Vec<ValuePart>,
}

/// A piece of a credential's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ValuePart {
    /// Literal text.
    Text(String),
    /// The secret of this name, from the store.
    Secret(String),
}

impl Credential {
    /// The names of the secrets its value uses.
    pub fn secrets(&self) -> impl Iterator<Item = &str> {
        self.value.iter().filter_map(|p| match p {
            ValuePart::Secret(name) => Some(name.as_str()),
            ValuePart::Text(_) => None,
        })
    }

    /// Its value with the secrets of `store` filled in.
    ///
    /// # Errors
    /// A message naming a secret the store does not have (and the command
    /// that adds it), or one whose value cannot be in a header (a control
    /// character).
    pub fn render(&self, store: &BTreeMap<String, String>) -> Result<String, String> {
        let mut value = String::new();
        for part in &self.value {
            match part {
                ValuePart::Text(text) => value.push_str(text),
                ValuePart::Secret(name) => {
                    let secret = store.get(name).ok_or_else(|| {
                        format!(
                            "the header `{}` for {} uses the secret `{name}`, which the secret \
                             store does not have; add it (`corral secret set {name}`)",
                            self.header, self.host
                        )
                    })?;
                    if secret.chars().any(char::is_control) {
                        return Err(format!(
                            "the secret `{name}` holds a control character (a line break?), \
                             which no header may carry; set it again without one"
                        ));
                    }
                    value.push_str(secret);
                }
            }
        }
        Ok(value)
    }
}

/// `{secret:NAME}` placeholders and the text between them.
fn parse_value(raw: &str) -> Result<Vec<ValuePart>, String> {
    const OPEN: &str = "{secret:";
    let mut parts = Vec::new();
    let mut rest = raw;
    while let Some(start) = rest.find(OPEN) {
        if start > 0 {
            parts.push(ValuePart::Text(rest[..start].to_string()));
        }
        let after = &rest[start + OPEN.len()..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`{OPEN}` has no closing `}}` in `{raw}`"))?;
        let name = &after[..end];
        corral_names::ident::SECRET.check(name)?;
        parts.push(ValuePart::Secret(name.to_string()));
        rest = &after[end + 1..];
    }
    if !rest.is_empty() {
        parts.push(ValuePart::Text(rest.to_string()));
    }
    if !parts.iter().any(|p| matches!(p, ValuePart::Secret(_))) {
        return Err(format!(
            "`{raw}` uses no secret; a credential's value names one as `{{secret:NAME}}` \
             (a constant header belongs in the plugin)"
        ));
    }
    for part in &parts {
        if let ValuePart::Text(text) = part
            && http::HeaderValue::from_str(text).is_err()
        {
            return Err(format!("`{raw}` has characters no header value may carry"));
        }
    }
    Ok(parts)
}

/// Validates `[[http.credentials]]` into `policy`.
///
/// # Errors
/// The [`PolicyError`] `at` builds for the first bad entry: a destination
/// that does not parse, a header name that is not a token (or is `host`),
/// a value with a bad placeholder, no secret or a control character.
pub(super) fn apply(
    raw: Vec<super::raw::RawCredential>,
    policy: &mut Policy,
    at: &dyn Fn(Range<usize>, String) -> PolicyError,
) -> Result<(), PolicyError> {
    for entry in raw {
        let host_text = entry.host.get_ref();
        let full = if host_text.contains("://") {
            host_text.clone()
        } else {
            format!("https://{host_text}")
        };
        let host = HostPattern::parse(&full).map_err(|m| at(entry.host.span(), m))?;
        let header = header_name(&entry.header).map_err(|m| at(entry.header.span(), m))?;
        let value = parse_value(entry.value.get_ref()).map_err(|m| at(entry.value.span(), m))?;
        policy.http_credentials.push(Credential {
            host,
            header,
            value,
        });
    }
    Ok(())
}

fn header_name(raw: &Spanned<String>) -> Result<String, String> {
    let name = http::HeaderName::from_bytes(raw.get_ref().as_bytes())
        .map_err(|_| format!("`{}` is not an HTTP header name", raw.get_ref()))?;
    if name == http::header::HOST {
        return Err("the `host` header is the request's own; name another header".into());
    }
    Ok(name.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_name_secrets_and_render_from_the_store() {
        let parts = parse_value("Bearer {secret:KEY}; tenant={secret:T}").expect("parses");
        assert_eq!(
            parts,
            [
                ValuePart::Text("Bearer ".into()),
                ValuePart::Secret("KEY".into()),
                ValuePart::Text("; tenant=".into()),
                ValuePart::Secret("T".into()),
            ]
        );
        let credential = Credential {
            host: HostPattern::parse("https://api.example.com").expect("pattern"),
            header: "authorization".into(),
            value: parts,
        };
        let mut store = BTreeMap::new();
        store.insert("KEY".to_string(), "k1".to_string());
        let err = credential.render(&store).unwrap_err();
        assert!(
            err.contains("`T`") && err.contains("corral secret set T"),
            "{err}"
        );
        store.insert("T".to_string(), "acme".to_string());
        assert_eq!(
            credential.render(&store).expect("renders"),
            "Bearer k1; tenant=acme"
        );
        store.insert("T".to_string(), "acme\r\nX-Evil: 1".to_string());
        assert!(
            credential
                .render(&store)
                .unwrap_err()
                .contains("control character")
        );

        for (bad, why) in [
            ("Bearer {secret:KEY", "no closing"),
            ("Bearer {secret:bad name}", "not a secret name"),
            ("Bearer constant", "uses no secret"),
            ("line\nbreak {secret:KEY}", "no header value may carry"),
        ] {
            let err = parse_value(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
