//! Name resolution for outbound HTTP, done by the host (never the guest):
//! the [`Resolver`] trait, and [`SystemResolver`], the default, which asks
//! the operating system. An embedder (or a test) can supply its own through
//! `corral::HostBuilder::resolver`.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;

/// The future a [`Resolver`] returns.
pub type ResolveFuture<'a> =
    Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + 'a>>;

/// Resolves a host name for an outbound request. The host checks every
/// address it returns against the internal ranges and connects to a checked
/// one, so a resolver never decides what is reachable.
pub trait Resolver: std::fmt::Debug + Send + Sync {
    /// The addresses of `host` (a name, never an IP literal) on `port`.
    ///
    /// # Errors
    /// The lookup's I/O error; the guest sees a DNS error.
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a>;
}

/// The operating system's resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}
