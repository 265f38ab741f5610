//! The audit layer (outermost of the host's layers): one
//! [`CallRecord`](crate::audit::CallRecord) per execution of a tool whose
//! audit level is `all`, with the outcome after retries and cache. A failed
//! write is logged at ERROR; the call's result stands (its approval, if any,
//! was already recorded or refused by the gate).

use std::sync::Arc;
use std::task::{Context, Poll};

use tower::{Service, ServiceExt as _};

use super::config::AuditLevel;
use crate::audit::{AuditLog, AuditRecord, CallRecord, mask};
use crate::call::CallOutput;
use crate::compose::CallFuture;
use crate::error::CallError;
use crate::stages::{DispatchService, Invocation};

#[derive(Clone)]
pub(super) struct Audit {
    inner: DispatchService,
    log: Arc<AuditLog>,
}

impl Audit {
    pub(super) fn new(inner: DispatchService, log: Arc<AuditLog>) -> Self {
        Self { inner, log }
    }
}

impl Service<Invocation> for Audit {
    type Response = CallOutput;
    type Error = CallError;
    type Future = CallFuture<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        let config = invocation.tool.resilience().audit.clone();
        if config.level != AuditLevel::All {
            return Box::pin(self.inner.clone().oneshot(invocation));
        }
        let (inner, log) = (self.inner.clone(), self.log.clone());
        Box::pin(async move {
            let (plugin, sha256) = invocation.tool.provider_identity();
            let mut record = CallRecord {
                time: String::new(),
                event: "call",
                tool: invocation.tool.spec().name.clone(),
                plugin: plugin.to_string(),
                plugin_sha256: sha256.to_string(),
                context: invocation.context.iter().cloned().collect(),
                outcome: String::new(),
                code: None,
                duration_ms: 0.0,
                fuel: 0,
                attempts: 0,
                cache_hit: false,
                arguments_sha256: AuditRecord::hash(&invocation.arguments.text),
                arguments: config
                    .record_arguments
                    .then(|| mask(&invocation.arguments.value, &config.mask_fields)),
            };
            let started = invocation.started;
            let result = inner.oneshot(invocation).await;
            record.time = AuditRecord::now();
            record.duration_ms = started.elapsed().as_secs_f64() * 1e3;
            match &result {
                Ok(out) => {
                    record.outcome = "ok".into();
                    record.fuel = out.fuel_consumed;
                    record.attempts = out.attempts;
                    record.cache_hit = out.cache_hit;
                }
                Err(err) => {
                    record.outcome = err.kind().into();
                    record.code = err.code();
                }
            }
            if let Err(err) = log.append(&record) {
                tracing::error!(path = %log.path().display(), "audit log write failed: {err}");
            }
            result
        })
    }
}
