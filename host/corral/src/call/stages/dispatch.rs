//! Stage 5 for a plugin's tool: the dispatch [`tower::Service`]. It takes a
//! pool slot, with an instance made ahead of the call when one is ready
//! (`corral_sandbox::Instances`), and, for a tool that is not
//! parallelizable, the tool's serial lock; runs the call in that instance or
//! a fresh one, under the invocation's limits bound at that moment; and
//! classifies the outcome. A store that is slow to drop is dropped after
//! the answer (`corral_sandbox::OFF_PATH_DROP`), a cheap one in line.
//!
//! The host wraps this service in the layers it was built with
//! ([`HostBuilder::layer`](crate::HostBuilder::layer)), outermost first, so a
//! layer sees every execution of a plugin's tool from every entry point, after
//! validation, limits and the declared gate: the seam for cache, rate limit
//! and retry. Each retry of an [`Invocation`] is a new sandbox under the full
//! limits: an instance serves one call of this service, never two.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tower::Service;
use tower::util::BoxCloneSyncService;

use crate::call::approval::gate::Gatekeeper;
use crate::call::{CallOptions, CallOutput};
use crate::catalog::registry::{Provider, Tool};
use corral_sandbox::CallError;
use corral_sandbox::Engine;
use corral_sandbox::Limits;
use corral_sandbox::Resolver;
use corral_sandbox::{self as sandbox, ApprovalHook, Op, RunSetup};

use super::gate::GuestReview;
pub use super::validate::Arguments;

/// One execution of a plugin's tool: what the dispatch service and its layers
/// receive. Cheap to clone (a retry layer clones it per attempt).
#[derive(Clone)]
#[non_exhaustive]
pub struct Invocation {
    /// The tool, as the call resolved it (its spec, plugin and digest).
    pub tool: Arc<Tool>,
    /// The validated arguments (after a reviewer's edit, if any).
    pub arguments: Arguments,
    /// The effective limits ([`limits::effective`](corral_sandbox::effective)).
    pub limits: Limits,
    /// The context pairs that reach this plugin (after its context policy).
    pub context: Arc<Vec<(String, String)>>,
    /// The call's options (progress sink, reviewer).
    pub options: CallOptions,
    /// When the call started, for its duration.
    pub started: Instant,
    /// How many forms of the plugin's secrets the leak scan redacted in
    /// this call, over all its attempts (output, errors, logs, HTTP): the
    /// audit layer flags a call where this is not 0.
    pub redactions: Arc<std::sync::atomic::AtomicU32>,
    /// Whose quotas the call spends (see [`Tenant::of`](crate::Tenant)).
    pub tenant: crate::Tenant,
    /// What the call used, over all its attempts: the quota layer charges
    /// it.
    pub(crate) spent: Arc<crate::call::quota::Spent>,
}

impl std::fmt::Debug for Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invocation")
            .field("tool", &self.tool.spec().name)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// The dispatch stage with its layers, type-erased:
/// `Service<Invocation, Response = CallOutput, Error = CallError>`.
pub type DispatchService = BoxCloneSyncService<Invocation, CallOutput, CallError>;

/// The innermost dispatch service: the sandbox. A clone (one per call)
/// shares one [`DispatchShared`].
#[derive(Clone)]
pub(crate) struct PluginDispatch(Arc<DispatchShared>);

/// What every call of the dispatch service uses.
struct DispatchShared {
    engine: Engine,
    /// The pool's slots and the instances made ahead of calls.
    instances: corral_sandbox::Instances,
    gate: Arc<Gatekeeper>,
    resolver: Arc<dyn Resolver>,
    /// Where each run's attempts and peaks are recorded.
    evidence: Arc<crate::evidence::EvidenceBook>,
    /// Where recorded runs are written, if anywhere.
    recordings: Option<Arc<crate::replay::Recordings>>,
}

impl PluginDispatch {
    /// The sandbox dispatch on `engine`, taking slots from `instances` (one
    /// per instance the pool holds, shared with `describe` at load).
    pub(crate) fn new(
        engine: Engine,
        gate: Arc<Gatekeeper>,
        instances: corral_sandbox::Instances,
        resolver: Arc<dyn Resolver>,
        (evidence, recordings): (
            Arc<crate::evidence::EvidenceBook>,
            Option<Arc<crate::replay::Recordings>>,
        ),
    ) -> Self {
        Self(Arc::new(DispatchShared {
            engine,
            instances,
            gate,
            resolver,
            evidence,
            recordings,
        }))
    }
}

impl DispatchShared {
    async fn run(self: Arc<Self>, invocation: Invocation) -> Result<CallOutput, CallError> {
        let tool = &invocation.tool;
        let name = tool.spec().name.as_str();
        let Provider::Plugin(plugin) = tool.provider() else {
            return Err(CallError::Internal {
                tool: name.to_string(),
                message: "only a plugin's tool runs in a sandbox".into(),
            });
        };
        let hook: Arc<dyn ApprovalHook> = Arc::new(GuestReview {
            gate: self.gate.clone(),
            tool: tool.clone(),
            arguments: invocation.arguments.value.clone(),
            reviewer: invocation.options.reviewer.clone(),
            script: invocation.options.script.clone(),
            review_pause: invocation.options.review_pause.clone(),
        });
        let client = invocation
            .options
            .client
            .as_ref()
            .map(|client| self.client_hook(client, &invocation));
        let tool_name = tool.state().name();
        let leaks = corral_sandbox::Leaks::new(
            plugin.grants().redactor.clone(),
            tool_name.clone(),
            invocation.redactions.clone(),
        );
        // A learning run's grants (`evidence/learning.rs`).
        let learning = self
            .evidence
            .learning_grants(plugin.name(), plugin.grants())
            .transpose()
            .map_err(|message| CallError::Configuration {
                tool: name.to_string(),
                message: format!("learning run: {message}"),
            })?;
        let grants = learning.as_ref().unwrap_or(plugin.grants());
        let request = invocation.options.record.clone();
        let sampled = self.recordings.is_some()
            && crate::replay::capture::sampled(plugin.policy(), tool.guest_name());
        let tape = (request.is_some() || sampled)
            .then(|| crate::replay::capture::tape(self.recordings.as_deref()));
        // An instance made ahead serves a plain call: not a learning run
        // (other grants), not a recorded one (its start-up is recorded).
        let want = (learning.is_none() && tape.is_none()).then(|| corral_sandbox::Want {
            blueprint: plugin.clone(),
            limits: tool.limits().copied().unwrap_or(invocation.limits),
        });
        let slot = self
            .instances
            .slot(want)
            .await
            .map_err(|_| CallError::Internal {
                tool: name.to_string(),
                message: "the host is shutting down".into(),
            })?;
        let _serial = if tool.spec().metadata.parallelizable {
            None
        } else {
            Some(tool.state().serial.lock().await)
        };
        let setup = RunSetup {
            engine: &self.engine,
            pre: plugin.pre(),
            limits: &invocation.limits,
            plugin: plugin.name_arc(),
            tool: tool_name.clone(),
            grants,
            approval: Some(hook),
            client,
            tools: None,
            resolver: self.resolver.clone(),
            progress: invocation.options.progress.clone(),
            leaks: leaks.clone(),
            tape: tape.clone(),
            slot: Some(slot),
        };
        let op = Op::Call {
            // The guest knows the tool by its own name, whatever the policy shows.
            name: tool.guest_name(),
            arguments: &invocation.arguments.text,
            context: &invocation.context,
        };
        let (result, report) = sandbox::run(setup, op).await;
        if let Some(tape) = tape {
            // Boxed: a recorded call is rare, and its future would
            // otherwise enlarge every call's (BENCHMARKS.md, issue 51).
            let given = crate::replay::capture::Given {
                plugin,
                tool: tool.guest_name(),
                shown: &tool_name,
                limits: &invocation.limits,
                grants,
                arguments: &invocation.arguments.text,
                context: &invocation.context,
                parent: request.as_ref().map(|r| r.next_run()),
            };
            Box::pin(self.keep_recording(request, &given, tape, &result, &report)).await;
        }
        invocation.spent.add(&report.usage);
        self.evidence.record(
            &plugin.name_arc(),
            plugin.sha256(),
            tool.guest_name(),
            &invocation.arguments.text,
            &crate::evidence::Observed {
                usage: &report.usage,
                attempts: &report.attempts,
            },
        );
        let _output = tracing::info_span!(target: super::SPAN_TARGET, "corral.output").entered();
        super::classify::outcome(
            tool,
            &invocation.limits,
            &leaks,
            result,
            report,
            invocation.started,
        )
    }

    /// The hook through which the guest reaches the call's MCP client
    /// (sampling, elicitation), for a call that has one. Out of line, so
    /// that the run's own code stays short for calls without a client.
    #[inline(never)]
    fn client_hook(
        &self,
        client: &Arc<dyn crate::call::client::ClientRequests>,
        invocation: &Invocation,
    ) -> Arc<dyn corral_sandbox::ClientHook> {
        let tool = &invocation.tool;
        let (plugin, plugin_sha256) = tool.provider_identity();
        Arc::new(crate::call::client::ToolClient {
            client: client.clone(),
            asking: crate::call::client::Asking {
                tool: tool.spec().name.clone(),
                plugin: plugin.to_string(),
                plugin_sha256: plugin_sha256.to_string(),
                timeout: self.gate.timeout,
            },
            review_pause: invocation.options.review_pause.clone(),
            sampling_budget: tool.plugin().and_then(|p| p.sampling_budget().cloned()),
            context: invocation
                .options
                .context
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
    }

    /// Writes a recorded run (`replay/capture.rs`). Its caller boxes this
    /// future: a recorded call is rare.
    async fn keep_recording(
        &self,
        request: Option<Arc<crate::replay::RecordRequest>>,
        given: &crate::replay::capture::Given<'_>,
        tape: corral_sandbox::tape::Tape,
        result: &Result<corral_sandbox::OpResult, corral_sandbox::Failure>,
        report: &corral_sandbox::RunReport,
    ) {
        let policy = given.plugin.policy();
        let recording = crate::replay::capture::recording(given, tape.take_log(), result, report);
        crate::replay::capture::keep(self.recordings.clone(), request, policy, recording).await;
    }
}

impl Service<Invocation> for PluginDispatch {
    type Response = CallOutput;
    type Error = CallError;
    type Future = Pin<Box<dyn Future<Output = Result<CallOutput, CallError>> + Send>>;

    /// Always ready: back-pressure is the pool's semaphore, awaited in `call`.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        // The allocation first, then the future written into it: the
        // compiler builds the future in place. `Box::pin(future)` built it
        // on the stack and copied all 5.7 KB of it (the sandbox run's state
        // is inside) into the heap on every call, though only its arguments
        // are set before its first poll (BENCHMARKS.md, issue 51).
        let slot = Box::new_uninit();
        let run = Box::write(slot, self.0.clone().run(invocation));
        Box::into_pin(run)
    }
}
