//! The loader: finds `*.wasm` files in the plugin directory, reads each one's
//! policy ([`crate::policy`]), checks its integrity pin, compiles them in
//! parallel (through the [`ComponentCache`]), links them against the sandbox's
//! imports into an `InstancePre`, and runs each plugin's `describe` once inside
//! the sandbox. A file that fails any step becomes a [`LoadError`] naming the
//! file and the reason; the others load regardless. On a reload, a plugin whose
//! bytes and policy text are unchanged is reused as it is.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use sha2::{Digest, Sha256};
use wasmtime::component::Linker;

use crate::bindings::PluginPre;
use crate::cache::{CacheOutcome, ComponentCache};
use crate::engine::Engine;
use crate::error::{HostError, LoadError, LoadErrorReason};
use crate::limits::Limits;
use crate::policy::{Policy, policy_path};
use crate::sandbox::grants::Grants;
use crate::sandbox::{self, ApprovalSetup, Op, OpResult, RunSetup, SandboxState};
use crate::spec::RawSpec;

/// A loaded plugin: one component file, compiled and linked, ready to
/// instantiate once per call, with its policy.
pub struct Plugin {
    path: PathBuf,
    name: Arc<str>,
    sha256: String,
    pre: PluginPre<SandboxState>,
    policy: Arc<Policy>,
    /// The policy file's text, to notice changes on reload.
    policy_source: Option<String>,
    grants: Grants,
    limits: Limits,
}

/// A plugin and the specs its `describe` returned.
pub(crate) type Described = (Arc<Plugin>, Vec<RawSpec>);

/// The limits the loader needs: for `describe`, the host's call defaults that
/// a policy overrides, and the maximums it may not exceed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoadLimits {
    pub describe: Limits,
    pub call: Limits,
    pub max: Limits,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("path", &self.path)
            .field("sha256", &self.sha256)
            .finish()
    }
}

impl Plugin {
    /// The component file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file stem, e.g. `text` for `text.wasm`.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn name_arc(&self) -> Arc<str> {
        self.name.clone()
    }

    /// Lowercase hex sha256 of the component bytes.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    pub(crate) fn pre(&self) -> &PluginPre<SandboxState> {
        &self.pre
    }

    /// The plugin's policy ([`Policy::none`] without a policy file).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub(crate) fn grants(&self) -> &Grants {
        &self.grants
    }

    /// The limits of its calls: the host's defaults with the policy's
    /// overrides.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}

/// What a compile task produced.
enum Compiled {
    /// Bytes and policy unchanged since the previous load.
    Reused(Described),
    Fresh(Box<Plugin>),
}

/// The `*.wasm` files directly inside `dir`, sorted by file name.
///
/// # Errors
/// [`HostError::PluginDir`] when the directory cannot be listed.
pub fn plugin_files(dir: &Path) -> Result<Vec<PathBuf>, HostError> {
    let io_err = |source| HostError::PluginDir {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_err)? {
        let path = entry.map_err(io_err)?.path();
        if path.extension().is_some_and(|e| e == "wasm") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

const WASM_MAGIC: &[u8; 4] = b"\0asm";
const CORE_VERSION: [u8; 4] = [1, 0, 0, 0];

/// Reads the policy, reads and checks the bytes, and compiles and links one
/// file, unless `previous` holds the same bytes under the same policy. Runs on
/// a blocking thread.
fn compile_one(
    engine: &Engine,
    linker: &Linker<SandboxState>,
    cache: &ComponentCache,
    path: &Path,
    limits: &LoadLimits,
    previous: Option<&Described>,
) -> Result<Compiled, LoadErrorReason> {
    let policy_file = policy_path(path);
    let policy_source = match std::fs::read_to_string(&policy_file) {
        Ok(text) => Some(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => {
            return Err(LoadErrorReason::Policy(format!(
                "cannot read {}: {err}",
                policy_file.display()
            )));
        }
    };
    let bytes = std::fs::read(path).map_err(|e| LoadErrorReason::Io(e.to_string()))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    if let Some((plugin, specs)) = previous
        && plugin.sha256 == sha256
        && plugin.policy_source == policy_source
    {
        return Ok(Compiled::Reused((plugin.clone(), specs.clone())));
    }
    let policy = match &policy_source {
        None => Policy::none(),
        Some(text) => Policy::parse(text, &policy_file)
            .map_err(|err| LoadErrorReason::Policy(err.to_string()))?,
    };
    if let Some(expected) = &policy.sha256
        && *expected != sha256
    {
        return Err(LoadErrorReason::IntegrityMismatch {
            expected: expected.clone(),
            actual: sha256,
            policy: policy_file,
        });
    }
    if let Some((knob, value, max)) = policy.limits.above(&limits.max) {
        return Err(LoadErrorReason::Policy(format!(
            "{}: limits.{knob} = {value} exceeds the host's maximum of {max}; lower it, \
             or raise the maximum (HostBuilder::max_limits)",
            policy_file.display()
        )));
    }
    if bytes.len() < 8 || &bytes[..4] != WASM_MAGIC {
        return Err(LoadErrorReason::NotWasm);
    }
    if bytes[4..8] == CORE_VERSION {
        return Err(LoadErrorReason::CoreModule);
    }
    let started = Instant::now();
    let (component, outcome) = cache
        .load_or_compile(engine, &bytes, &sha256)
        .map_err(|e| LoadErrorReason::InvalidComponent(format!("{:#}", e.root_cause())))?;
    tracing::debug!(
        plugin = %path.display(),
        cached = outcome == CacheOutcome::Hit,
        ms = started.elapsed().as_secs_f64() * 1e3,
        "component ready"
    );
    let instance_pre = linker
        .instantiate_pre(&component)
        .map_err(|e| LoadErrorReason::UnsatisfiedImports(format!("{:#}", e.root_cause())))?;
    let pre = PluginPre::new(instance_pre)
        .map_err(|e| LoadErrorReason::WrongWorld(format!("{:#}", e.root_cause())))?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let grants = Grants::from_policy(&policy, &name);
    Ok(Compiled::Fresh(Box::new(Plugin {
        path: path.to_path_buf(),
        name: name.into(),
        sha256,
        pre,
        limits: policy.limits.apply(limits.call),
        policy: Arc::new(policy),
        policy_source,
        grants,
    })))
}

/// Compiles every file in parallel (reusing what `previous` already holds
/// unchanged), then describes each new plugin in the sandbox under
/// `limits.describe`. Returns the described plugins in file order, and the
/// files that failed.
pub(crate) async fn load_files(
    engine: &Engine,
    linker: &Arc<Linker<SandboxState>>,
    cache: &ComponentCache,
    files: Vec<PathBuf>,
    limits: &LoadLimits,
    previous: &std::collections::BTreeMap<PathBuf, Described>,
) -> (Vec<Described>, Vec<LoadError>) {
    let mut tasks = tokio::task::JoinSet::new();
    for (index, path) in files.into_iter().enumerate() {
        let (engine, linker, cache) = (engine.clone(), linker.clone(), cache.clone());
        let limits = *limits;
        let previous = previous.get(&path).cloned();
        tasks.spawn_blocking(move || {
            let result = compile_one(&engine, &linker, &cache, &path, &limits, previous.as_ref());
            (index, path, result)
        });
    }
    let mut compiled = Vec::new();
    let mut errors = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((index, _, Ok(plugin))) => compiled.push((index, plugin)),
            Ok((_, path, Err(reason))) => errors.push(LoadError { path, reason }),
            Err(join_err) => tracing::error!("a plugin compile task panicked: {join_err}"),
        }
    }
    compiled.sort_by_key(|(index, _)| *index);

    let mut described = Vec::new();
    for (_, compiled) in compiled {
        let plugin = match compiled {
            Compiled::Reused(done) => {
                described.push(done);
                continue;
            }
            Compiled::Fresh(plugin) => Arc::from(plugin),
        };
        match describe(engine, &plugin, &limits.describe).await {
            Ok(specs) => described.push((plugin, specs)),
            Err(reason) => errors.push(LoadError {
                path: plugin.path.clone(),
                reason,
            }),
        }
    }
    errors.sort_by(|a, b| a.path.cmp(&b.path));
    (described, errors)
}

/// Runs `describe` once in a fresh sandbox.
async fn describe(
    engine: &Engine,
    plugin: &Plugin,
    limits: &Limits,
) -> Result<Vec<RawSpec>, LoadErrorReason> {
    let setup = RunSetup {
        engine,
        pre: &plugin.pre,
        limits,
        plugin: plugin.name.clone(),
        tool: Arc::from("describe"),
        // `describe` runs with nothing granted, whatever the policy says.
        grants: &Grants::none(),
        // No reviewer: a `describe` that asks for approval gets a
        // configuration error and exit-early.
        approval: ApprovalSetup::default(),
        progress: None,
    };
    let (result, report) = sandbox::run(setup, Op::Describe).await;
    match result {
        Ok(OpResult::Describe(specs)) => Ok(specs.into_iter().map(RawSpec::from).collect()),
        Ok(OpResult::Call(_)) => unreachable!("describe returns specs"),
        Err(failure) => {
            let (stderr, _) = report.stderr;
            if !stderr.is_empty() {
                tracing::debug!(plugin = %plugin.path.display(), "describe stderr: {stderr}");
            }
            Err(LoadErrorReason::DescribeFailed(failure.to_string()))
        }
    }
}
