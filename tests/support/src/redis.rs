//! A real `redis-server` (Debian's package, which the test command
//! installs) on a free loopback port, for the tests of replicas that share
//! MCP tasks.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A `redis-server` of its own, without persistence, stopped when dropped.
pub struct RedisServer {
    child: std::process::Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl RedisServer {
    /// Starts one and waits until it answers `PING`.
    ///
    /// # Panics
    /// When `redis-server` is missing (run `scripts/system-deps.sh`) or does
    /// not answer within a minute.
    pub fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server (Debian's package; scripts/system-deps.sh installs it)");
        let server = Self { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !server.answers() {
            assert!(
                Instant::now() < deadline,
                "redis-server never answered PING"
            );
            std::thread::yield_now();
        }
        server
    }

    /// The URL replicas take (`--store`).
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        if stream.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut line = String::new();
        BufReader::new(stream).read_line(&mut line).is_ok() && line.starts_with("+PONG")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
