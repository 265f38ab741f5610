//! A one-thread HTTP/1.1 echo server for the secrets tests: what a request
//! carried comes back in the answer, so a test sees what an upstream would
//! hand a guest.

/// A one-thread HTTP/1.1 server on 127.0.0.1 that answers every request
/// with the request's own head and body (so a tool's output echoes the
/// headers it sent), copies its `Authorization` into an
/// `X-Echo-Authorization` response header, and keeps what it saw.
pub struct EchoServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// What it saw: each request's head, a blank line and its body.
    pub heads: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// The body of a request whose head is `head`: `content-length` bytes, or
/// chunks, from `reader`.
fn read_body(reader: &mut impl std::io::BufRead, head: &str) -> String {
    let lower = head.to_ascii_lowercase();
    let mut body = Vec::new();
    if lower.contains("transfer-encoding: chunked") {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).expect("chunk size");
            let size = usize::from_str_radix(size.trim(), 16).expect("hex size");
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).expect("chunk");
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(line) = lower.lines().find(|l| l.starts_with("content-length:")) {
        let length: usize = line["content-length:".len()..]
            .trim()
            .parse()
            .expect("length");
        body.resize(length, 0);
        reader.read_exact(&mut body).expect("body");
    }
    String::from_utf8_lossy(&body).into_owned()
}

impl EchoServer {
    /// Starts it on a free port.
    pub fn start() -> Self {
        use std::io::{BufRead as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
                let mut head = String::new();
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    head.push_str(&line);
                    line.clear();
                }
                let body = read_body(&mut reader, &head);
                let echo = format!("{head}\r\n{body}");
                seen.lock().expect("lock").push(echo.clone());
                let authorization = head
                    .lines()
                    .find_map(|l| {
                        l.strip_prefix("authorization: ")
                            .or(l.strip_prefix("Authorization: "))
                    })
                    .unwrap_or("none")
                    .trim()
                    .to_string();
                // `/gzip` claims a compressed body (it is not).
                let coding = if head.starts_with("GET /gzip") {
                    "Content-Encoding: gzip\r\n"
                } else {
                    ""
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     X-Echo-Authorization: {authorization}\r\n{coding}Connection: close\r\n\r\n{echo}",
                    echo.len()
                );
            }
        });
        Self { port, heads }
    }
}
