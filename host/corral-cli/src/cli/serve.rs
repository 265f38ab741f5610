//! `corral serve`: the MCP server, over stdio (default) or streamable HTTP.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use corral_mcp::http::{HttpOptions, MetricsRender};
use corral_mcp::{McpServer, serve_stdio};

use super::GlobalArgs;
use super::gates::GateArgs;

/// Serve every tool to MCP clients.
///
/// Without `--http`, speaks MCP on stdin/stdout (what desktop clients spawn);
/// logs go to stderr. With `--http ADDR`, serves streamable HTTP at
/// `http://ADDR/mcp`, Prometheus metrics at `/metrics`, and the probes
/// `/healthz` and `/readyz`; on SIGTERM or Ctrl-C it drains (not ready, then
/// 503 to new requests while the calls in flight finish) and exits 0, or 1
/// when the grace period cut calls off. The plugin directory is watched and
/// reloaded unless `--no-watch`; clients get
/// `notifications/tools/list_changed`. `--context` values become host-level
/// context for every call.
#[derive(Args, Debug)]
pub struct ServeCmd {
    /// Serve streamable HTTP on this address instead of stdio; `--http` alone
    /// binds loopback, 127.0.0.1:8080
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8080")]
    http: Option<SocketAddr>,
    /// Require `Authorization: Bearer <token>` with the token in this file
    /// (HTTP); without it (or --tokens), a non-loopback ADDR prints a warning
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// Bearer tokens that each authenticate a tenant, a TOML file of
    /// `[[token]] tenant = "..." sha256 = "..."` (HTTP): the tenant's
    /// quotas, tasks and resources are then its own, whatever context key
    /// the client sends
    #[arg(long, value_name = "FILE", requires = "http")]
    tokens: Option<PathBuf>,
    /// Tenant quotas: calls, fuel, guest time and HTTP bytes per tenant per
    /// window, a TOML file (see the README's "Quotas"); kept in --store, so
    /// replicas enforce them together
    #[arg(long, value_name = "FILE")]
    quotas: Option<PathBuf>,
    /// Run this plugin's calls in learning runs (repeatable): it also gets
    /// an empty read-only `/`, so file attempts outside its grants are
    /// recorded; `corral policy suggest PLUGIN` reads the evidence
    #[arg(long, value_name = "PLUGIN")]
    learn: Vec<String>,
    /// Make --learn permissive (allow and record; see `corral policy learn
    /// --permissive`): only on loopback or stdio, only HTTP to --origin
    #[arg(long, requires = "learn")]
    permissive: bool,
    /// With --permissive, an origin calls may reach (repeatable)
    #[arg(long, value_name = "ORIGIN", requires = "permissive")]
    origin: Vec<String>,
    /// Let a new build of a plugin with `[record] gate_updates` replace the
    /// served one even when its replays of recorded calls change outputs
    /// (logged); without it such an update waits for `corral replay DIR
    /// --plugin FILE --accept`
    #[arg(long)]
    accept_changes: bool,
    /// Let MCP clients ask for a call to be recorded (`_meta`
    /// `"corral/record": true`) into the recordings directory
    /// (--recordings-dir); off by default, since a recording holds the
    /// call's arguments and what the tool read
    #[arg(long)]
    record_on_request: bool,
    /// Also accept this Host header (host or host:port), e.g. when binding a
    /// non-loopback address (HTTP; repeatable)
    #[arg(long, value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
    /// Also accept requests from this browser Origin (scheme://host[:port|:*])
    /// (HTTP; repeatable)
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// Do not watch the plugin directory for changes
    #[arg(long)]
    no_watch: bool,
    /// After SIGTERM, keep serving new requests this long while /readyz
    /// already answers 503, so a load balancer takes the replica out of
    /// rotation first (HTTP; at least its check interval times its fall
    /// count)
    #[arg(long, value_name = "MS", default_value_t = 0, requires = "http")]
    drain_delay_ms: u64,
    /// After SIGTERM (and the drain delay), how long calls in flight get to
    /// finish before they are cut off and the process exits 1 (HTTP)
    #[arg(long, value_name = "MS", default_value_t = 30_000, requires = "http")]
    drain_grace_ms: u64,
    /// Sign the approval state of 2026-07-28 clients with the key in this
    /// file (at least 32 bytes; the same file on every replica). Default:
    /// the CORRAL_STATE_KEY environment variable, else a key generated for
    /// this process (one replica only)
    #[arg(long, value_name = "FILE")]
    state_key_file: Option<PathBuf>,
    /// Progressive disclosure: list facades that unfold into their tools
    /// instead of every tool: one per plugin, one per category, or those of
    /// the plugin directory's disclosure.toml
    #[arg(long, value_name = "SOURCE", value_enum)]
    disclose: Option<Disclose>,
    #[command(flatten)]
    gates: GateArgs,
    #[command(flatten)]
    tasks: super::tasks::TaskArgs,
}

impl ServeCmd {
    /// Runs the subcommand until the client disconnects (stdio) or the
    /// process gets Ctrl-C / SIGTERM and has drained (HTTP): exit status 1
    /// when the drain cut calls off.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let context = self.gates.call_context();
        let disclosure = match self.disclose {
            None => corral::DisclosureMode::Off,
            Some(Disclose::Plugin) => corral::DisclosureMode::Plugin,
            Some(Disclose::Category) => corral::DisclosureMode::Category,
            Some(Disclose::File) => corral::DisclosureMode::File,
        };
        if self.permissive && self.http.is_some_and(|addr| !addr.ip().is_loopback()) {
            anyhow::bail!(
                "--permissive learning serves only on loopback or stdio: it lets the plugin \
                 write and reach what its policy does not grant; bind 127.0.0.1"
            );
        }
        let origins = self
            .origin
            .iter()
            .map(|o| corral::HostPattern::parse(o).map_err(|e| anyhow::anyhow!("--origin {e}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let store = self.tasks.store()?;
        let quotas = match &self.quotas {
            Some(path) => Some(corral::QuotaRules::from_file(path)?),
            None => None,
        };
        let tenants = match &self.tokens {
            Some(path) => Some(Arc::new(corral_mcp::tokens::TokenTenants::from_file(path)?)),
            None => None,
        };
        let host = global
            .host_with(|b| {
                let mut b = b;
                if let Some(dir) = super::replay::dir_of(global) {
                    b = b.recordings(
                        corral::replay::RecordingsConfig::new(dir)
                            .with_accept_changes(self.accept_changes),
                    );
                }
                if let Some(rules) = quotas {
                    b = b.quotas(rules);
                }
                if !self.learn.is_empty() {
                    tracing::warn!(
                        plugins = ?self.learn,
                        "learning runs: these plugins also get an empty read-only `/`"
                    );
                    b = b.learning(self.learn.iter().cloned());
                    if self.permissive {
                        eprintln!(
                            "corral: PERMISSIVE LEARNING RUNS of {}: scratch copies of their \
                             directories, a writable `/`, HTTP only to the --origin values",
                            self.learn.join(", ")
                        );
                        b = b.learning_permissive(origins);
                    }
                }
                // Quotas of the host and of plugins' policies alike.
                if self.tasks.shared() {
                    b = b.shared_store(store.clone());
                }
                Ok(self
                    .gates
                    .configure(b, &global.replica_id())?
                    .context(context)
                    .disclosure(disclosure)
                    // Answer at once with what is cached; compile the rest
                    // in the background and announce it with list_changed.
                    .serve_while_compiling(true))
            })
            .await?;
        for err in host.load_errors() {
            tracing::error!("not serving {err}");
        }
        let _watcher = if self.no_watch {
            None
        } else {
            Some(host.watch().context("cannot watch the plugin directory")?)
        };
        let stats = host.clone();
        let server = match self.state_key()? {
            Some(key) => McpServer::new(host)
                .with_state_key(&key, corral_mcp::approval::DEFAULT_STATE_TTL)
                .context("cannot use the request-state key")?,
            None => {
                if self.http.is_some() {
                    tracing::info!(
                        "approval and disclosure state is signed with a key made for this \
                         process; replicas behind a load balancer need one key \
                         (--state-key-file or CORRAL_STATE_KEY)"
                    );
                }
                McpServer::new(host)
            }
        };
        let server = self
            .tasks
            .apply(server, store)
            .with_record_on_request(self.record_on_request);
        match self.http {
            None => serve_stdio(server).await?,
            Some(addr) => {
                let token = match &self.token_file {
                    None => None,
                    Some(path) => Some(
                        std::fs::read_to_string(path)
                            .with_context(|| {
                                format!("cannot read the token file {}", path.display())
                            })?
                            .trim()
                            .to_string(),
                    )
                    .filter(|t| !t.is_empty()),
                };
                if self.token_file.is_some() && token.is_none() {
                    anyhow::bail!("the token file is empty; put a secret in it");
                }
                if !addr.ip().is_loopback() && token.is_none() && tenants.is_none() {
                    // Printed whatever the log level: an operator must see it.
                    eprintln!(
                        "corral: warning: serving MCP on {addr}, reachable beyond this \
                         machine, without a bearer token: anyone who can connect may call \
                         every tool; pass --token-file FILE"
                    );
                }
                let options = HttpOptions {
                    allowed_hosts: self.allow_host,
                    allowed_origins: self.allow_origin,
                    token,
                    tenants,
                };
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr}"))?;
                let bound = listener.local_addr()?;
                // The first signal starts the drain, a second one ends it;
                // installed before the address is announced, so a signal
                // sent once it is seen drains.
                let (first, second) = signals();
                // One line on stderr a supervisor or test can wait for,
                // written with a single `write_all` so that a reader polling
                // the log never sees half of the address (an unbuffered
                // `eprintln!` writes each format piece separately).
                announce(&format!("corral: serving MCP at http://{bound}/mcp\n"));
                let drain = corral_mcp::ops::DrainOptions {
                    delay: Duration::from_millis(self.drain_delay_ms),
                    grace: Duration::from_millis(self.drain_grace_ms),
                    ..Default::default()
                };
                let report = corral_mcp::http::serve(
                    listener,
                    server,
                    &options,
                    install_metrics(stats)?,
                    drain,
                    first,
                    second,
                )
                .await?;
                if report.cut > 0 {
                    announce(&format!(
                        "corral: drained in {:.1} s; {} request(s) still in flight were cut off \
                         (raise --drain-grace-ms if calls need longer)\n",
                        report.took.as_secs_f64(),
                        report.cut
                    ));
                    return Ok(ExitCode::FAILURE);
                }
                announce(&format!(
                    "corral: drained in {:.1} s; every request in flight finished\n",
                    report.took.as_secs_f64()
                ));
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// Where `--disclose` takes its facades from.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Disclose {
    /// One facade per plugin (and one for the pipelines)
    Plugin,
    /// One facade per tool category
    Category,
    /// The facades declared in the plugin directory's disclosure.toml
    File,
}

impl ServeCmd {
    /// The request-state signing key: `--state-key-file`, else
    /// `CORRAL_STATE_KEY`, trimmed; `None` for a generated one.
    fn state_key(&self) -> anyhow::Result<Option<Vec<u8>>> {
        let text = match &self.state_key_file {
            Some(path) => std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the state key file {}", path.display()))?,
            None => match std::env::var("CORRAL_STATE_KEY") {
                Ok(text) => text,
                Err(std::env::VarError::NotPresent) => return Ok(None),
                Err(std::env::VarError::NotUnicode(_)) => anyhow::bail!(
                    "CORRAL_STATE_KEY is not UTF-8 text; set it to printable random text \
                     such as 64 hex digits"
                ),
            },
        };
        Ok(Some(text.trim().as_bytes().to_vec()))
    }
}

/// Installs the Prometheus recorder behind `/metrics`. Each scrape first
/// sets the gauges of `host`'s runtime state ([`corral::RuntimeStats`]):
/// `corral_tool_states`, `corral_cached_results`, `corral_tenant_budgets`,
/// `corral_instances_in_use` and `corral_change_subscribers`, so an operator
/// sees what the resilience layers, the instance pool and the sessions'
/// `list_changed` listeners hold, and sees a removed plugin's state go.
/// The window of `corral_unused_grants`: 30 days.
const UNUSED_WINDOW: Duration = Duration::from_secs(30 * 86_400);

/// Tenants named in `corral_tenant_used`; the rest are `other`: 10.
const TOP_TENANTS: usize = 10;

/// `corral_tenant_used{tenant, kind}` in Prometheus text: the top tenants
/// by use and `other` (labels are already safe: `corral::TenantUsage`).
/// Printed beside the recorder's text, not registered with it, so a tenant
/// that leaves the top leaves no series behind.
fn tenant_usage(usage: &corral::TenantUsage) -> String {
    use std::fmt::Write as _;
    let kinds = ["calls", "fuel", "wall_ms", "egress_bytes"];
    let mut text = String::from(
        "# HELP corral_tenant_used What the top tenants used on this replica since it started \
         (calls quotas apply to), and everyone else as \"other\"\n\
         # TYPE corral_tenant_used gauge\n",
    );
    let rows = usage
        .top
        .iter()
        .map(|(tenant, used)| (tenant.as_str(), used))
        .chain(std::iter::once(("other", &usage.other)));
    for (tenant, used) in rows {
        for (kind, n) in kinds.iter().zip(used) {
            let _ = writeln!(
                text,
                "corral_tenant_used{{tenant=\"{tenant}\",kind=\"{kind}\"}} {n}"
            );
        }
    }
    text
}

fn install_metrics(host: corral::Host) -> anyhow::Result<Option<MetricsRender>> {
    let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets(&[
            0.000_1, 0.000_5, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0,
        ])
        .context("histogram buckets")?
        .install_recorder()
        .context("cannot install the metrics recorder")?;
    let render: MetricsRender = Arc::new(move || {
        let stats = host.runtime_stats();
        metrics::gauge!("corral_tool_states").set(stats.tool_states as f64);
        metrics::gauge!("corral_cached_results").set(stats.cached_results as f64);
        metrics::gauge!("corral_tenant_budgets").set(stats.tenant_budgets as f64);
        metrics::gauge!("corral_instances_in_use").set(stats.instances_in_use as f64);
        metrics::gauge!("corral_change_subscribers").set(stats.change_subscribers as f64);
        // Grants no call used in 30 days, per plugin (a dashboard alerts
        // on a plugin that keeps more than it needs).
        let catalog = host.catalog();
        let mut plugins: Vec<&str> = catalog
            .tools()
            .filter_map(|t| t.plugin())
            .map(|p| p.name())
            .collect();
        plugins.sort_unstable();
        plugins.dedup();
        for plugin in plugins {
            if let Ok(Some(unused)) = host.unused_grants(plugin, UNUSED_WINDOW) {
                let n = unused
                    .grants
                    .iter()
                    .filter(|g| g.verdict == corral::UnusedVerdict::Unused)
                    .count();
                metrics::gauge!("corral_unused_grants", "plugin" => plugin.to_string())
                    .set(n as f64);
            }
        }
        let mut text = handle.render();
        text.push_str(&tenant_usage(&host.tenant_usage(TOP_TENANTS)));
        text
    });
    Ok(Some(render))
}

/// Two futures: the first resolves on the first Ctrl-C or SIGTERM, the
/// second on the one after it. The handlers are installed before this
/// returns, so a signal from then on drains instead of killing.
fn signals() -> (
    impl Future<Output = ()> + Send + 'static,
    impl Future<Output = ()> + Send + 'static,
) {
    use tokio::signal::unix::{SignalKind, signal};
    let (first_tx, first_rx) = tokio::sync::oneshot::channel::<()>();
    let (second_tx, second_rx) = tokio::sync::oneshot::channel::<()>();
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut terminate), Ok(mut interrupt)) => {
            tokio::spawn(async move {
                for sender in [first_tx, second_tx] {
                    tokio::select! {
                        _ = terminate.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                    let _ = sender.send(());
                }
            });
        }
        _ => {
            tracing::warn!("cannot listen for SIGTERM and SIGINT: stop the server with SIGKILL");
            // Never resolve: keep the senders for the life of the process.
            std::mem::forget((first_tx, second_tx));
        }
    }
    (
        async move {
            let _ = first_rx.await;
        },
        async move {
            let _ = second_rx.await;
        },
    )
}

/// Writes one whole line to stderr in a single `write_all`; a failed write
/// (a closed stderr) is ignored, as the server keeps serving without it.
fn announce(line: &str) {
    use std::io::Write as _;
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
