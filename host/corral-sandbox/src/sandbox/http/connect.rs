//! Sending one outbound request to an address the host already checked:
//! TCP connect to exactly that `SocketAddr` (no second lookup, so no DNS
//! rebinding window between the check and the connection), TLS with rustls
//! and the webpki roots verified against the request's host name, then an
//! HTTP/1.1 exchange with hyper, under the request's timeouts.
//!
//! Adapted from `wasmtime-wasi-http` 48's `default_send_request` (Apache-2.0
//! WITH LLVM-exception, the Bytecode Alliance), whose only change here is the
//! connect step: it took an authority and resolved it itself.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

/// The response and the future that drives the connection to its end.
pub(crate) type Sent = (
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
);

trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> Stream for T {}

/// The TLS client configuration: webpki roots, no client certificate. Built
/// once per process.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            Arc::new(
                rustls::ClientConfig::builder()
                    .with_root_certificates(roots)
                    .with_no_client_auth(),
            )
        })
        .clone()
}

/// Sends `request` to `addrs` (tried in order) over TLS when `tls_name` is
/// set, verifying the server's certificate for that name.
pub(crate) async fn send(
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    addrs: Vec<SocketAddr>,
    tls_name: Option<rustls::pki_types::ServerName<'static>>,
) -> Result<Sent, Error> {
    let timeout = |pick: fn(&RequestOptions) -> Option<Duration>| {
        options
            .as_ref()
            .and_then(pick)
            .unwrap_or(Duration::from_secs(600))
    };
    let connect_timeout = timeout(|o| o.connect_timeout);
    let first_byte_timeout = timeout(|o| o.first_byte_timeout);
    let between_bytes_timeout = timeout(|o| o.between_bytes_timeout);

    let tcp = tokio::time::timeout(connect_timeout, connect_any(&addrs))
        .await
        .map_err(|_| Error::ConnectionTimeout)??;
    let stream: Box<dyn Stream> = match tls_name {
        Some(name) => {
            let connector = tokio_rustls::TlsConnector::from(tls_config());
            Box::new(connector.connect(name, tcp).await.map_err(Error::Tls)?)
        }
        None => Box::new(tcp),
    };
    let (mut sender, conn) = tokio::time::timeout(
        connect_timeout,
        hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;

    // The request line carries only the path and query (not the scheme and
    // authority, which are for proxies).
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;

    let send = async move {
        let response = tokio::time::timeout(first_byte_timeout, sender.send_request(request))
            .await
            .map_err(|_| Error::ConnectionReadTimeout)?
            .map_err(Error::from)?;
        // tokio panics on a zero interval; 1 ns is effectively zero.
        let between = between_bytes_timeout.max(Duration::from_nanos(1));
        let mut timer = tokio::time::interval(between);
        timer.reset();
        Ok::<_, Error>(response.map(|incoming| IncomingBody { incoming, timer }))
    };
    let mut send = std::pin::pin!(send);
    let mut conn = Some(conn);
    // Wait for the response while driving the connection's I/O.
    let response = std::future::poll_fn(|cx| match send.as_mut().poll(cx) {
        Poll::Ready(result) => Poll::Ready(result),
        Poll::Pending => {
            let Some(driving) = conn.as_mut() else {
                return Poll::Pending;
            };
            let done = ready!(Pin::new(driving).poll(cx));
            conn = None;
            match done {
                Ok(()) => send.as_mut().poll(cx),
                Err(err) => Poll::Ready(Err(Error::from(err))),
            }
        }
    })
    .await?;
    let finish = async move {
        let Some(conn) = conn.take() else {
            return Ok(());
        };
        conn.await.map_err(|err| {
            if err.is_timeout() {
                Error::HttpResponseTimeout
            } else {
                Error::from(err)
            }
        })
    };
    Ok((response.map(|b| b.boxed_unsync()), Box::new(finish)))
}

/// Connects to the first address of `addrs` that accepts.
async fn connect_any(addrs: &[SocketAddr]) -> Result<TcpStream, Error> {
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(err) => last = Some(err),
        }
    }
    Err(match last {
        Some(err) if err.kind() == std::io::ErrorKind::ConnectionRefused => {
            Error::ConnectionRefused
        }
        Some(err) => Error::Connect(err),
        None => Error::DestinationNotFound,
    })
}

/// hyper's response body, with the between-bytes timeout of the request.
struct IncomingBody {
    incoming: hyper::body::Incoming,
    timer: tokio::time::Interval,
}

impl http_body::Body for IncomingBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Error>>> {
        match Pin::new(&mut self.incoming).poll_frame(cx) {
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Err(err))) => Poll::Ready(Some(Err(if err.is_timeout() {
                Error::HttpResponseTimeout
            } else {
                Error::from(err)
            }))),
            Poll::Ready(Some(Ok(frame))) => {
                self.timer.reset();
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                ready!(self.timer.poll_tick(cx));
                Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.incoming.size_hint()
    }
}
