//! What one run attempted at the sandbox boundary, and what it used: the
//! raw material of least privilege from evidence (the library's
//! `evidence` module aggregates it per tool) and of tenant quotas (which
//! charge its fuel, time and bytes).
//!
//! Recorded where the boundary is crossed: outbound HTTP in the `wasi:http`
//! gate (`sandbox/http`), by origin and method, allowed or not, with the
//! bytes that crossed it; filesystem operations in the `wasi:filesystem`
//! wrapper (`sandbox/files_seen`), by guest path and operation, allowed or
//! not, with the host path they map to. Bounded per run: at most
//! [`MAX_DISTINCT`] distinct attempts of each kind are kept, with a count
//! each; more are counted in [`Attempts::dropped`].
//!
//! What cannot be recorded here, by the shape of WASI: an environment
//! variable the guest reads (`getenv` reads a list handed over at start),
//! and, outside a learning run, a file path outside every preopen
//! (wasi-libc resolves paths against the preopens inside the guest, so such
//! an open never reaches the host). A learning run preopens an empty
//! directory read-only at `/` ([`Grants::learning_root`](crate::Grants)),
//! so that such opens reach the host, fail there (not found, or not
//! permitted) and are recorded.

use std::time::Duration;

/// Distinct attempts kept per run and per kind: 64 HTTP attempts (origin ×
/// method × verdict) and 64 file attempts (guest path × operation ×
/// error).
pub const MAX_DISTINCT: usize = 64;

/// Longest path kept in a [`FileAttempt`], in bytes (a longer one is cut,
/// at a character boundary): 1 024. Applies to the guest path and to the
/// host path alike.
pub const MAX_PATH_BYTES: usize = 1024;

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

/// What a guest did to a path through `wasi:filesystem`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileOp {
    /// Opened it without asking to write (a file or a directory), or read
    /// its metadata or a symbolic link (`stat-at`, `metadata-hash-at`,
    /// `readlink-at`).
    Read,
    /// Opened an existing file asking to write or truncate it, or set its
    /// times (`set-times-at`).
    Write,
    /// Created it: an open that may create (`create` flag), a directory, a
    /// link, a symbolic link, or the destination of a rename.
    Create,
    /// Removed it: a file, an empty directory, or the source of a rename.
    Remove,
    /// Listed a directory's entries (`read-directory`).
    List,
}

impl FileOp {
    /// The word used in evidence files and reports: `read`, `write`,
    /// `create`, `remove`, `list`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Create => "create",
            Self::Remove => "remove",
            Self::List => "list",
        }
    }
}

/// One kind of filesystem operation a run made on one path, and how often.
///
/// Paths are lexical: a symbolic link on the host is not followed to name
/// the file it points to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileAttempt {
    /// The path as the guest sees it: absolute, normalised (no `.` or `..`
    /// segments, no empty ones; `..` never climbs above `/`), cut at
    /// [`MAX_PATH_BYTES`]. Guest-supplied: escape it before it reaches a
    /// terminal.
    pub guest_path: String,
    /// What was done.
    pub op: FileOp,
    /// The host path it maps to: the host directory of the preopen the
    /// operation went through, joined with the rest of the guest path, cut
    /// at [`MAX_PATH_BYTES`]. `None` when it went through no preopen of a
    /// grant (the learning root), or when its path climbs out of the
    /// preopen it went through (which the sandbox refuses).
    pub host_path: Option<String>,
    /// `None` when WASI answered Ok; else the WASI `error-code` name, in
    /// kebab case (`no-entry`, `not-permitted`, `access`, `exist`, ...).
    /// A write under a read-only grant answers `not-permitted`.
    pub error: Option<String>,
    /// How many such operations the run made.
    pub count: u32,
}

/// What one run attempted and used ([`RunReport::attempts`](crate::RunReport)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attempts {
    /// Outbound HTTP, one entry per origin, method and verdict.
    pub http: Vec<HttpAttempt>,
    /// Filesystem operations, one entry per guest path, operation and
    /// error (the first host path seen for them is kept).
    pub files: Vec<FileAttempt>,
    /// Attempts past [`MAX_DISTINCT`] (of either kind), counted only; and
    /// filesystem operations whose path the sandbox could not tell (through
    /// a descriptor past its bound of known descriptors).
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

    /// Counts one filesystem operation on `guest_path` (absolute and
    /// normalised), cutting both paths at [`MAX_PATH_BYTES`].
    pub(crate) fn file(
        &mut self,
        guest_path: &str,
        op: FileOp,
        host_path: Option<String>,
        error: Option<&str>,
    ) {
        let guest_path = cut(guest_path, MAX_PATH_BYTES);
        if let Some(seen) = self
            .files
            .iter_mut()
            .find(|a| a.guest_path == guest_path && a.op == op && a.error.as_deref() == error)
        {
            seen.count = seen.count.saturating_add(1);
        } else if self.files.len() < MAX_DISTINCT {
            self.files.push(FileAttempt {
                guest_path: guest_path.to_owned(),
                op,
                host_path: host_path.map(|mut path| {
                    let keep = cut(&path, MAX_PATH_BYTES).len();
                    path.truncate(keep);
                    path
                }),
                error: error.map(str::to_owned),
                count: 1,
            });
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends at a
/// character boundary.
pub(crate) fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
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
    let keep = cut(&origin, MAX_ORIGIN_BYTES).len();
    origin.truncate(keep);
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

    #[test]
    fn file_attempts_are_counted_once_per_kind_and_bounded() {
        let mut a = Attempts::default();
        let host = Some("/srv/notes/a".to_owned());
        a.file("/notes/a", FileOp::Read, host.clone(), None);
        a.file("/notes/a", FileOp::Read, host.clone(), None);
        a.file(
            "/notes/a",
            FileOp::Create,
            host.clone(),
            Some("not-permitted"),
        );
        a.file("/etc/passwd", FileOp::Read, None, Some("no-entry"));
        assert_eq!(a.files.len(), 3);
        assert_eq!(a.files[0].count, 2);
        assert_eq!(a.files[0].host_path.as_deref(), Some("/srv/notes/a"));
        assert_eq!(a.files[1].op.as_str(), "create");
        assert_eq!(a.files[1].error.as_deref(), Some("not-permitted"));
        assert_eq!(a.files[2].host_path, None);

        // Paths are cut at a character boundary.
        let long = format!("/{}", "é".repeat(MAX_PATH_BYTES));
        a.file(&long, FileOp::List, Some(long.clone()), None);
        let kept = &a.files[3];
        assert!(kept.guest_path.len() <= MAX_PATH_BYTES);
        assert!(kept.guest_path.len() > MAX_PATH_BYTES - 2);
        assert!(kept.host_path.as_ref().unwrap().len() <= MAX_PATH_BYTES);
        a.file(&long, FileOp::List, None, None);
        assert_eq!(a.files[3].count, 2);

        for i in 0..100 {
            a.file(&format!("/notes/{i}"), FileOp::Write, None, None);
        }
        assert_eq!(a.files.len(), MAX_DISTINCT);
        assert_eq!(a.dropped, 100 - (MAX_DISTINCT as u32 - 4));
        // HTTP attempts have their own bound.
        a.http(
            &"https://x.example/".parse().unwrap(),
            &http::Method::GET,
            None,
        );
        assert_eq!(a.http.len(), 1);
    }
}
