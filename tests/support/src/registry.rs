//! A real OCI registry for the distribution tests: Debian's `docker-registry`
//! (the CNCF distribution registry, installed by `scripts/test.sh`), started
//! on a loopback port with its own temporary storage and killed on drop; and
//! a TCP relay in front of it that cuts a chosen blob's download short, so
//! that "the registry went away mid-download" is a real broken connection.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// A running registry on `127.0.0.1:port`.
pub struct Registry {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Its storage (filesystem driver), to tamper with blobs.
    pub storage: TempDir,
    child: Child,
}

impl Registry {
    /// Starts one and waits until it answers `/v2/`.
    ///
    /// # Panics
    /// When `docker-registry` is not installed (`scripts/test.sh` installs
    /// it), or it does not answer within 20 s.
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// Starts one that wants HTTP basic credentials: `htpasswd` is a line
    /// `USER:BCRYPT-HASH`.
    ///
    /// # Panics
    /// As [`Registry::start`].
    pub fn start_with_basic_auth(htpasswd: &str) -> Self {
        Self::start_with(Some(htpasswd))
    }

    fn start_with(htpasswd: Option<&str>) -> Self {
        let storage = tempfile::tempdir().expect("storage");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let addr = format!("127.0.0.1:{port}");
        let config = storage.path().join("config.yml");
        let mut text = format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  \
             delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            storage.path().join("data").display()
        );
        if let Some(line) = htpasswd {
            let file = storage.path().join("htpasswd");
            std::fs::write(&file, format!("{line}\n")).expect("htpasswd");
            text.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: corral-test\n    path: {}\n",
                file.display()
            ));
        }
        std::fs::write(&config, text).expect("config");
        let auth = htpasswd.is_some();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect(
                "cannot start docker-registry: install Debian's docker-registry package \
                 (scripts/test.sh does)",
            );
        let registry = Self {
            addr,
            storage,
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !registry.answers(if auth { "401" } else { "200" }) {
            assert!(Instant::now() < deadline, "docker-registry did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        registry
    }

    /// Whether `GET /v2/` answers with `status`.
    fn answers(&self, status: &str) -> bool {
        let Ok(mut stream) = TcpStream::connect(&self.addr) else {
            return false;
        };
        let request = format!(
            "GET /v2/ HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with(&format!("HTTP/1.1 {status}"))
    }

    /// `oci://ADDR/PATH`.
    pub fn reference(&self, path: &str) -> String {
        format!("oci://{}/{path}", self.addr)
    }

    /// The file holding the blob `digest` (`sha256:…`) in the storage.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.storage
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP relay to `upstream` that passes everything through, except that
/// once a request names `/blobs/{cut}` it forwards `keep` more bytes of the
/// answer and then closes the connection.
pub struct CuttingRelay {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// How many connections were cut.
    pub cuts: Arc<AtomicUsize>,
    /// Whether it cuts yet ([`CuttingRelay::start_cutting`]).
    cutting: Arc<AtomicBool>,
}

impl CuttingRelay {
    /// From now on, cut the blob's downloads (until then it relays all).
    pub fn start_cutting(&self) {
        self.cutting.store(true, Ordering::SeqCst);
    }

    /// Starts a relay to `upstream` that will cut the download of blob
    /// `cut` once told to.
    pub fn start(upstream: &str, cut: &str, keep: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let cuts = Arc::new(AtomicUsize::new(0));
        let (upstream, marker) = (upstream.to_string(), format!("/blobs/{cut}"));
        let counted = cuts.clone();
        let cutting = Arc::new(AtomicBool::new(false));
        let enabled = cutting.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let armed = Arc::new(AtomicBool::new(false));
                let (c2, s2) = (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                let (marker, armed_up, enabled) = (marker.clone(), armed.clone(), enabled.clone());
                // Client to server: watch for the blob's request.
                std::thread::spawn(move || {
                    pump(client, server, |chunk| {
                        if enabled.load(Ordering::SeqCst)
                            && String::from_utf8_lossy(chunk).contains(&marker)
                        {
                            armed_up.store(true, Ordering::SeqCst);
                        }
                        chunk.len()
                    });
                });
                // Server to client: once armed, `keep` bytes, then cut.
                let counted = counted.clone();
                std::thread::spawn(move || {
                    let mut passed = 0;
                    pump(s2, c2, |chunk| {
                        if !armed.load(Ordering::SeqCst) {
                            return chunk.len();
                        }
                        let room = keep - passed;
                        passed += chunk.len().min(room);
                        if chunk.len() > room {
                            counted.fetch_add(1, Ordering::SeqCst);
                        }
                        chunk.len().min(room)
                    });
                });
            }
        });
        Self {
            addr,
            cuts,
            cutting,
        }
    }
}

/// Copies `from` to `to`, each chunk cut to the length `pass` answers;
/// after a cut chunk, closes both.
fn pump(mut from: TcpStream, mut to: TcpStream, mut pass: impl FnMut(&[u8]) -> usize) {
    let mut buf = [0u8; 8192];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let keep = pass(&buf[..n]);
        if to.write_all(&buf[..keep]).is_err() || keep < n {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
