//! The run's HTTP meter: every request the gate decided, counted by origin,
//! method and verdict ([`Attempts`]), and the bytes that crossed the gate
//! both ways, counted as the bodies stream (a body the guest never reads
//! to its end counts what it read).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use http_body_util::BodyExt as _;
use wasmtime_wasi_http::WasiBody;

use crate::attempts::{Attempts, Denial};

/// One run's attempts and egress bytes, shared by the gate and the bodies
/// it meters.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    attempts: Mutex<Attempts>,
    bytes: Arc<AtomicU64>,
}

fn header_bytes(headers: &http::HeaderMap) -> u64 {
    headers
        .iter()
        .map(|(name, value)| (name.as_str().len() + value.len()) as u64)
        .sum()
}

/// `body`, adding the length of each data frame to `bytes`.
fn metered(body: WasiBody, bytes: Arc<AtomicU64>) -> WasiBody {
    body.map_frame(move |frame| {
        if let Some(data) = frame.data_ref() {
            bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        frame
    })
    .boxed_unsync()
}

impl Meter {
    /// Counts one request to `uri`.
    pub(crate) fn http(&self, uri: &http::Uri, method: &http::Method, denied: Option<Denial>) {
        if let Ok(mut attempts) = self.attempts.lock() {
            attempts.http(uri, method, denied);
        }
    }

    /// The request as it leaves, its head counted and its body metered.
    pub(crate) fn request(&self, request: http::Request<WasiBody>) -> http::Request<WasiBody> {
        let (parts, body) = request.into_parts();
        let head = parts.method.as_str().len() as u64
            + parts.uri.to_string().len() as u64
            + header_bytes(&parts.headers);
        self.bytes.fetch_add(head, Ordering::Relaxed);
        http::Request::from_parts(parts, metered(body, self.bytes.clone()))
    }

    /// The response as it arrives, its headers counted and its body
    /// metered.
    pub(crate) fn response(&self, response: http::Response<WasiBody>) -> http::Response<WasiBody> {
        let (parts, body) = response.into_parts();
        self.bytes
            .fetch_add(header_bytes(&parts.headers), Ordering::Relaxed);
        http::Response::from_parts(parts, metered(body, self.bytes.clone()))
    }

    /// What the run attempted, with the bytes counted so far.
    pub(crate) fn take(&self) -> Attempts {
        let mut attempts = self
            .attempts
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default();
        attempts.egress_bytes = self.bytes.load(Ordering::Relaxed);
        attempts
    }
}
