//! Outbound HTTP on a tape ([`crate::tape`]): recording keeps each request
//! as the guest made it (URL and headers scanned) and the response as the
//! guest received it, after the leak scan, its body teed frame by frame as
//! it streams (cut at the recording's cap); replay answers each request
//! from the next recorded exchange, on no network at all, when its method
//! and URL are the recorded ones, and with `HTTP-request-denied` when they
//! are not (the divergence).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt as _;
use wasmtime_wasi_http::{Error, WasiBody};

use super::Pending;
use crate::redact::Leaks;
use crate::tape::{BodyEnd, Event, HttpExchange, HttpResponse, Tape};

/// The request as a tape keeps it: method, redacted URL, scanned headers.
pub(super) fn exchange(leaks: &Leaks, request: &http::Request<WasiBody>) -> HttpExchange {
    let url = leaks.text("url", &request.uri().to_string()).into_owned();
    let headers = headers(request.headers(), Some(leaks));
    HttpExchange {
        method: request.method().as_str().to_owned(),
        url,
        headers,
        response: None,
    }
}

/// `map` as a tape keeps it, each value scanned by `leaks` when given (a
/// response's were scanned before the guest got them).
fn headers(map: &http::HeaderMap, leaks: Option<&Leaks>) -> Vec<(String, serde_bytes::ByteBuf)> {
    map.iter()
        .map(|(name, value)| {
            let mut value = value.as_bytes().to_vec();
            if let Some(leaks) = leaks {
                leaks.bytes("header", &mut value);
            }
            (name.as_str().to_owned(), serde_bytes::ByteBuf::from(value))
        })
        .collect()
}

/// Recording: appends the request, then, as `inner` resolves, its response
/// or error, and tees the body.
pub(super) fn record(tape: Tape, exchange: HttpExchange, inner: Pending) -> Pending {
    let slot = tape.push(Event::Http(Box::new(exchange)));
    Box::new(async move {
        let result = Pin::from(inner).await;
        let Some(slot) = slot else { return result };
        match result {
            Err(err) => {
                let code = code(&err);
                tape.amend(slot, code.len(), |event, _| {
                    if let Event::Http(exchange) = event {
                        exchange.response = Some(Err(code));
                    }
                });
                Err(err)
            }
            Ok((response, finish)) => {
                let (parts, body) = response.into_parts();
                let headers = headers(&parts.headers, None);
                let weight = headers.iter().map(|(n, v)| n.len() + v.len()).sum();
                let status = parts.status.as_u16();
                tape.amend(slot, weight, |event, fits| {
                    if let Event::Http(exchange) = event {
                        exchange.response = Some(Ok(HttpResponse {
                            status,
                            headers: if fits { headers } else { Vec::new() },
                            body: serde_bytes::ByteBuf::new(),
                            end: BodyEnd::Open,
                            cut: 0,
                        }));
                    }
                });
                let body = Teed {
                    inner: body,
                    tape,
                    slot,
                }
                .boxed_unsync();
                Ok((http::Response::from_parts(parts, body), finish))
            }
        }
    })
}

/// A response body that appends each data frame to its exchange.
struct Teed {
    inner: WasiBody,
    tape: Tape,
    slot: usize,
}

impl Teed {
    fn response(&self, change: impl FnOnce(&mut HttpResponse, bool), extra: usize) {
        self.tape.amend(self.slot, extra, |event, fits| {
            if let Event::Http(exchange) = event
                && let Some(Ok(response)) = &mut exchange.response
            {
                change(response, fits);
            }
        });
    }
}

impl Body for Teed {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let data = data.clone();
                    self.response(
                        |response, fits| {
                            if fits && response.cut == 0 {
                                response.body.extend_from_slice(&data);
                            } else {
                                response.cut += data.len() as u64;
                            }
                        },
                        data.len(),
                    );
                }
            }
            Poll::Ready(Some(Err(err))) => {
                let code = code(err);
                self.response(|response, _| response.end = BodyEnd::Failed(code), 0);
            }
            Poll::Ready(None) => {
                self.response(|response, _| response.end = BodyEnd::Complete, 0);
                let note = self.tape.amend(self.slot, 0, |event, _| match event {
                    Event::Http(exchange) => match &exchange.response {
                        Some(Ok(response)) if response.cut > 0 => Some(format!(
                            "the body of {} {} is cut after {} bytes ({} more not recorded)",
                            exchange.method,
                            exchange.url,
                            response.body.len(),
                            response.cut
                        )),
                        _ => None,
                    },
                    _ => None,
                });
                if let Some(Some(note)) = note {
                    self.tape.cut(note);
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Replay: the recorded answer to `request`, when it is the next recorded
/// exchange; the guest's request body is read to its end and dropped.
pub(super) fn replay(tape: &Tape, leaks: &Leaks, request: http::Request<WasiBody>) -> Pending {
    let got = exchange(leaks, &request);
    let answer = tape.answer(
        &Event::Http(Box::new(got.clone())),
        |event| matches!(event, Event::Http(e) if e.method == got.method && e.url == got.url),
    );
    let tape = tape.clone();
    Box::new(async move {
        // Drained so the guest's writes succeed as they did.
        let _ = request.into_body().collect().await;
        let finish: Box<dyn std::future::Future<Output = wasmtime_wasi_http::Result<()>> + Send> =
            Box::new(async { Ok(()) });
        let Some(Event::Http(exchange)) = answer else {
            return Err(Error::HttpRequestDenied);
        };
        match exchange.response {
            None => {
                tape.note_incomplete(format!(
                    "{} {}: the recorded call ended before its response",
                    exchange.method, exchange.url
                ));
                Err(Error::HttpResponseTimeout)
            }
            Some(Err(code)) => Err(error(&code)),
            Some(Ok(recorded)) => {
                if recorded.cut > 0 || recorded.end == BodyEnd::Open {
                    tape.note_incomplete(format!(
                        "{} {}: the recording holds {} bytes of its body{}",
                        exchange.method,
                        exchange.url,
                        recorded.body.len(),
                        if recorded.cut > 0 {
                            format!(", {} more were cut", recorded.cut)
                        } else {
                            ", the rest never arrived".to_owned()
                        }
                    ));
                }
                let mut response = http::Response::builder().status(recorded.status);
                for (name, value) in &recorded.headers {
                    response = response.header(name.as_str(), value.as_slice());
                }
                let body = Replayed {
                    data: Some(Bytes::from(recorded.body.into_vec())),
                    error: match recorded.end {
                        BodyEnd::Failed(code) => Some(error(&code)),
                        _ => None,
                    },
                }
                .boxed_unsync();
                let response = response
                    .body(body)
                    .map_err(|err| Error::InternalError(Some(err.to_string())))?;
                Ok((response, finish))
            }
        }
    })
}

/// A recorded body: its bytes in one frame, then its error if it had one.
struct Replayed {
    data: Option<Bytes>,
    error: Option<Error>,
}

impl Body for Replayed {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if let Some(data) = self.data.take().filter(|d| !d.is_empty()) {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        Poll::Ready(self.error.take().map(Err))
    }

    fn is_end_stream(&self) -> bool {
        self.data.as_ref().is_none_or(Bytes::is_empty) && self.error.is_none()
    }
}

/// The `wasi:http` error code's name, as a recording keeps it.
pub(crate) fn code(err: &Error) -> String {
    let name = match err {
        Error::DnsTimeout => "DNS-timeout",
        Error::DnsError { .. } => "DNS-error",
        Error::DestinationNotFound => "destination-not-found",
        Error::DestinationUnavailable => "destination-unavailable",
        Error::DestinationIpProhibited => "destination-IP-prohibited",
        Error::DestinationIpUnroutable => "destination-IP-unroutable",
        Error::ConnectionRefused | Error::Connect(_) => "connection-refused",
        Error::ConnectionTerminated => "connection-terminated",
        Error::ConnectionTimeout => "connection-timeout",
        Error::ConnectionReadTimeout => "connection-read-timeout",
        Error::ConnectionWriteTimeout => "connection-write-timeout",
        Error::TlsProtocolError | Error::Tls(_) => "TLS-protocol-error",
        Error::TlsCertificateError => "TLS-certificate-error",
        Error::HttpRequestDenied => "HTTP-request-denied",
        Error::HttpRequestUriInvalid => "HTTP-request-URI-invalid",
        Error::HttpResponseIncomplete => "HTTP-response-incomplete",
        Error::HttpResponseTimeout => "HTTP-response-timeout",
        Error::HttpProtocolError | Error::Hyper(_) => "HTTP-protocol-error",
        Error::HttpResponseBodySize(_) => "HTTP-response-body-size",
        _ => "internal-error",
    };
    name.to_owned()
}

/// The error a recorded code names; a name this version does not know
/// reads as `internal-error`.
pub(crate) fn error(code: &str) -> Error {
    match code {
        "DNS-timeout" => Error::DnsTimeout,
        "DNS-error" => Error::DnsError {
            rcode: None,
            info_code: None,
        },
        "destination-not-found" => Error::DestinationNotFound,
        "destination-unavailable" => Error::DestinationUnavailable,
        "destination-IP-prohibited" => Error::DestinationIpProhibited,
        "destination-IP-unroutable" => Error::DestinationIpUnroutable,
        "connection-refused" => Error::ConnectionRefused,
        "connection-terminated" => Error::ConnectionTerminated,
        "connection-timeout" => Error::ConnectionTimeout,
        "connection-read-timeout" => Error::ConnectionReadTimeout,
        "connection-write-timeout" => Error::ConnectionWriteTimeout,
        "TLS-protocol-error" => Error::TlsProtocolError,
        "TLS-certificate-error" => Error::TlsCertificateError,
        "HTTP-request-denied" => Error::HttpRequestDenied,
        "HTTP-request-URI-invalid" => Error::HttpRequestUriInvalid,
        "HTTP-response-incomplete" => Error::HttpResponseIncomplete,
        "HTTP-response-timeout" => Error::HttpResponseTimeout,
        "HTTP-protocol-error" => Error::HttpProtocolError,
        "HTTP-response-body-size" => Error::HttpResponseBodySize(None),
        _ => Error::InternalError(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_code_comes_back_as_itself() {
        for err in [
            Error::DnsTimeout,
            Error::DestinationIpProhibited,
            Error::ConnectionRefused,
            Error::HttpRequestDenied,
            Error::HttpResponseTimeout,
            Error::TlsCertificateError,
        ] {
            let name = code(&err);
            assert_eq!(code(&error(&name)), name);
        }
        assert_eq!(code(&error("no-such-code")), "internal-error");
    }
}
