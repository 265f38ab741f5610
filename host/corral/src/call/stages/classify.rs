//! Stage 6, classify and cap the output: what a sandbox run produced, turned
//! into a [`CallOutput`] or exactly one [`CallError`] class.
//!
//! Precedence: an error that ended the run from the host's side first (a
//! client request answered only on a retry, which stopped the guest; a
//! review nobody could make); then a limit or trap (the guest did not
//! return); then a denied guest-requested review (the model never sees the
//! output of an action a reviewer stopped, whatever the guest returned
//! afterwards); then the guest's own WIT error (with its code); then the
//! output cap.
//!
//! A guest's error message is untrusted text: it is cut to
//! [`MAX_LOG_MESSAGE_BYTES`] and its control characters escaped here, once,
//! so every surface (CLI, MCP, plan steps, logs) shows the same safe text.

use std::time::Instant;

use crate::call::CallOutput;
use crate::catalog::registry::Tool;
use corral_sandbox::CallError;
use corral_sandbox::Leaks;
use corral_sandbox::Limits;
use corral_sandbox::{
    Failure, GuestError, GuestOutput, MAX_LOG_MESSAGE_BYTES, OpResult, OutputPart, PartContent,
    PartsError, ResourceContents, RunReport,
};

/// A guest-supplied message, cut and with its control characters escaped.
fn guest_text(message: String) -> String {
    corral_names::text::escape(&corral_names::text::truncate(
        message,
        MAX_LOG_MESSAGE_BYTES,
    ))
    .into_owned()
}

/// The outcome of one sandboxed call of `tool` under `limits`.
///
/// # Errors
/// The [`CallError`] class of the failure (see the module docs for the order).
pub(super) fn outcome(
    tool: &Tool,
    limits: &Limits,
    leaks: &Leaks,
    result: Result<OpResult, Failure>,
    report: RunReport,
    started: Instant,
) -> Result<CallOutput, CallError> {
    let name = tool.spec().name.as_str();
    log_stdio(name, "stdout", leaks, &report.stdout);
    log_stdio(name, "stderr", leaks, &report.stderr);
    // The leak scan: no form of a secret the plugin's credentials use may
    // leave in its output or error text.
    let scrub = |text: String| -> String { leaks.string("output", text) };
    let result = match result {
        Err(Failure::Trap(message)) => Err(Failure::Trap(scrub(message))),
        Ok(OpResult::Call(Ok(GuestOutput::Text(text)))) => {
            Ok(OpResult::Call(Ok(GuestOutput::Text(scrub(text)))))
        }
        Ok(OpResult::Call(Ok(GuestOutput::Parts(parts)))) => {
            Ok(OpResult::Call(Ok(GuestOutput::Parts(
                parts
                    .into_iter()
                    .map(|part| scrub_part(part, leaks))
                    .collect(),
            ))))
        }
        Ok(OpResult::Call(Err(GuestError::InvalidArguments(mut info)))) => {
            info.message = scrub(info.message);
            Ok(OpResult::Call(Err(GuestError::InvalidArguments(info))))
        }
        Ok(OpResult::Call(Err(GuestError::ExecutionFailed(mut info)))) => {
            info.message = scrub(info.message);
            Ok(OpResult::Call(Err(GuestError::ExecutionFailed(info))))
        }
        other => other,
    };
    // An error met during the run (a client request that stops the guest,
    // a review nobody could make) is the call's outcome, whatever the guest
    // did after it, a trap included.
    if let Some(err) = report.config_error {
        return Err(err);
    }
    let returned = match result {
        Ok(OpResult::Call(returned)) => returned,
        Ok(OpResult::Describe(_) | OpResult::Script(_)) => {
            return Err(CallError::Internal {
                tool: name.to_string(),
                message: "the sandbox ran something other than the call".into(),
            });
        }
        Err(Failure::Trap(message)) => {
            return Err(Failure::Trap(guest_text(message)).into_call_error(name, limits));
        }
        Err(failure) => return Err(failure.into_call_error(name, limits)),
    };
    if let Some(reason) = report.rejected {
        return Err(CallError::Rejected {
            tool: name.to_string(),
            reason: guest_text(reason),
        });
    }
    let too_large = |bytes| CallError::OutputTooLarge {
        tool: name.to_string(),
        bytes,
        limit_bytes: limits.output_bytes,
    };
    let returned = match returned {
        Ok(GuestOutput::Text(text)) if text.len() > limits.output_bytes => {
            return Err(too_large(text.len()));
        }
        Ok(GuestOutput::Text(text)) => Ok((text, Vec::new())),
        Ok(GuestOutput::Parts(parts)) => {
            match corral_sandbox::check_parts(parts, limits.output_bytes) {
                Ok(checked) => Ok((checked.text, checked.parts)),
                Err(PartsError::TooLarge(bytes)) => return Err(too_large(bytes)),
                Err(PartsError::Invalid(problem)) => {
                    return Err(CallError::OutputInvalid {
                        tool: name.to_string(),
                        problems: vec![guest_text(problem)],
                    });
                }
            }
        }
        Err(err) => Err(err),
    };
    match returned {
        Ok((text, parts)) => {
            // Parsed here only to check an output contract (and kept);
            // otherwise on first use (`CallOutput::json`).
            let json = std::sync::OnceLock::new();
            if let Some(contract) = tool.output_validator() {
                let parsed = serde_json::from_str(&text).ok();
                let problems = match &parsed {
                    Some(value) => crate::model::schema::problems(contract, value).err(),
                    None => Some(vec!["`(root)`: the result is not JSON".to_string()]),
                };
                if let Some(problems) = problems {
                    return Err(CallError::OutputInvalid {
                        tool: name.to_string(),
                        problems: problems.into_iter().map(guest_text).collect(),
                    });
                }
                let _ = json.set(parsed);
            }
            Ok(CallOutput {
                tool: name.to_string(),
                parts,
                text,
                json,
                return_behavior: tool.spec().metadata.return_behavior,
                duration: started.elapsed(),
                fuel_consumed: report.fuel_consumed,
                attempts: 1,
                cache_hit: false,
            })
        }
        Err(GuestError::InvalidArguments(info)) => Err(CallError::InvalidArguments {
            tool: name.to_string(),
            problems: vec![guest_text(info.message)],
            code: info.code,
        }),
        Err(GuestError::TooLarge(bytes)) => Err(too_large(bytes)),
        Err(GuestError::ExecutionFailed(info)) => Err(CallError::ToolFailed {
            tool: name.to_string(),
            message: guest_text(info.message),
            code: info.code,
            retryable: info.retryable,
        }),
    }
}

/// `part` with the leak scan applied to every text and every byte a guest
/// put in it.
fn scrub_part(mut part: OutputPart, leaks: &Leaks) -> OutputPart {
    let scrub = |text: &mut String| *text = leaks.string("output", std::mem::take(text));
    match &mut part.content {
        PartContent::Text { text } | PartContent::Json { json: text } => scrub(text),
        PartContent::ResourceLink(link) => {
            scrub(&mut link.uri);
            scrub(&mut link.name);
            scrub(&mut link.description);
        }
        PartContent::Resource(resource) => {
            scrub(&mut resource.uri);
            match &mut resource.contents {
                ResourceContents::Text(text) => scrub(text),
                ResourceContents::Blob(data) => leaks.bytes("output", data),
                _ => {}
            }
        }
        PartContent::Image(media) | PartContent::Audio(media) => {
            leaks.bytes("output", &mut media.data)
        }
        _ => {}
    }
    part
}

/// Logs what a guest printed, noting how much was discarded.
fn log_stdio(tool: &str, stream: &'static str, leaks: &Leaks, (text, discarded): &(String, u64)) {
    if text.is_empty() && *discarded == 0 {
        return;
    }
    if *discarded > 0 {
        tracing::warn!(
            tool,
            stream,
            discarded,
            "guest output truncated; {discarded} bytes discarded"
        );
    }
    let text = leaks.text(stream, text.trim_end());
    tracing::debug!(tool, stream, "{}", corral_names::text::escape(&text));
}
