//! The audit layer (outermost of the host's layers): one
//! [`CallRecord`](crate::call::audit::CallRecord) per execution of a tool whose
//! audit level is `all`, with the outcome after retries and cache, and one
//! for any call in which the leak scan redacted a secret
//! (`secrets_redacted`), whatever the tool's level. A failed
//! write is logged at ERROR; the call's result stands (its approval, if any,
//! was already recorded or refused by the gate).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use tower::{Service, ServiceExt as _};

use super::Inner;
use crate::call::CallOutput;
use crate::call::audit::{AuditLog, AuditRecord, CallRecord, mask};
use crate::call::compose::CallFuture;
use crate::call::stages::Invocation;
use crate::config::resilience::AuditLevel;
use corral_sandbox::CallError;

#[derive(Clone)]
pub(super) struct Audit<S> {
    inner: S,
    log: Arc<AuditLog>,
}

impl<S> Audit<S> {
    pub(super) fn new(inner: S, log: Arc<AuditLog>) -> Self {
        Self { inner, log }
    }
}

impl<S: Inner> Service<Invocation> for Audit<S> {
    type Response = CallOutput;
    type Error = CallError;
    type Future = CallFuture<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        let config = invocation.tool.resilience().audit.clone();
        let (inner, log) = (self.inner.clone(), self.log.clone());
        Box::pin(async move {
            // Cheap handles now; the record is built only if it is written.
            let (tool, context) = (invocation.tool.clone(), invocation.context.clone());
            let arguments = invocation.arguments.clone();
            let parent_id = invocation
                .options
                .script
                .as_ref()
                .and_then(|s| s.run.clone());
            let (started, redactions) = (invocation.started, invocation.redactions.clone());
            let result = inner.oneshot(invocation).await;
            let secrets_redacted = redactions.load(Ordering::Relaxed);
            // A call whose data carried a secret is recorded whatever the
            // tool's audit level.
            if config.level != AuditLevel::All && secrets_redacted == 0 {
                return result;
            }
            let (plugin, sha256) = tool.provider_identity();
            let (plugin, sha256) = (plugin.to_string(), sha256.to_string());
            let context = context.iter().cloned().collect();
            let arguments_sha256 = AuditRecord::hash(&arguments.text);
            let arguments = (config.level == AuditLevel::All && config.record_arguments)
                .then(|| mask(&arguments.value, &config.mask_fields));
            let tool = tool.spec().name.clone();
            let mut record = CallRecord {
                time: AuditRecord::now(),
                event: "call",
                call_id: AuditRecord::new_id(),
                parent_id,
                tool,
                plugin,
                plugin_sha256: sha256,
                context,
                outcome: String::new(),
                code: None,
                duration_ms: started.elapsed().as_secs_f64() * 1e3,
                fuel: 0,
                attempts: 0,
                cache_hit: false,
                arguments_sha256,
                arguments,
                secrets_redacted,
            };
            match &result {
                Ok(out) => {
                    record.outcome = "ok".into();
                    record.fuel = out.fuel_consumed;
                    record.attempts = out.attempts;
                    record.cache_hit = out.cache_hit;
                }
                Err(err) => record.failed(err),
            }
            record.append_to(&log);
            result
        })
    }
}
