//! Validated values of a policy file: HTTP host patterns, guest paths and
//! environment variable names. Each `parse` returns a message that says what is
//! wrong and how to write it instead.

use std::fmt;

/// An allowed outbound HTTP destination: scheme, host (optionally `*.` for any
/// subdomain) and port (a number, `*` for any, or the scheme's default when
/// omitted).
///
/// Written as `https://api.example.com`, `http://127.0.0.1:8080`,
/// `https://*.example.org` or `http://localhost:*`. No path, query, user info
/// or bare IP ranges.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(into = "String")]
pub struct HostPattern {
    /// `http` or `https`.
    pub scheme: String,
    /// Lowercase host name or IP literal; for a wildcard, the suffix after `*.`.
    pub host: String,
    /// Whether the pattern is `*.<host>`: any subdomain, not `<host>` itself.
    pub any_subdomain: bool,
    /// The port, or `None` for any port.
    pub port: Option<u16>,
}

impl From<HostPattern> for String {
    fn from(p: HostPattern) -> Self {
        p.to_string()
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let star = if self.any_subdomain { "*." } else { "" };
        match self.port {
            Some(port) => write!(f, "{}://{star}{}:{port}", self.scheme, self.host),
            None => write!(f, "{}://{star}{}:*", self.scheme, self.host),
        }
    }
}

impl HostPattern {
    /// The entry's host as an IP address, when it is an IP literal.
    pub fn ip(&self) -> Option<std::net::IpAddr> {
        self.host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()
    }

    /// Parses one allow-list entry.
    ///
    /// # Errors
    /// A message naming the problem and the accepted forms.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let forms = "write it as SCHEME://HOST[:PORT], e.g. `https://api.example.com`, \
                     `http://127.0.0.1:8080` or `https://*.example.org`";
        let (scheme, rest) = raw
            .split_once("://")
            .ok_or_else(|| format!("`{raw}` has no scheme; {forms}"))?;
        let scheme = scheme.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            other => {
                return Err(format!(
                    "scheme `{other}` is not allowed; only http and https ({forms})"
                ));
            }
        };
        if rest.contains(['/', '?', '#', '@']) {
            return Err(format!(
                "`{raw}` has a path, query or user info; the allow-list names hosts only ({forms})"
            ));
        }
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (addr, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("`{raw}` has an unclosed IPv6 bracket"))?;
            (format!("[{addr}]"), after.strip_prefix(':'))
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (rest.to_string(), None),
            }
        };
        let port = match port {
            None => Some(default_port),
            Some("*") => None,
            Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| {
                format!("port `{p}` in `{raw}` is not a number from 1 to 65535 or `*`")
            })?),
        };
        let host = host.to_ascii_lowercase();
        let (any_subdomain, host) = match host.strip_prefix("*.") {
            Some(suffix) => (true, suffix.to_string()),
            None => (false, host),
        };
        let valid_label = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        let is_ip = host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok();
        if host.contains('*') {
            return Err(format!(
                "`{raw}`: a wildcard may only be a leading `*.` (as in `https://*.example.org`)"
            ));
        }
        if !is_ip && !host.split('.').all(valid_label) {
            return Err(format!("`{host}` in `{raw}` is not a valid host name"));
        }
        if any_subdomain && (is_ip || !host.contains('.')) {
            return Err(format!(
                "`{raw}`: `*.` needs a domain with at least two labels, like `*.example.org`"
            ));
        }
        Ok(Self {
            scheme,
            host,
            any_subdomain,
            port,
        })
    }

    /// Whether a request to `scheme://host:port` matches. `host` is compared
    /// case-insensitively; `*.example.org` matches `a.example.org` and
    /// `a.b.example.org` but not `example.org`.
    pub fn matches(&self, scheme: &str, host: &str, port: u16) -> bool {
        let host = host.to_ascii_lowercase();
        let host_ok = if self.any_subdomain {
            host.strip_suffix(&self.host)
                .is_some_and(|prefix| prefix.len() > 1 && prefix.ends_with('.'))
        } else {
            host == self.host
        };
        scheme.eq_ignore_ascii_case(&self.scheme) && host_ok && self.port.is_none_or(|p| p == port)
    }
}

/// An absolute guest path for a preopened directory, like `/notes` or
/// `/data/in`: starts with `/`, no `.` or `..` segments, no empty segments.
///
/// # Errors
/// A message saying how to write the path.
pub fn guest_path(raw: &str) -> Result<String, String> {
    if !raw.starts_with('/') {
        return Err(format!(
            "guest path `{raw}` must be absolute; write `/{}`",
            raw.trim_start_matches("./")
        ));
    }
    let trimmed = raw.trim_end_matches('/');
    // `/`, and `//` and the like, which used to panic when sliced below.
    if trimmed.is_empty() {
        return Err(format!(
            "guest path `{raw}` is the root, which is not allowed; mount the directory at a \
             name like `/data`"
        ));
    }
    if trimmed[1..]
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(format!(
            "guest path `{raw}` has an empty, `.` or `..` segment; write a plain path like `/data`"
        ));
    }
    Ok(trimmed.to_string())
}

/// An environment variable name ([`corral_names::ident::ENV_VAR`]:
/// `[A-Za-z_][A-Za-z0-9_]*`, at most 256 characters).
///
/// # Errors
/// A message naming the bad name, what is wrong and the rule.
pub fn env_name(raw: &str) -> Result<String, String> {
    corral_names::ident::ENV_VAR.check(raw)?;
    Ok(raw.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_path_of_slashes_is_the_root_and_refused() {
        // Found by `proptests`: `//` sliced an empty string and panicked.
        for raw in ["/", "//", "///"] {
            let err = guest_path(raw).unwrap_err();
            assert!(err.contains("is the root"), "{raw}: {err}");
        }
        assert_eq!(guest_path("/data//").unwrap(), "/data");
    }

    #[test]
    fn host_patterns() {
        let p = HostPattern::parse("https://API.example.com").unwrap();
        assert!(p.matches("https", "api.example.com", 443));
        assert!(
            !p.matches("https", "api.example.com", 8443),
            "default port only"
        );
        assert!(!p.matches("http", "api.example.com", 443));
        assert!(!p.matches("https", "evil.api.example.com", 443));

        let p = HostPattern::parse("https://*.example.org:*").unwrap();
        assert!(p.matches("https", "a.example.org", 1234));
        assert!(p.matches("https", "a.b.example.org", 443));
        assert!(!p.matches("https", "example.org", 443));
        assert!(!p.matches("https", "badexample.org", 443));

        let p = HostPattern::parse("http://127.0.0.1:8080").unwrap();
        assert!(p.matches("http", "127.0.0.1", 8080));
        assert!(!p.matches("http", "127.0.0.1", 8081));
        assert_eq!(p.to_string(), "http://127.0.0.1:8080");

        for (bad, says) in [
            ("api.example.com", "has no scheme"),
            ("ftp://x.org", "scheme `ftp` is not allowed"),
            ("https://x.org/path", "path, query or user info"),
            ("https://x.org:0", "not a number from 1 to 65535"),
            ("https://a*.org", "leading `*.`"),
            ("https://*.org", "at least two labels"),
            ("https://exa mple.org", "not a valid host name"),
        ] {
            let err = HostPattern::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn guest_paths_and_env_names() {
        assert_eq!(guest_path("/notes/").unwrap(), "/notes");
        assert!(guest_path("notes").unwrap_err().contains("write `/notes`"));
        assert!(guest_path("/a/../b").unwrap_err().contains("`..`"));
        assert!(guest_path("/").is_err());
        assert!(env_name("TZ").is_ok());
        assert!(env_name("1X").is_err());
        assert!(env_name("A-B").is_err());
    }
}
