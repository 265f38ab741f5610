//! The loader: finds `*.wasm` files in the plugin directory, reads each one
//! within the size cap (`ComponentCache::plugin_file`: on a warm start its
//! digest memo answers for the bytes of an unchanged file) with its policy
//! ([`crate::config::policy`]), checks its integrity pin and its `corral.lock` entry
//! ([`crate::config::lock`]), compiles them in
//! parallel, largest first, one worker per core (`parallel.rs`; through the
//! [`ComponentCache`]), links them against the sandbox's
//! imports into an `InstancePre`, and runs each plugin's `describe` once inside
//! the sandbox: concurrently (so N slow plugins cost about one `describe`
//! deadline), each holding a slot of the same instance pool as calls (so a
//! reload under full load waits for a slot instead of exceeding the pool),
//! under the plugin's describe limits, then checks the output against the
//! [`DescribeCaps`]. A file that fails any step becomes a [`LoadError`] naming
//! the file and the reason; the others load regardless. On a reload, a plugin
//! whose bytes, policy text and WIT beside it are unchanged is reused as it
//! is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Semaphore;
use wasmtime::component::Linker;

use crate::config::caps::DescribeCaps;
use crate::config::policy::{Policy, PolicyError};
use crate::loader::error::{LoadError, LoadErrorReason};
use corral_sandbox::Engine;
use corral_sandbox::Limits;
use corral_sandbox::RawSpec;
use corral_sandbox::{CacheOutcome, ComponentCache};
use corral_sandbox::{PluginPre, SandboxState};

mod checks;
mod describe;
mod dir;
pub(crate) mod error;
pub(crate) mod inspect;
mod parallel;
pub(crate) mod plugin;
pub(crate) mod signature;

use crate::loader::plugin::Plugin;
use describe::describe;
pub use dir::plugin_files;

/// A plugin and the specs its `describe` returned.
pub(crate) type Described = (Arc<Plugin>, Vec<RawSpec>);

/// The limits the loader needs: for `describe` (before a policy's
/// `[describe]`), the caps on what it declares, and the maximums a policy may
/// not exceed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoadLimits {
    pub describe: Limits,
    pub caps: DescribeCaps,
    pub max: Limits,
    /// Which resilience layers the host runs.
    pub switches: crate::config::resilience::ResilienceSwitches,
    /// The host's default limits of a call (before each plugin's policy).
    pub call: Limits,
    /// The pool every call runs in.
    pub pool: corral_sandbox::PoolConfig,
    /// Whether components of other worlds load in any-component mode.
    pub any_component: bool,
    /// The plugin size cap, in bytes (`ComponentCache::plugin_file`).
    pub max_plugin_bytes: u64,
}

/// What a compile task produced.
enum Compiled {
    /// Bytes and policy unchanged since the previous load.
    Reused(Described),
    Fresh(Box<Plugin>),
    /// Not in the component cache, and this load serves what is cached
    /// first: left for the next load.
    Deferred,
}

/// What every file of one load is compiled with.
struct Job {
    engine: Engine,
    linker: Arc<Linker<SandboxState>>,
    cache: ComponentCache,
    limits: LoadLimits,
    inputs: Arc<Inputs>,
}

/// Reads the policy, reads and checks the bytes, and compiles and links one
/// file, unless `previous` holds the same bytes under the same policy. Runs on
/// a blocking thread. The digest memo of the component cache may answer for
/// the bytes ([`ComponentCache::plugin_file`]); when a later step needs them
/// after all (the cache entry went since), the file is taken again from the
/// start, read.
fn compile_one(
    job: &Job,
    path: &Path,
    previous: Option<&Described>,
) -> Result<Compiled, LoadErrorReason> {
    for need_bytes in [false, true] {
        if let Some(done) = compile_from(job, path, previous, need_bytes)? {
            return Ok(done);
        }
    }
    Err(LoadErrorReason::Internal(
        "its bytes were read and still found missing".into(),
    ))
}

/// [`compile_one`], with the bytes read (`need_bytes`) or, where the digest
/// memo answers, not. `Ok(None)`: a step needed the bytes that were not
/// read.
fn compile_from(
    job: &Job,
    path: &Path,
    previous: Option<&Described>,
    need_bytes: bool,
) -> Result<Option<Compiled>, LoadErrorReason> {
    let Job {
        engine,
        linker,
        cache,
        limits,
        inputs,
    } = job;
    let secrets = &inputs.secrets;
    let policy_file = crate::config::policy::policy_path_in(path, inputs.policy_dir.as_deref());
    let policy_source =
        corral_files::read_text(&policy_file, corral_files::Kind::Policy).map_err(|err| {
            LoadErrorReason::Policy(PolicyError::Read {
                path: policy_file.clone(),
                message: err.reason(),
            })
        })?;
    // Parsed before the bytes are read, since whether they must be read
    // depends on it (signature evidence); its error is reported after
    // theirs and the lock's, as ever.
    let parsed = match &policy_source {
        None => Ok(Policy::none()),
        Some(text) => Policy::parse(text, &policy_file),
    };
    let signature_stamp = parsed
        .as_ref()
        .ok()
        .map(|policy| crate::loader::signature::stamp(path, &policy.signed_by));
    let need_bytes = need_bytes || !matches!(signature_stamp, Some(None));
    let file = cache.plugin_file(engine, path, limits.max_plugin_bytes, need_bytes)?;
    let sha256 = file.sha256;
    checks::lock(inputs, path, &sha256)?;
    let docs_stamp = corral_sandbox::sidecar_stamp(path);
    let secrets_stamp = crate::config::secrets::stamp(policy_source.as_deref(), secrets);
    let policy = parsed.map_err(LoadErrorReason::Policy)?;
    let signature_stamp = signature_stamp.flatten();
    if let Some((plugin, specs)) = previous
        && plugin.sha256 == sha256
        && plugin.policy_source == policy_source
        && plugin.docs_stamp == docs_stamp
        && plugin.secrets_stamp == secrets_stamp
        && plugin.signature_stamp == signature_stamp
    {
        return Ok(Some(Compiled::Reused((plugin.clone(), specs.clone()))));
    }
    if policy_source.is_none() && crate::config::policy::requested_policy_path(path).exists() {
        tracing::warn!(
            plugin = ?path,
            "it runs with nothing granted: the policy its publisher requests is not accepted"
        );
    }
    // Unread only when no signature evidence exists beside it: then no
    // signature compares bytes.
    let bytes = file.bytes.as_deref();
    let signed = checks::integrity(
        &policy,
        path,
        bytes.unwrap_or_default(),
        &sha256,
        &inputs.trust,
    )?;
    checks::within_maximums(&policy, &limits.max)?;
    if inputs.defer_uncached && !cache.has_entry(engine, &sha256) {
        return Ok(Some(Compiled::Deferred));
    }
    let started = Instant::now();
    let (component, outcome) = match bytes {
        Some(bytes) => corral_sandbox::compile(engine, cache, bytes, &sha256)?,
        None => match corral_sandbox::compile_cached(engine, cache, &sha256) {
            Some(component) => (component, CacheOutcome::Hit),
            None => return Ok(None),
        },
    };
    tracing::debug!(
        plugin = ?path,
        cached = outcome == CacheOutcome::Hit,
        ms = started.elapsed().as_secs_f64() * 1e3,
        "component ready"
    );
    let instance_pre = linker.instantiate_pre(&component).map_err(|e| {
        let missing = corral_sandbox::missing_imports(engine.wasmtime(), &component);
        LoadErrorReason::UnsatisfiedImports(if missing.is_empty() {
            format!("{e:#}")
        } else {
            let next = if missing.iter().any(|m| m.contains("@0.3")) {
                "; WASI 0.3 interfaces are not served yet, build it for WASI 0.2"
            } else {
                ""
            };
            format!(
                "it imports interfaces corral does not provide: {}{next} ({e:#})",
                missing.join(", ")
            )
        })
    })?;
    let pre = match PluginPre::new(instance_pre.clone()) {
        Ok(pre) => pre,
        Err(err) if limits.any_component && policy.any_component => {
            // Unread (the memo answered): read now, and used if they are
            // still what was compiled.
            let read;
            let bytes = match bytes {
                Some(bytes) => bytes,
                None => {
                    read = cache.plugin_file(engine, path, limits.max_plugin_bytes, true)?;
                    match read.bytes.as_deref() {
                        Some(bytes) if read.sha256 == sha256 => bytes,
                        _ => return Ok(None),
                    }
                }
            };
            let foreign =
                corral_sandbox::Foreign::inspect(engine.wasmtime(), &component, bytes, path)
                    .map_err(LoadErrorReason::WrongWorld)?;
            // At most SHOWN_SKIPPED of them in the log and the error: a
            // component may export a great many.
            const SHOWN_SKIPPED: usize = 20;
            for skipped in foreign.skipped.iter().take(SHOWN_SKIPPED) {
                tracing::info!(
                    plugin = ?path,
                    export = skipped.export,
                    "not a tool: {}",
                    skipped.reason
                );
            }
            let more = foreign.skipped.len().saturating_sub(SHOWN_SKIPPED);
            if more > 0 {
                tracing::info!(plugin = ?path, "and {more} more exports that are not tools");
            }
            if foreign.exports.is_empty() {
                let mut skipped: Vec<String> = foreign
                    .skipped
                    .iter()
                    .take(SHOWN_SKIPPED)
                    .map(|s| format!("`{}`: {}", s.export, s.reason))
                    .collect();
                if more > 0 {
                    skipped.push(format!("and {more} more"));
                }
                return Err(LoadErrorReason::WrongWorld(format!(
                    "{}; and served in any-component mode it offers no tool ({})",
                    err.root_cause(),
                    if skipped.is_empty() {
                        "it exports no function".to_string()
                    } else {
                        skipped.join("; ")
                    }
                )));
            }
            PluginPre::Any(instance_pre, Arc::new(foreign))
        }
        Err(err) => {
            let why = if limits.any_component {
                "its policy forbids any-component mode (`any_component = false`)"
            } else {
                "the host does not serve components of other worlds"
            };
            return Err(LoadErrorReason::WrongWorld(format!(
                "{}; it does not target corral:tool/plugin, and {why}",
                err.root_cause()
            )));
        }
    };
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let grants = crate::config::policy::grants(&policy, &name, secrets).map_err(|message| {
        LoadErrorReason::Policy(PolicyError::Rejected {
            path: policy_file.clone(),
            message,
        })
    })?;
    let describe_limits = match policy.describe.timeout_ms {
        Some(ms) => limits.describe.with_timeout_ms(ms),
        None => limits.describe,
    };
    let sampling_budget = grants
        .client
        .sampling
        .and_then(|s| s.tokens_per_hour)
        .map(|tokens| Arc::new(crate::call::resilience::limiter::Limiter::sampling(tokens)));
    Ok(Some(Compiled::Fresh(Box::new(Plugin {
        caps: policy.describe.apply(limits.caps),
        describe_limits,
        sampling_budget,
        path: path.to_path_buf(),
        name: name.into(),
        sha256,
        pre,
        policy: Arc::new(policy),
        policy_source,
        docs_stamp,
        secrets_stamp,
        signature_stamp,
        signed,
        grants,
    }))))
}

/// What loading plugins needs from the host.
pub(crate) struct LoadContext<'a> {
    pub engine: &'a Engine,
    pub linker: &'a Arc<Linker<SandboxState>>,
    pub cache: &'a ComponentCache,
    pub plugin_dir: Option<&'a Path>,
    /// Where policies are read from instead of beside each plugin
    /// ([`HostBuilder::policy_dir`](crate::HostBuilder::policy_dir)).
    pub policy_dir: Option<&'a Path>,
    pub limits: LoadLimits,
    /// The instance pool's slots, shared with calls.
    pub permits: &'a Arc<Semaphore>,
    /// Where `[[http.credentials]]` find their secrets; `None`: nowhere.
    pub secrets: Option<&'a crate::config::secrets::SecretStore>,
    /// Load only plugins whose compiled form the component cache holds; the
    /// others are answered as deferred, for a later load (serving before
    /// compiling).
    pub defer_uncached: bool,
    /// The host's signature requirement.
    pub trust: &'a crate::loader::signature::Trust,
    /// The recordings the update gate replays (`[record] gate_updates`);
    /// `None`: no gate.
    pub gate: Option<&'a crate::replay::Recordings>,
}

/// What every plugin of one load is checked against, read once per load.
struct Inputs {
    /// The secret store's contents.
    secrets: BTreeMap<String, String>,
    /// The directory's `corral.lock`, or why it cannot be read.
    lock: Result<Option<crate::config::lock::Lock>, String>,
    /// [`LoadContext::defer_uncached`].
    defer_uncached: bool,
    /// The host's signature requirement.
    trust: crate::loader::signature::Trust,
    /// [`LoadContext::policy_dir`].
    policy_dir: Option<PathBuf>,
}

/// Compiles every file in parallel (reusing what `previous` already holds
/// unchanged), then describes every new plugin in the sandbox, concurrently,
/// each under its describe limits and holding a pool slot. Returns the
/// described plugins in file order, the files that failed, and those
/// deferred.
pub(crate) async fn load_files(
    ctx: &LoadContext<'_>,
    files: Vec<PathBuf>,
    previous: &std::collections::BTreeMap<PathBuf, Described>,
) -> Loaded {
    // Read once per load; a plugin whose credentials need a secret the
    // store lacks fails with the secret's name.
    let secrets = match ctx.secrets.map(crate::config::secrets::SecretStore::load) {
        None => BTreeMap::new(),
        Some(Ok(secrets)) => secrets,
        Some(Err(err)) => {
            tracing::error!("{err}; plugins whose policies use secrets will not load");
            BTreeMap::new()
        }
    };
    // Read once per load too: a locked plugin loads only with the digest
    // it was pulled with.
    let lock = ctx
        .plugin_dir
        .map_or(Ok(None), crate::config::lock::Lock::read)
        .map_err(|e| e.to_string());
    let inputs = Arc::new(Inputs {
        secrets,
        lock,
        defer_uncached: ctx.defer_uncached,
        trust: ctx.trust.clone(),
        policy_dir: ctx.policy_dir.map(Path::to_path_buf),
    });
    let job = Job {
        engine: ctx.engine.clone(),
        linker: ctx.linker.clone(),
        cache: ctx.cache.clone(),
        limits: ctx.limits,
        inputs,
    };
    let previous: BTreeMap<PathBuf, Described> = files
        .iter()
        .filter_map(|path| Some((path.clone(), previous.get(path)?.clone())))
        .collect();
    let mut compiled = parallel::run(files, move |path| {
        compile_one(&job, path, previous.get(path))
    });
    let mut errors = Vec::new();
    let mut described = Vec::new();
    let mut deferred = Vec::new();
    let mut describing = tokio::task::JoinSet::new();
    while let Some(done) = compiled.recv().await {
        match done {
            (index, _, Some(Ok(Compiled::Reused(done)))) => described.push((index, done)),
            (_, path, Some(Ok(Compiled::Deferred))) => deferred.push(path),
            (index, _, Some(Ok(Compiled::Fresh(plugin)))) => {
                let plugin: Arc<Plugin> = Arc::from(plugin);
                let (engine, permits) = (ctx.engine.clone(), ctx.permits.clone());
                describing.spawn(async move {
                    let result = match permits.acquire_owned().await {
                        Ok(_slot) => describe(&engine, &plugin).await,
                        Err(_) => Err(LoadErrorReason::DescribeFailed(
                            "the host is shutting down".into(),
                        )),
                    };
                    (index, plugin, result)
                });
            }
            (_, path, Some(Err(reason))) => errors.push(LoadError { path, reason }),
            (_, path, None) => errors.push(LoadError {
                path,
                reason: LoadErrorReason::Internal("its compile step panicked".into()),
            }),
        }
    }
    while let Some(joined) = describing.join_next().await {
        match joined {
            Ok((index, plugin, Ok(specs))) => described.push((index, (plugin, specs))),
            Ok((_, plugin, Err(reason))) => errors.push(LoadError {
                path: plugin.path.clone(),
                reason,
            }),
            Err(join_err) => tracing::error!("a plugin describe task panicked: {join_err}"),
        }
    }
    described.sort_by_key(|(index, _)| *index);
    errors.sort_by(|a, b| a.path.cmp(&b.path));
    deferred.sort();
    Loaded {
        described: described.into_iter().map(|(_, d)| d).collect(),
        errors,
        deferred,
    }
}

/// What one load of plugin files produced.
pub(crate) struct Loaded {
    /// The described plugins, in file order.
    pub described: Vec<Described>,
    /// The files that failed.
    pub errors: Vec<LoadError>,
    /// The files left for a later load ([`LoadContext::defer_uncached`]).
    pub deferred: Vec<PathBuf>,
}
