//! Argument parsing, logging setup and dispatch to one struct per subcommand.
//!
//! Output: everything on stdout goes through [`outln!`] and [`out!`], which
//! return the write's error instead of panicking, and a closed pipe (`corral
//! describe x --json | head -1`) ends the process quietly with exit code 0,
//! as ripgrep does. Guest text is escaped on a terminal
//! ([`corral::untrusted_text`]); JSON output always has the characters that
//! could drive a terminal written as JSON escapes, so it stays valid JSON.

/// `println!` on stdout that returns the `std::io::Result` of the write.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

/// `print!` on stdout that returns the `std::io::Result` of the write.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*)
    }};
}

mod call;
mod code;
mod describe;
mod dist;
mod evidence;
mod gates;
mod inspect;
mod list;
mod new;
mod output;
mod parts;
mod plan;
mod policy;
mod pull_gate;
mod replay;
mod report;
mod secret;
mod serve;
mod sign;
mod tasks;
mod telemetry;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{ArgAction, Args, Parser, Subcommand};
use corral::{ComponentCache, Host, HostBuilder, HostError, Limits, PoolConfig};
use output::is_broken_pipe;
pub use output::{flag_hint, for_stdout, print_json};

/// Exit code when the tool failed.
pub const EXIT_TOOL_FAILED: u8 = 1;
/// Exit code when corral itself failed.
pub const EXIT_CORRAL_FAILED: u8 = 2;

/// Run untrusted LLM tools, compiled to WebAssembly components, in a sandbox.
#[derive(Parser, Debug)]
#[command(name = "corral", version, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// Options shared by every subcommand.
#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Directory of plugin components (`*.wasm`) [default: the bundled sample
    /// tools, `<repository>/plugins`]
    #[arg(long, global = true, value_name = "DIR", env = "CORRAL_PLUGINS")]
    pub plugins: Option<PathBuf>,
    /// Read each plugin's policy (NAME.policy.toml) from this directory
    /// instead of beside the plugin, e.g. a Kubernetes ConfigMap; watched
    /// too [default: beside each plugin]
    #[arg(long, global = true, value_name = "DIR", env = "CORRAL_POLICY_DIR")]
    pub policy_dir: Option<PathBuf>,
    /// Wall-clock deadline per call, in milliseconds
    #[arg(long, global = true, value_name = "MS", default_value_t = Limits::DEFAULT_TIMEOUT_MS)]
    timeout_ms: u64,
    /// Fuel budget per call, in fuel units (about one per wasm instruction)
    #[arg(long, global = true, value_name = "UNITS", default_value_t = Limits::DEFAULT_FUEL)]
    fuel: u64,
    /// Linear-memory cap per call, in MiB
    #[arg(long, global = true, value_name = "MIB", default_value_t = Limits::DEFAULT_MEMORY_BYTES >> 20)]
    memory_mib: usize,
    /// Cap on a tool's result text, in KiB
    #[arg(long, global = true, value_name = "KIB", default_value_t = Limits::DEFAULT_OUTPUT_BYTES >> 10)]
    output_kib: usize,
    /// Directory of precompiled components [default: $XDG_CACHE_HOME/corral or
    /// ~/.cache/corral]
    #[arg(long, global = true, value_name = "DIR", env = "CORRAL_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Compile every plugin instead of using the precompiled cache
    #[arg(long, global = true)]
    no_cache: bool,
    /// Where tools' evidence is kept (`policy suggest`, `unused`) [default:
    /// $XDG_STATE_HOME/corral/evidence or ~/.local/state/corral/evidence]
    #[arg(long, global = true, value_name = "DIR", env = "CORRAL_EVIDENCE_DIR")]
    pub evidence_dir: Option<PathBuf>,
    /// Where recorded calls are written (`call --record`, a policy's
    /// `[record]`) [default: $XDG_STATE_HOME/corral/recordings or
    /// ~/.local/state/corral/recordings]
    #[arg(long, global = true, value_name = "DIR", env = "CORRAL_RECORDINGS_DIR")]
    pub recordings_dir: Option<PathBuf>,
    /// The secret store `[[http.credentials]]` take secrets from: a file,
    /// or `keyring` (`keyring:NAME`) for the OS keyring (the kernel keyring
    /// on Linux; a file named so is `./keyring`) [default:
    /// $XDG_CONFIG_HOME/corral/secrets.toml or ~/.config/corral/secrets.toml]
    #[arg(
        long,
        global = true,
        value_name = "FILE|keyring[:NAME]",
        env = "CORRAL_SECRETS"
    )]
    pub secrets: Option<PathBuf>,
    /// Serve the built-in `tool_search` tool (free text, `category:NAME`,
    /// `info:TOOL`, `list`)
    #[arg(long, global = true)]
    tool_search: bool,
    /// Serve only these tool groups (comma-separated names from the plugin
    /// directory's groups.toml), plus the built-in tools
    #[arg(long, global = true, value_name = "GROUP,...", value_delimiter = ',')]
    groups: Vec<String>,
    /// Do not serve tools whose names match this regular expression
    #[arg(long, global = true, value_name = "REGEX")]
    exclude_tools: Option<regex::Regex>,
    /// Component instances alive at once, i.e. calls running at once; more
    /// wait in line for a free one (the wait does not count against
    /// --timeout-ms). Each reserves about 16 GiB of address space, not memory
    #[arg(
        long,
        global = true,
        value_name = "N",
        default_value_t = PoolConfig::default().max_concurrent_instances,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    max_instances: u32,
    /// Instances made ahead of calls for each plugin called in the last
    /// minute (its start-up run before the call arrives; each serves one
    /// call). 0 turns it off: every call instantiates when it arrives
    #[arg(
        long,
        global = true,
        value_name = "N",
        default_value_t = PoolConfig::default().prepared_per_plugin
    )]
    prepared_instances: u32,
    /// Plugin size cap, in MiB: a larger `*.wasm` file does not load, and a
    /// pull refuses a larger component before writing it
    #[arg(long, global = true, value_name = "MIB", default_value_t = corral::DEFAULT_MAX_PLUGIN_BYTES >> 20)]
    max_plugin_mib: u64,
    /// A public key whose signatures the host accepts (a cosign .pub);
    /// repeat for several. Plugins and pulls signed by one of them are shown
    /// as signed
    #[arg(long = "trusted-key", global = true, value_name = "FILE")]
    pub trusted_keys: Vec<PathBuf>,
    /// A Sigstore trusted root (trusted_root.json: certificate authorities
    /// and transparency logs) that keyless signatures are checked against,
    /// offline; repeat for several
    #[arg(long = "trusted-root", global = true, value_name = "FILE")]
    pub trusted_roots: Vec<PathBuf>,
    /// A keyless signer whose signatures the host accepts, under a
    /// --trusted-root: subject=SUBJECT,issuer=ISSUER (the certificate's
    /// email or URI, and the OIDC issuer); repeat for several
    #[arg(
        long = "trusted-identity",
        global = true,
        value_name = "subject=…,issuer=…"
    )]
    pub trusted_identities: Vec<corral::Identity>,
    /// Load and pull only plugins signed by a --trusted-key or a
    /// --trusted-identity
    #[arg(long, global = true)]
    pub require_signatures: bool,
    /// Log more on stderr: default errors only, -v info, -vv debug, -vvv trace
    /// (RUST_LOG overrides)
    #[arg(short, long, global = true, action = ArgAction::Count)]
    verbose: u8,
    /// Export traces (each call and its stages, a plan's steps, MCP
    /// requests) to this OpenTelemetry collector over OTLP/HTTP, at
    /// URL/v1/traces [default: no export]
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "OTEL_EXPORTER_OTLP_ENDPOINT"
    )]
    otlp_endpoint: Option<String>,
    /// Names this process in audit records and traces, e.g. a pod's name
    /// [default: the host name]
    #[arg(long, global = true, value_name = "ID", env = "CORRAL_REPLICA_ID")]
    replica_id: Option<String>,
}

impl GlobalArgs {
    /// This process's replica id: `--replica-id` (or `CORRAL_REPLICA_ID`),
    /// else the host name (a pod's name in Kubernetes), else `corral`.
    pub fn replica_id(&self) -> String {
        self.replica_id
            .clone()
            .or_else(|| {
                std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .ok()
                    .map(|h| h.trim().to_string())
            })
            .or_else(|| std::env::var("HOSTNAME").ok())
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| "corral".to_string())
    }

    fn limits(&self) -> anyhow::Result<Limits> {
        Ok(Limits::default()
            .with_fuel(self.fuel)
            .with_timeout_ms(self.timeout_ms)
            .with_memory_bytes(
                self.memory_mib
                    .checked_mul(1 << 20)
                    .context("--memory-mib is too large")?,
            )
            .with_output_bytes(
                self.output_kib
                    .checked_mul(1 << 10)
                    .context("--output-kib is too large")?,
            ))
    }

    /// The precompiled-component cache these options ask for.
    pub fn cache(&self) -> ComponentCache {
        match (&self.cache_dir, self.no_cache) {
            (_, true) => ComponentCache::disabled(),
            (Some(dir), false) => ComponentCache::in_dir(dir),
            (None, false) => ComponentCache::user_default(),
        }
    }

    /// The plugin directory these options name.
    pub fn plugin_dir(&self) -> PathBuf {
        self.plugins.clone().unwrap_or_else(bundled_plugin_dir)
    }

    /// The plugin size cap, in bytes.
    pub fn max_plugin_bytes(&self) -> u64 {
        self.max_plugin_mib.saturating_mul(1 << 20)
    }

    /// The signature requirement these options name.
    pub fn trust(&self) -> anyhow::Result<corral::Trust> {
        let keys = self
            .trusted_keys
            .iter()
            .map(|path| corral::PublicKey::read(path))
            .collect::<Result<Vec<_>, _>>()?;
        let roots = self
            .trusted_roots
            .iter()
            .map(|path| corral::TrustedRoot::read(path))
            .collect::<Result<Vec<_>, _>>()?;
        if self.require_signatures && keys.is_empty() && self.trusted_identities.is_empty() {
            anyhow::bail!(
                "--require-signatures needs at least one --trusted-key FILE or \
                 --trusted-identity subject=…,issuer=…"
            );
        }
        if !self.trusted_identities.is_empty() && roots.is_empty() {
            anyhow::bail!(
                "--trusted-identity needs a --trusted-root FILE (a Sigstore trusted_root.json) \
                 to check keyless signatures against"
            );
        }
        Ok(corral::Trust::new(
            keys,
            roots,
            self.trusted_identities.clone(),
            self.require_signatures,
        ))
    }

    /// The secret store these options name.
    pub fn secret_store(&self) -> corral::SecretStore {
        match self.secrets.as_deref().and_then(|p| p.to_str()) {
            Some("keyring") => corral::SecretStore::keyring("secrets"),
            Some(spec) if spec.starts_with("keyring:") => {
                corral::SecretStore::keyring(&spec["keyring:".len()..])
            }
            _ => self
                .secrets
                .clone()
                .map_or_else(corral::SecretStore::user_default, corral::SecretStore::at),
        }
    }

    /// Builds the host from these options.
    pub async fn host(&self) -> anyhow::Result<Host> {
        self.host_with(Ok).await
    }

    /// Builds the host from these options and whatever `configure` adds.
    pub async fn host_with(
        &self,
        configure: impl FnOnce(HostBuilder) -> anyhow::Result<HostBuilder>,
    ) -> anyhow::Result<Host> {
        let dir = self.plugin_dir();
        let mut builder = Host::builder()
            .plugin_dir(&dir)
            .max_plugin_bytes(self.max_plugin_bytes())
            .trust(self.trust()?)
            .limits(self.limits()?)
            .cache(self.cache())
            .pool(
                PoolConfig::default()
                    .with_max_concurrent_instances(self.max_instances)
                    .with_prepared(
                        self.prepared_instances,
                        PoolConfig::default().prepared_total,
                    ),
            )
            .secrets(self.secret_store())
            .tool_search(self.tool_search)
            .groups(self.groups.iter().cloned());
        if let Some(pattern) = &self.exclude_tools {
            builder = builder.exclude_tools(pattern.clone());
        }
        if let Some(dir) = &self.policy_dir {
            builder = builder.policy_dir(dir);
        }
        if let Some(dir) = evidence::dir_of(self) {
            builder = builder.evidence_dir(dir);
        }
        if let Some(dir) = replay::dir_of(self) {
            builder = builder.recordings(corral::replay::RecordingsConfig::new(dir));
        }
        let host = configure(builder)?.build().await.map_err(|err| match err {
            HostError::PluginDir { .. } => anyhow::Error::new(err).context(format!(
                "no plugins at {} (build the sample tools with scripts/build-guests.sh, \
                     or pass --plugins DIR)",
                dir.display()
            )),
            other => anyhow::Error::new(other),
        })?;
        Ok(host)
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List every loaded tool
    List(list::ListCmd),
    /// Show one tool's description, metadata and argument schema
    Describe(describe::DescribeCmd),
    /// Call a tool inside the sandbox
    Call(call::CallCmd),
    /// Run recorded calls again offline, or a new build against them
    Replay(replay::ReplayCmd),
    /// Run a plan of tool calls in parallel waves (`execute_tool_plan`)
    Plan(plan::PlanCmd),
    /// Run a JavaScript script that calls tools (`execute_code`)
    Code(code::CodeCmd),
    /// Validate plugin policies and show what each plugin is granted
    Policy(policy::PolicyCmd),
    /// Serve every tool to MCP clients (stdio, or streamable HTTP with --http)
    Serve(serve::ServeCmd),
    /// Show each tool's health (UP, DEGRADED, DOWN, UNKNOWN)
    Health(report::HealthCmd),
    /// Show the tools' dependency graph (--dot for Graphviz)
    Graph(report::GraphCmd),
    /// Write the tool manifest (JSON)
    Manifest(report::ManifestCmd),
    /// Show what a component file is and offers, without running it: world,
    /// imports, tools
    Inspect(inspect::InspectCmd),
    /// Keep secrets for plugins in the secret store (values never printed)
    Secret(secret::SecretCmd),
    /// Fetch a plugin from an OCI registry (oci://...) into the plugin directory
    Pull(dist::PullCmd),
    /// Publish a component, with its policy, to an OCI registry
    Push(dist::PushCmd),
    /// Create a tool project (rust, python, js or c) that builds and tests
    /// itself
    New(new::NewCmd),
    /// Make signing keys (cosign's formats)
    Key(sign::KeyCmd),
    /// Sign a component (FILE.wasm.sig, or with --bundle a Sigstore bundle
    /// FILE.wasm.sigstore.json, as cosign sign-blob writes them)
    Sign(sign::SignCmd),
    /// Check a component's signature against the trusted keys, roots and
    /// identities, and say who signed it
    Verify(sign::VerifyCmd),
}

/// The stderr log's filter at the level `-v` asks for (`RUST_LOG`
/// overrides it).
///
/// At the default verbosity a command that prints each call's outcome itself
/// (`call`, `plan`, ...) turns the per-call log ([`corral::CALL_LOG_TARGET`])
/// off, so a configuration error is not reported twice; `serve` keeps it,
/// since there the outcome goes to the client and the log is the operator's
/// only view.
fn log_filter(verbose: u8, prints_outcomes: bool) -> String {
    match verbose {
        0 if prints_outcomes => format!("error,{}=off", corral::CALL_LOG_TARGET),
        0 => "error".to_owned(),
        1 => "info".to_owned(),
        2 => "debug".to_owned(),
        _ => "trace".to_owned(),
    }
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let prints_outcomes = !matches!(cli.command, Command::Serve(_));
    let telemetry = match telemetry::init(
        &log_filter(cli.global.verbose, prints_outcomes),
        cli.global.otlp_endpoint.as_deref(),
        &cli.global.replica_id(),
    ) {
        Ok(telemetry) => telemetry,
        Err(err) => {
            eprintln!("error: {err:#}");
            return ExitCode::from(EXIT_CORRAL_FAILED);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::from(EXIT_CORRAL_FAILED);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::List(cmd) => cmd.run(&cli.global).await,
            Command::Describe(cmd) => cmd.run(&cli.global).await,
            Command::Call(cmd) => cmd.run(&cli.global).await,
            Command::Plan(cmd) => cmd.run(&cli.global).await,
            Command::Replay(cmd) => cmd.run(&cli.global).await,
            Command::Code(cmd) => cmd.run(&cli.global).await,
            Command::Policy(cmd) => cmd.run(&cli.global).await,
            Command::Serve(cmd) => cmd.run(&cli.global).await,
            Command::Health(cmd) => cmd.run(&cli.global).await,
            Command::Graph(cmd) => cmd.run(&cli.global).await,
            Command::Manifest(cmd) => cmd.run(&cli.global).await,
            Command::Inspect(cmd) => cmd.run(&cli.global).await,
            Command::Secret(cmd) => cmd.run(&cli.global).await,
            Command::Pull(cmd) => cmd.run(&cli.global).await,
            Command::Push(cmd) => cmd.run(&cli.global).await,
            Command::New(cmd) => cmd.run(&cli.global).await,
            Command::Key(cmd) => cmd.run(&cli.global).await,
            Command::Sign(cmd) => cmd.run(&cli.global).await,
            Command::Verify(cmd) => cmd.run(&cli.global).await,
        }
    });
    // The spans of the command's calls, before the runtime goes.
    telemetry.shutdown();
    match result {
        Ok(code) => code,
        // The reader went away (`| head`): nothing left to say to anyone.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(EXIT_CORRAL_FAILED)
        }
    }
}

/// The plugin directory that holds the bundled sample tools, as built by
/// `scripts/build-guests.sh`: `<repository>/plugins` (a path fixed when the
/// binary is built, for running from a checkout).
pub fn bundled_plugin_dir() -> PathBuf {
    let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .ancestors()
        .nth(2)
        .unwrap_or(crate_dir)
        .join("plugins")
}
