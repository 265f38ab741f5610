//! What one run attempted at the sandbox boundary, and what it used: the
//! raw material of least privilege from evidence (the library's
//! `evidence` module aggregates it per tool) and of tenant quotas (which
//! charge its fuel, time and bytes).
//!
//! Recorded where the boundary is crossed: outbound HTTP in the `wasi:http`
//! gate (`sandbox/http`), by origin and method, allowed or not, with the
//! bytes that crossed it. Bounded per run: at most [`MAX_DISTINCT`]
//! distinct attempts are kept, with a count each; more are counted in
//! [`Attempts::dropped`].
//!
//! What cannot be recorded here, by the shape of WASI: an environment
//! variable the guest reads (`getenv` reads a list handed over at start),
//! and a file path outside every preopen (wasi-libc resolves paths against
//! the preopens inside the guest, so such an open never reaches the host).

use std::time::Duration;

/// Distinct attempts kept per run (HTTP origin × method × verdict): 64.
pub const MAX_DISTINCT: usize = 64;

/// Longest origin kept, in bytes (a longer one is cut): 300.
pub const MAX_ORIGIN_BYTES: usize = 300;

/// Why the boundary refused an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Denial {
    /// No grant covers it (the HTTP allow-list): a grant would allow it.
    NotGranted,
    /// The destination resolved to an internal address
    /// (`allow_private_networks` would allow it).
    PrivateAddress,
    /// The URL carried a secret the host injects: never allowed.
    SecretInUrl,
}

impl Denial {
    /// The word used in evidence files and reports: `not-granted`,
    /// `private-address`, `secret-in-url`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotGranted => "not-granted",
            Self::PrivateAddress => "private-address",
            Self::SecretInUrl => "secret-in-url",
        }
    }
}

/// One kind of outbound HTTP request a run made, and how often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAttempt {
    /// `scheme://host:port`, as the guest asked (IPv6 hosts in brackets),
    /// lower case, cut at [`MAX_ORIGIN_BYTES`]. Guest-supplied: escape it
    /// before it reaches a terminal.
    pub origin: String,
    /// The request method (`GET`, `POST`, ...).
    pub method: String,
    /// `None` when the gate let it through; else why not.
    pub denied: Option<Denial>,
    /// How many such requests the run made.
    pub count: u32,
}

/// What one run attempted and used ([`RunReport::attempts`](crate::RunReport)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attempts {
    /// Outbound HTTP, one entry per origin, method and verdict.
    pub http: Vec<HttpAttempt>,
    /// Attempts past [`MAX_DISTINCT`], counted only.
    pub dropped: u32,
    /// Bytes of outbound HTTP, both ways: request and response bodies as
    /// they crossed the gate, plus each request's method, URL and header
    /// names and values, and each response's header names and values.
    pub egress_bytes: u64,
}

impl Attempts {
    /// Counts one HTTP request to `uri` with `method`.
    pub(crate) fn http(&mut self, uri: &http::Uri, method: &http::Method, denied: Option<Denial>) {
        let origin = origin(uri);
        let method = method.as_str();
        if let Some(seen) = self
            .http
            .iter_mut()
            .find(|a| a.origin == origin && a.method == method && a.denied == denied)
        {
            seen.count = seen.count.saturating_add(1);
        } else if self.http.len() < MAX_DISTINCT {
            self.http.push(HttpAttempt {
                origin,
                method: method.to_owned(),
                denied,
                count: 1,
            });
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }
}

/// `scheme://host:port` of `uri`, lower case, the port always written.
pub fn origin(uri: &http::Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("").to_ascii_lowercase();
    let host = uri.host().unwrap_or("").to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or(match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => 0,
    });
    let mut origin = format!("{scheme}://{host}:{port}");
    if origin.len() > MAX_ORIGIN_BYTES {
        let mut cut = MAX_ORIGIN_BYTES;
        while !origin.is_char_boundary(cut) {
            cut -= 1;
        }
        origin.truncate(cut);
    }
    origin
}

/// What a run used, for quotas and limits learned from evidence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Fuel units consumed.
    pub fuel: u64,
    /// The largest linear memory the guest grew to, in bytes (the memory
    /// limit applies per memory).
    pub memory_peak: u64,
    /// Wall-clock time of the run, from the store's creation to its end,
    /// without the time reviewers took (the same clock as the deadline).
    pub wall: Duration,
    /// [`Attempts::egress_bytes`].
    pub egress_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_are_counted_once_per_kind_and_bounded() {
        let mut a = Attempts::default();
        let get = http::Method::GET;
        a.http(&"https://API.example.com/x".parse().unwrap(), &get, None);
        a.http(
            &"https://api.example.com:443/y".parse().unwrap(),
            &get,
            None,
        );
        a.http(
            &"http://[::1]:8080/".parse().unwrap(),
            &http::Method::POST,
            Some(Denial::NotGranted),
        );
        assert_eq!(a.http.len(), 2);
        assert_eq!(a.http[0].origin, "https://api.example.com:443");
        assert_eq!(a.http[0].count, 2);
        assert_eq!(a.http[1].origin, "http://[::1]:8080");
        for i in 0..100 {
            let uri: http::Uri = format!("http://h{i}.example/").parse().unwrap();
            a.http(&uri, &get, None);
        }
        assert_eq!(a.http.len(), MAX_DISTINCT);
        assert_eq!(a.dropped, 100 - (MAX_DISTINCT as u32 - 2));
    }
}
