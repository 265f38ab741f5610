//! The leak scan on outbound HTTP, for a plugin with secrets
//! (`[[http.credentials]]`), in both directions:
//!
//! - the guest's request, before the host injects its headers: a URL that
//!   carries a secret (as sent, or once percent-decoded) is refused; a header
//!   value or body that carries one has it redacted (a body sent with a
//!   `content-length` then fails, its length no longer matching);
//! - the response, before the guest reads it: header values and the body
//!   (streamed: [`Scrubbed`] holds back only bytes that may begin a form)
//!   have every form redacted, and `content-length` is dropped since the
//!   body's length may change. The request asks for no compression, and a
//!   compressed answer is refused (`HttpResponseContentCoding`): the scan
//!   cannot read it.
//!
//! A plugin without secrets passes through untouched.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt as _;
use wasmtime_wasi_http::WasiBody;

use crate::redact::{Leaks, Redactor};

/// Whether `uri` carries a secret of `leaks`, as sent or percent-decoded
/// (counted at `request-url`).
pub(super) fn url_leaks(leaks: &Leaks, uri: &http::Uri) -> bool {
    let Some(redactor) = leaks.redactor() else {
        return false;
    };
    let raw = uri.to_string();
    let decoded = percent_encoding::percent_decode_str(&raw).decode_utf8_lossy();
    let found = redactor.text(&raw).1.max(redactor.text(&decoded).1);
    leaks.note("request-url", found);
    found > 0
}

/// Redacts the values of `headers` (counted at `place`).
fn headers(leaks: &Leaks, redactor: &Redactor, headers: &mut http::HeaderMap, place: &'static str) {
    let mut found = 0;
    for value in headers.values_mut() {
        let bytes = value.as_bytes();
        let mut held = bytes.to_vec();
        let (clean, n) = redactor.stream(&mut held, true);
        if n > 0 {
            found += n;
            // The placeholder is visible ASCII, so the value stays valid.
            if let Ok(clean) = http::HeaderValue::from_bytes(&clean) {
                *value = clean;
            }
        }
    }
    leaks.note(place, found);
}

/// The guest's request with its headers and body scanned. It asks for an
/// uncompressed answer (`accept-encoding: identity`): a compressed echo of
/// a secret would match none of its forms.
pub(super) fn request(leaks: &Leaks, request: http::Request<WasiBody>) -> http::Request<WasiBody> {
    let Some(redactor) = leaks.redactor().cloned() else {
        return request;
    };
    let (mut parts, body) = request.into_parts();
    headers(leaks, &redactor, &mut parts.headers, "request-header");
    parts.headers.insert(
        http::header::ACCEPT_ENCODING,
        http::HeaderValue::from_static("identity"),
    );
    let body = Scrubbed::new(body, leaks.clone(), redactor, "request-body").boxed_unsync();
    http::Request::from_parts(parts, body)
}

/// The response with its headers and body scanned.
///
/// # Errors
/// `HttpResponseContentCoding` for a compressed body (the request asked for
/// none), which the scan could not read.
pub(super) fn response(
    leaks: &Leaks,
    response: http::Response<WasiBody>,
) -> Result<http::Response<WasiBody>, wasmtime_wasi_http::Error> {
    let Some(redactor) = leaks.redactor().cloned() else {
        return Ok(response);
    };
    let (mut parts, body) = response.into_parts();
    if let Some(coding) = parts.headers.get(http::header::CONTENT_ENCODING)
        && !coding.as_bytes().eq_ignore_ascii_case(b"identity")
    {
        return Err(wasmtime_wasi_http::Error::HttpResponseContentCoding(Some(
            String::from_utf8_lossy(coding.as_bytes()).into_owned(),
        )));
    }
    headers(leaks, &redactor, &mut parts.headers, "response-header");
    // The body's length may change; the guest reads it to its end.
    parts.headers.remove(http::header::CONTENT_LENGTH);
    let body = Scrubbed::new(body, leaks.clone(), redactor, "response-body").boxed_unsync();
    Ok(http::Response::from_parts(parts, body))
}

/// A body with every form of the plugin's secrets redacted as it streams.
struct Scrubbed {
    inner: WasiBody,
    leaks: Leaks,
    redactor: Arc<Redactor>,
    place: &'static str,
    /// Bytes that may be the start of a form, held for the next chunk.
    held: Vec<u8>,
    /// Trailers met after the data, passed on once `held` is flushed.
    trailers: Option<http::HeaderMap>,
    ended: bool,
}

impl Scrubbed {
    fn new(inner: WasiBody, leaks: Leaks, redactor: Arc<Redactor>, place: &'static str) -> Self {
        Self {
            inner,
            leaks,
            redactor,
            place,
            held: Vec::new(),
            trailers: None,
            ended: false,
        }
    }

    /// Everything held, redacted, as one data frame (`None` when empty).
    fn flush(&mut self) -> Option<Frame<Bytes>> {
        let (out, found) = self.redactor.stream(&mut self.held, true);
        self.leaks.note(self.place, found);
        (!out.is_empty()).then(|| Frame::data(Bytes::from(out)))
    }
}

impl Body for Scrubbed {
    type Data = Bytes;
    type Error = wasmtime_wasi_http::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        loop {
            if this.ended {
                if let Some(frame) = this.flush() {
                    return Poll::Ready(Some(Ok(frame)));
                }
                return Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))));
            }
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                None => this.ended = true,
                Some(Err(err)) => return Poll::Ready(Some(Err(err))),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        this.held.extend_from_slice(&data);
                        let (out, found) = this.redactor.stream(&mut this.held, false);
                        this.leaks.note(this.place, found);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                        }
                    }
                    Err(frame) => {
                        if let Ok(mut trailers) = frame.into_trailers() {
                            headers(&this.leaks, &this.redactor, &mut trailers, this.place);
                            this.trailers = Some(trailers);
                        }
                        this.ended = true;
                    }
                },
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.held.is_empty() && self.trailers.is_none()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        // The length may change with each redaction.
        http_body::SizeHint::default()
    }
}
