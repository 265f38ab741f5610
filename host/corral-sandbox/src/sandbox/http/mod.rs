//! Outbound HTTP of one call, in `wasi:http`'s `send_request` hook:
//!
//! 1. the request's scheme, host and port must match the plugin's allow-list,
//!    or it fails in the guest with `HTTP-request-denied`;
//! 2. the host name is resolved here, by the host's [`Resolver`] (an IP
//!    literal is used as it is);
//! 3. every resolved address is checked: an internal one
//!    ([`address::internal_range`]: loopback, private, link-local with the
//!    cloud metadata service, CGNAT, unique-local, IPv4-mapped...) fails the
//!    request with `destination-IP-prohibited`, unless the allow-list entry
//!    that matched is that very IP literal, or the plugin's policy sets
//!    `[http] allow_private_networks = true`;
//! 4. the connection goes to a checked address ([`connect::send`]), never
//!    through a second lookup, so DNS rebinding has no window; TLS verifies
//!    the certificate for the request's host name.
//!
//! For a plugin with secrets, the request (before the host injects its
//! headers) and the response (before the guest reads it) go through the
//! leak scan ([`scrub`]).
//!
//! Denials are logged at WARN with the URL and the reason. Every request
//! is also counted in the run's [`Attempts`](crate::Attempts) (origin, method, verdict) and
//! its bytes both ways ([`meter`]).

mod address;
mod connect;
mod meter;
mod resolve;
mod scrub;
mod taped;

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::attempts::Denial;
use crate::grants::HostPattern;
pub use address::internal_range;
pub(crate) use meter::Meter;
pub use resolve::{ResolveFuture, Resolver, SystemResolver};

/// The `wasi:http` hooks of one call.
pub(crate) struct HttpGate {
    pub allow: Arc<[HostPattern]>,
    /// Headers the host sets on requests to given destinations.
    pub credentials: Arc<[crate::grants::Injected]>,
    /// `[http] allow_private_networks` of the plugin's policy.
    pub allow_private: bool,
    pub resolver: Arc<dyn Resolver>,
    pub plugin: Arc<str>,
    pub tool: Arc<str>,
    /// The call's leak scan ([`scrub`]).
    pub leaks: crate::redact::Leaks,
    /// The run's attempts and bytes ([`meter`]).
    pub meter: Arc<Meter>,
    /// The run's recording or replay ([`taped`]).
    pub tape: Option<crate::tape::Tape>,
}

type Pending = Box<
    dyn Future<
            Output = wasmtime_wasi_http::Result<(
                http::Response<WasiBody>,
                Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
            )>,
        > + Send,
>;

/// Where a request may go, once the allow-list admitted it.
struct Destination {
    host: String,
    port: u16,
    tls: bool,
    /// The allow-list entry names this host as an IP literal.
    literal_entry: bool,
}

impl HttpGate {
    /// The destination of `uri` if an allow-list entry admits it.
    fn admit(&self, uri: &http::Uri) -> Option<Destination> {
        let scheme = uri.scheme_str().unwrap_or("");
        let host = uri.host()?;
        let port = uri.port_u16().unwrap_or(match scheme {
            "http" => 80,
            "https" => 443,
            _ => 0,
        });
        // IPv6 hosts keep their brackets on both sides (`[::1]`).
        let entry = self.allow.iter().find(|p| p.matches(scheme, host, port))?;
        Some(Destination {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            tls: scheme == "https",
            literal_entry: entry.ip().is_some(),
        })
    }

    /// Sets the headers of `[[http.credentials]]` whose destination is the
    /// request's (already admitted by the allow-list), replacing any the
    /// guest set under the same name (logged).
    fn inject(&self, request: &mut http::Request<WasiBody>) {
        let uri = request.uri().clone();
        let scheme = uri.scheme_str().unwrap_or("");
        let Some(host) = uri.host() else { return };
        let port = uri.port_u16().unwrap_or(match scheme {
            "http" => 80,
            "https" => 443,
            _ => 0,
        });
        for credential in self.credentials.iter() {
            if !credential.host.matches(scheme, host, port) {
                continue;
            }
            if request.headers().contains_key(&credential.name) {
                tracing::warn!(
                    plugin = &*self.plugin,
                    tool = &*self.tool,
                    url = %uri,
                    header = %credential.name,
                    "the guest set a header the host injects; replaced"
                );
            }
            request
                .headers_mut()
                .insert(credential.name.clone(), credential.value.clone());
        }
    }

    fn deny(&self, uri: &http::Uri, reason: &str) {
        // The log is no place for a secret the URL may carry either.
        let url = uri.to_string();
        let url = match self.leaks.redactor() {
            Some(redactor) => redactor.text(&url).0.into_owned(),
            None => url,
        };
        tracing::warn!(
            plugin = &*self.plugin,
            tool = &*self.tool,
            url = %corral_names::text::escape(&url),
            "outbound HTTP denied: {reason}"
        );
    }

    /// Resolves and checks the destination: the addresses to connect to.
    async fn addresses(
        &self,
        uri: &http::Uri,
        dest: &Destination,
        timeout: Duration,
    ) -> Result<Vec<SocketAddr>, Error> {
        let addrs = match dest.host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, dest.port)],
            Err(_) => {
                let lookup = self.resolver.lookup(&dest.host, dest.port);
                match tokio::time::timeout(timeout, lookup).await {
                    Err(_) => return Err(Error::DnsTimeout),
                    Ok(Err(err)) => {
                        tracing::debug!(url = %uri, "lookup failed: {err}");
                        return Err(Error::DnsError {
                            rcode: None,
                            info_code: None,
                        });
                    }
                    Ok(Ok(addrs)) if addrs.is_empty() => return Err(Error::DestinationNotFound),
                    Ok(Ok(addrs)) => addrs,
                }
            }
        };
        // An internal address is reachable only when the entry names that
        // literal address, or the policy opted in for private networks.
        if !(self.allow_private || dest.literal_entry) {
            for addr in &addrs {
                if let Some(range) = internal_range(addr.ip()) {
                    self.deny(
                        uri,
                        &format!(
                            "`{}` resolves to {} in the {range} range; list that address \
                             itself, or set `[http] allow_private_networks = true` in the \
                             plugin's policy",
                            dest.host,
                            addr.ip()
                        ),
                    );
                    return Err(Error::DestinationIpProhibited);
                }
            }
        }
        Ok(addrs)
    }
}

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Pending {
        match self.tape.clone() {
            None => self.send(request, options, fut),
            Some(tape) if tape.is_replay() => taped::replay(&tape, &self.leaks, request),
            Some(tape) => {
                let exchange = taped::exchange(&self.leaks, &request);
                let sent = self.send(request, options, fut);
                taped::record(tape, exchange, sent)
            }
        }
    }
}

impl HttpGate {
    /// The gate itself: admission, resolution, address checks, the
    /// credentials, and the connection.
    fn send(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Pending {
        // Request-body errors are reported through the connection's future.
        drop(fut);
        let Some(dest) = self.admit(request.uri()) else {
            let allowed: Vec<String> = self.allow.iter().map(ToString::to_string).collect();
            let list = if allowed.is_empty() {
                "(empty)".to_string()
            } else {
                allowed.join(", ")
            };
            self.deny(
                request.uri(),
                &format!("the destination is not in the plugin's allow-list: {list}"),
            );
            self.meter
                .http(request.uri(), request.method(), Some(Denial::NotGranted));
            return Box::new(async { Err(Error::HttpRequestDenied) });
        };
        if scrub::url_leaks(&self.leaks, request.uri()) {
            self.deny(
                request.uri(),
                "the URL carries a secret the host injects for this plugin",
            );
            self.meter
                .http(request.uri(), request.method(), Some(Denial::SecretInUrl));
            return Box::new(async { Err(Error::HttpRequestDenied) });
        }
        let mut request = scrub::request(&self.leaks, request);
        self.inject(&mut request);
        let request = self.meter.request(request);
        let gate = HttpGate {
            allow: self.allow.clone(),
            credentials: self.credentials.clone(),
            allow_private: self.allow_private,
            resolver: self.resolver.clone(),
            plugin: self.plugin.clone(),
            tool: self.tool.clone(),
            leaks: self.leaks.clone(),
            meter: self.meter.clone(),
            tape: None,
        };
        Box::new(async move {
            let uri = request.uri().clone();
            let timeout = options
                .as_ref()
                .and_then(|o| o.connect_timeout)
                .unwrap_or(Duration::from_secs(30));
            let addrs = gate.addresses(&uri, &dest, timeout).await;
            let denied = matches!(addrs, Err(Error::DestinationIpProhibited))
                .then_some(Denial::PrivateAddress);
            gate.meter.http(&uri, request.method(), denied);
            let addrs = addrs?;
            tracing::debug!(
                plugin = &*gate.plugin,
                tool = &*gate.tool,
                url = %uri,
                addresses = ?addrs,
                "outbound HTTP allowed"
            );
            let tls_name = if dest.tls {
                let name = match dest.host.parse::<IpAddr>() {
                    Ok(ip) => rustls::pki_types::ServerName::from(ip),
                    Err(_) => rustls::pki_types::ServerName::try_from(dest.host.clone())
                        .map_err(|_| Error::HttpRequestUriInvalid)?,
                };
                Some(name)
            } else {
                None
            };
            let (response, finish) = connect::send(request, options, addrs, tls_name).await?;
            let response = gate.meter.response(response);
            Ok((scrub::response(&gate.leaks, response)?, finish))
        })
    }
}
