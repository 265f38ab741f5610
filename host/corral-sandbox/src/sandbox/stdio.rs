//! Bounded capture of a guest's stdout and stderr.
//!
//! Unlike wasmtime-wasi's `MemoryOutputPipe`, which fails writes past its
//! capacity (and so makes a chatty Rust guest panic), [`Capture`] keeps the first
//! `capacity` bytes and silently counts the rest: printing is never a way for a
//! guest to crash itself or to exhaust host memory.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// How much a guest may write per `write` call (what `check-write` reports).
const WRITE_BUDGET: usize = 64 << 10;

/// A shared, bounded byte sink. Clones share the same buffer.
#[derive(Clone, Debug)]
pub struct Capture {
    inner: Arc<Mutex<Buffer>>,
}

#[derive(Debug)]
struct Buffer {
    data: Vec<u8>,
    capacity: usize,
    discarded: u64,
}

impl Capture {
    /// A capture that keeps at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Buffer {
                data: Vec::new(),
                capacity,
                discarded: 0,
            })),
        }
    }

    fn append(&self, bytes: &[u8]) {
        let mut buf = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let room = buf.capacity.saturating_sub(buf.data.len());
        let keep = room.min(bytes.len());
        buf.data.extend_from_slice(&bytes[..keep]);
        buf.discarded += (bytes.len() - keep) as u64;
    }

    /// Keeps at most `capacity` bytes from now on; bytes already kept
    /// beyond it count as discarded (a store made ahead of its call, bound
    /// to the call's smaller cap).
    pub fn set_capacity(&self, capacity: usize) {
        let mut buf = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if buf.data.len() > capacity {
            buf.discarded += (buf.data.len() - capacity) as u64;
            buf.data.truncate(capacity);
        }
        buf.capacity = capacity;
    }

    /// The kept bytes (lossy UTF-8) and how many bytes were discarded.
    pub fn contents(&self) -> (String, u64) {
        let buf = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (
            String::from_utf8_lossy(&buf.data).into_owned(),
            buf.discarded,
        )
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Capture {
    async fn ready(&mut self) {}
}

impl OutputStream for Capture {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(WRITE_BUDGET)
    }
}

impl AsyncWrite for Capture {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.append(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Capture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_bytes_and_counts_the_rest() {
        let capture = Capture::new(4);
        capture.append(b"abc");
        capture.append(b"defgh");
        assert_eq!(capture.contents(), ("abcd".to_string(), 4));
    }
}
