//! Recording in the call path: whether a run is recorded
//! ([`RecordRequest`] on the call, or the plugin policy's `[record]`), the
//! recording built from the invocation and the run's tape, and its write
//! off the caller's path.

use std::sync::Arc;

use corral_sandbox::tape::{Tape, TapeLog};
use corral_sandbox::{Failure, Grants, GuestError, GuestOutput, Limits, OpResult, RunReport};

use super::dir::Recordings;
use super::file::{Header, Outcome, RecordedGrants, Recording};
use super::request::{RecordRequest, lock};

/// What a recorded run was given, besides its tape.
pub(crate) struct Given<'a> {
    pub plugin: &'a crate::loader::plugin::Plugin,
    pub tool: &'a str,
    pub shown: &'a str,
    pub limits: &'a Limits,
    pub grants: &'a Grants,
    pub arguments: &'a str,
    pub context: &'a [(String, String)],
    /// The call's id and this run's position, for a caller's request.
    pub parent: Option<(String, u32)>,
}

/// The recording of a finished run.
pub(crate) fn recording(
    given: &Given<'_>,
    log: TapeLog,
    result: &Result<OpResult, Failure>,
    report: &RunReport,
) -> Recording {
    let (result, failed) = outcome_json(result);
    let grants = given.grants;
    Recording {
        header: Header {
            corral: env!("CARGO_PKG_VERSION").to_owned(),
            recorded_at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            plugin: given.plugin.name().to_owned(),
            plugin_sha256: given.plugin.sha256().to_owned(),
            contract: given.plugin.wit_version().to_owned(),
            tool: given.tool.to_owned(),
            shown: given.shown.to_owned(),
            limits: *given.limits,
            grants: RecordedGrants {
                dirs: grants
                    .dirs
                    .iter()
                    .map(|d| (d.guest.clone(), d.host.display().to_string(), d.writable))
                    .collect(),
                env: grants.env.clone(),
                http_allow: grants.http_allow.iter().map(ToString::to_string).collect(),
                credentials: grants
                    .http_credentials
                    .iter()
                    .map(|c| format!("{} for {}", c.name, c.host))
                    .collect(),
                client: grants.client,
            },
            arguments: given.arguments.to_owned(),
            context: given.context.to_vec(),
            insecure_seed: hex::encode(log.insecure_seed.to_le_bytes()),
            parent: given.parent.clone(),
        },
        events: log.events,
        files: log.files,
        outcome: Outcome {
            result,
            failed,
            fuel: report.fuel_consumed,
            wall_ms: u64::try_from(report.usage.wall.as_millis()).unwrap_or(u64::MAX),
        },
        incomplete: log.incomplete,
    }
}

/// A run's result as JSON text a replay compares byte for byte, and
/// whether it failed.
pub(crate) fn outcome_json(result: &Result<OpResult, Failure>) -> (String, bool) {
    use serde_json::json;
    let info = |i: &corral_sandbox::ErrorInfo| json!({"message": i.message, "code": i.code, "retryable": i.retryable});
    let (value, failed) = match result {
        Ok(OpResult::Call(Ok(GuestOutput::Text(text)))) => {
            (json!({"output": {"text": text}}), false)
        }
        Ok(OpResult::Call(Ok(GuestOutput::Parts(parts)))) => {
            (json!({"output": {"parts": parts}}), false)
        }
        Ok(OpResult::Call(Err(err))) => (
            match err {
                GuestError::InvalidArguments(i) => {
                    json!({"guest_error": {"invalid_arguments": info(i)}})
                }
                GuestError::ExecutionFailed(i) => {
                    json!({"guest_error": {"execution_failed": info(i)}})
                }
                GuestError::TooLarge(bytes) => json!({"guest_error": {"too_large": bytes}}),
            },
            true,
        ),
        Ok(OpResult::Script(Ok(text))) => (json!({"output": {"script": text}}), false),
        Ok(OpResult::Script(Err(err))) => {
            (json!({"guest_error": {"script": format!("{err:?}")}}), true)
        }
        Ok(OpResult::Describe(specs)) => (json!({"output": {"describe": specs.len()}}), false),
        Err(failure) => (json!({"failure": failure_json(failure)}), true),
    };
    (
        serde_json::to_string_pretty(&value).unwrap_or_default(),
        failed,
    )
}

fn failure_json(failure: &Failure) -> serde_json::Value {
    use serde_json::json;
    match failure {
        Failure::OutOfFuel => json!("out_of_fuel"),
        Failure::Timeout => json!("timeout"),
        Failure::MemoryLimit => json!("memory_limit"),
        Failure::StackOverflow => json!("stack_overflow"),
        Failure::Trap(message) => json!({"trap": message}),
        Failure::Setup(message) => json!({"setup": message}),
    }
}

/// Writes `recording` off the async runtime's workers. For a caller's
/// request, waits and notes the path on it; otherwise (a sampled call)
/// queues it for the directory's writer thread.
async fn write(
    recordings: Option<Arc<Recordings>>,
    request: Option<Arc<RecordRequest>>,
    recording: Recording,
) {
    let Some(recordings) = recordings else {
        if let Some(request) = request {
            lock(&request.failed).push(
                "the host has no recordings directory; set one (`--recordings-dir`, \
                 `HostBuilder::recordings`)"
                    .to_owned(),
            );
        }
        return;
    };
    let Some(request) = request else {
        recordings.write_later(recording);
        return;
    };
    let tool = recording.header.shown.clone();
    let written = tokio::task::spawn_blocking(move || recordings.write(&recording));
    match written.await {
        Ok(Ok(path)) => lock(&request.written).push(path),
        Ok(Err(err)) => lock(&request.failed).push(format!("{tool}: recording not written: {err}")),
        Err(err) => lock(&request.failed).push(format!("{tool}: recording not written: {err}")),
    }
}

/// Whether the plugin's policy samples this run (`[record]`); the host
/// must have a recordings directory for it to matter.
pub(crate) fn sampled(policy: &crate::Policy, tool: &str) -> bool {
    policy.record.as_ref().is_some_and(|r| r.tapes(tool))
}

/// Writes a taped run's recording when its caller asked (waiting), or
/// when the policy keeps it (in the background).
pub(crate) async fn keep(
    recordings: Option<Arc<Recordings>>,
    request: Option<Arc<RecordRequest>>,
    policy: &crate::Policy,
    recording: Recording,
) {
    let kept = request.is_some()
        || policy
            .record
            .as_ref()
            .is_some_and(|r| r.keeps(&recording.header.tool, recording.outcome.failed));
    if kept {
        write(recordings, request, recording).await;
    }
}

/// A tape for a run that should be recorded under `recordings`' cap.
pub(crate) fn tape(recordings: Option<&Recordings>) -> Tape {
    Tape::record(recordings.map_or(
        corral_sandbox::tape::DEFAULT_MAX_RECORDING_BYTES,
        Recordings::recording_cap,
    ))
}
