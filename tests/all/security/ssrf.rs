//! Server-side request forgery through an allowed name: a policy lists a
//! host name whose DNS the attacker controls, and it resolves to loopback, a
//! private address or the cloud metadata service. The resolver here is the
//! test's own (no `/etc/hosts` edit): the host must check every address it
//! returns and connect only to a checked one.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use corral::{Host, ResolveFuture, Resolver};
use serde_json::json;

use crate::support::{FETCH, TestServer, cache, plugin_dir_with_policies, pool};

/// Resolves the names it knows to fixed addresses, and counts lookups.
#[derive(Debug, Default)]
struct FixedDns {
    names: BTreeMap<String, Vec<IpAddr>>,
    lookups: std::sync::atomic::AtomicUsize,
}

impl Resolver for FixedDns {
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a> {
        self.lookups
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let found = self.names.get(host).cloned();
        Box::pin(async move {
            found
                .map(|ips| {
                    ips.into_iter()
                        .map(|ip| SocketAddr::new(ip, port))
                        .collect()
                })
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such name"))
        })
    }
}

fn dns() -> FixedDns {
    let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
    let mut names = BTreeMap::new();
    names.insert("internal.test".to_string(), vec![ip("127.0.0.1")]);
    names.insert("metadata.test".to_string(), vec![ip("169.254.169.254")]);
    // A public address first, an internal one second: still refused.
    names.insert(
        "mixed.test".to_string(),
        vec![ip("93.184.216.34"), ip("10.0.0.7")],
    );
    FixedDns {
        names,
        ..FixedDns::default()
    }
}

async fn host(policy: &str) -> (tempfile::TempDir, Host) {
    let dir = plugin_dir_with_policies(&[(FETCH, Some(policy))]);
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache())
        .resolver(dns())
        .build()
        .await
        .expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    (dir, host)
}

async fn fetch(host: &Host, url: &str) -> Result<serde_json::Value, String> {
    crate::support::call(host, "fetch_url", json!({ "url": url }))
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn an_allowed_name_that_resolves_inside_is_refused() {
    let server = TestServer::start("internal secret");
    let port = server.port;
    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://internal.test:{port}\", \
         \"http://metadata.test:80\", \"http://mixed.test:{port}\"]\n"
    );
    let (_dir, host) = host(&policy).await;
    for url in [
        format!("http://internal.test:{port}/"),
        "http://metadata.test/latest/meta-data/".to_string(),
        format!("http://mixed.test:{port}/"),
    ] {
        let err = fetch(&host, &url).await.unwrap_err();
        assert!(
            err.contains("resolves to an internal address"),
            "{url}: {err}"
        );
    }
    assert_eq!(server.hits(), 0, "nothing reached the internal server");
}

#[tokio::test]
async fn private_networks_can_be_allowed_explicitly() {
    let server = TestServer::start("internal but granted");
    let port = server.port;
    let policy = format!(
        "version = 1\n[http]\nallow = [\"http://internal.test:{port}\"]\nallow_private_networks = true\n"
    );
    let (_dir, host) = host(&policy).await;
    let out = fetch(&host, &format!("http://internal.test:{port}/"))
        .await
        .expect("allowed");
    assert_eq!(out["body"], "internal but granted");
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn an_ip_literal_entry_reaches_that_address_without_a_lookup() {
    let server = TestServer::start("literal");
    let port = server.port;
    let policy = format!("version = 1\n[http]\nallow = [\"http://127.0.0.1:{port}\"]\n");
    let dir = plugin_dir_with_policies(&[(FETCH, Some(&policy))]);
    let dns = std::sync::Arc::new(dns());
    #[derive(Debug)]
    struct Shared(std::sync::Arc<FixedDns>);
    impl Resolver for Shared {
        fn lookup<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a> {
            self.0.lookup(host, port)
        }
    }
    let host = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache())
        .resolver(Shared(dns.clone()))
        .build()
        .await
        .expect("host");
    let out = fetch(&host, &format!("http://127.0.0.1:{port}/"))
        .await
        .expect("literal entry");
    assert_eq!(out["body"], "literal");
    assert_eq!(
        dns.lookups.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "an IP literal is not looked up"
    );
}
