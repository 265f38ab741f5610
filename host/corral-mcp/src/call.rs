//! `tools/call`: from the client's request to the host's call, and back as
//! a result, an input-required result (approvals of 2026-07-28 clients) or
//! a task (SEP-2663). Facades unfold here; every other call is
//! [`corral::Host::call_value`], in line or in a task's runner.

use std::sync::Arc;

use corral::{CallError, CallOptions};
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use crate::{McpServer, approval, disclosure, present, progress, tasks};

impl McpServer {
    /// `tools/call`, inside its span ([`trace`]).
    pub(crate) async fn call_tool_traced(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let catalog = self.host.catalog();
        if let Some(facade) = catalog.facades().get(&name) {
            let arguments = request.arguments.unwrap_or_default();
            // The rare paths' futures are boxed here and below, so the
            // request task rmcp spawns for every call stays small
            // (BENCHMARKS.md, issue 51).
            let result = Box::pin(self.call_facade(&catalog, facade, &arguments, &context)).await;
            return Ok(CallToolResponse::Complete(result));
        }
        let mut found = self.host.tool(&name);
        if found.is_none() && !self.host.pending_plugins().is_empty() {
            // Serving before compiling: a plugin still being compiled may
            // bring this name. Wait for it (saying so), up to the deadline.
            let progress: Option<corral::ProgressSink> =
                context.meta.get_progress_token().map(|token| {
                    let peer = context.peer.clone();
                    Arc::new(move |_tool: &str, message: &str| {
                        let param = rmcp::model::ProgressNotificationParam::new(token.clone(), 0.0)
                            .with_message(message.to_string());
                        let peer = peer.clone();
                        tokio::spawn(async move { peer.notify_progress(param).await });
                    }) as corral::ProgressSink
                });
            let within = self.host.limits().timeout();
            Box::pin(self.host.wait_for_tool(&name, within, progress.as_ref())).await;
            found = self.host.tool(&name);
        }
        let Some(tool) = found else {
            let err = CallError::UnknownTool {
                suggestion: None,
                name: name.clone(),
            };
            return Err(McpError::invalid_params(err.to_string(), None));
        };
        // Parsed once by the transport; the host validates this value as is.
        let arguments = Value::Object(request.arguments.take().unwrap_or_default());

        // rmcp moves the request's `_meta` into the request context; read it
        // there, and from the parameters should a transport leave it in place.
        let meta = request
            .meta
            .as_ref()
            .filter(|m| !m.0.is_empty())
            .unwrap_or(&context.meta);
        let mut options =
            CallOptions::default().with_context(present::context_from_meta(Some(meta)));
        // A bearer token's tenant (`--tokens`): whose quotas, tasks and
        // resources these are.
        options.tenant = crate::http::authenticated(&context);
        // A recording the client asked for, where the operator allows it.
        let recording = (self.record_on_request
            && meta.0.get(crate::RECORD_META_KEY) == Some(&json!(true)))
        .then(corral::replay::RecordRequest::new);
        options.record = recording.clone();
        // Who answers a gated call (see the `approval` module).
        let client_of = approval::ClientOf::read(&context);
        let round = approval::Round::prepare(
            &context,
            &client_of,
            self.states.as_ref(),
            &self.host,
            &tool,
            &arguments,
            &request,
            &mut options,
        )?;

        // A state is good once: this process remembers it (the round), and
        // so does the store the replicas share, so a replay to another
        // replica is refused too.
        if let Some(round) = &round
            && let Some(nonce) = round.nonce()
        {
            Box::pin(approval::use_once(
                self.tasks.store().as_ref(),
                nonce,
                round.state_ttl(),
            ))
            .await?;
        }
        // A task (SEP-2663), when the client takes them and the tool
        // prefers it. A declared gate of a 2026-07-28 client is asked in line
        // first (its retry then becomes the task); questions inside the task
        // go through `tasks/update`, except on such a retry, whose reviewer
        // holds the answer.
        let takes_tasks = client_of
            .caps
            .as_ref()
            .is_some_and(|caps| caps.supports_tasks());
        if tool.task_mode() == corral::TaskMode::Required && !takes_tasks {
            return Err(McpError::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_tasks()
                    .build(),
            ));
        }
        // The guest's own questions to this client (WIT 0.3.0 `client`):
        // a session-based client is asked in line; a tool that cannot work
        // without sampling refuses a client that cannot sample (-32021).
        let grants = tool.client_grants();
        let samples = client_of
            .caps
            .as_ref()
            .is_some_and(|caps| caps.sampling.is_some());
        if tool.requires_sampling() && !samples {
            // Deprecated by SEP-2577, still served (see `client.rs`).
            #[allow(deprecated)]
            return Err(McpError::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_sampling()
                    .build(),
            ));
        }
        let stateless = client_of.stateless;
        // A 2026-07-28 client's round (above) answers them when it can.
        if grants.any() && options.client.is_none() {
            options = if stateless {
                options.with_client(Arc::new(crate::client::StatelessClient))
            } else {
                options.with_client(Arc::new(crate::client::SessionClient::new(
                    context.peer.clone(),
                    client_of.caps.clone().unwrap_or_default(),
                )))
            };
        }
        let flow = client_of.flow();
        // A declared gate that only this client's user could decide, from a
        // client that cannot be asked: refused before the call, as MCP says
        // (MissingRequiredClientCapability, -32021, HTTP 400), naming what
        // would make it work.
        if tool.requires_approval()
            && flow == approval::Flow::Host
            && options.reviewer.is_none()
            && !self.host.decides_gate(&tool)
        {
            return Err(missing_elicitation(&name));
        }
        let retry = request.request_state.is_some();
        let gate_first =
            !retry && tool.requires_approval() && flow == approval::Flow::InputRequired;
        // Mode `after_input`: a stateless client's first call runs in line
        // (what the guest asks goes back input-required); the retry with the
        // answers becomes the task.
        let input_first = !retry && stateless && tool.task_mode() == corral::TaskMode::AfterInput;
        if takes_tasks && tool.prefers_task() && !gate_first && !input_first {
            let tenant = tasks::tenant_of(options.tenant.as_ref(), &options.context);
            let job = tasks::Job {
                host: self.host.clone(),
                name,
                arguments,
                options,
                ask_client: !retry && flow != approval::Flow::Host,
                client_requests: (stateless && grants.any())
                    .then(|| client_of.caps.clone().unwrap_or_default()),
                round: round.as_ref().and_then(approval::Round::client),
            };
            let created = Box::pin(self.tasks.create(tenant, job)).await?;
            return Ok(CallToolResponse::Task(created));
        }

        // Progress is coalesced: the sink keeps only the latest message (and
        // a count), and one forwarding task per call sends it at most every
        // PROGRESS_INTERVAL, then once more after the call ends.
        let mut forwarder = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (tx, rx) = tokio::sync::watch::channel::<(u64, String)>((0, String::new()));
            forwarder = Some(tokio::spawn(progress::forward(
                rx,
                context.peer.clone(),
                token,
            )));
            options.progress = Some(Arc::new(move |_tool: &str, message: &str| {
                tx.send_modify(|(count, latest)| {
                    *count += 1;
                    latest.clear();
                    latest.push_str(message);
                });
            }));
        }

        let host = self.host.clone();
        // Boxed: the request task rmcp spawns then holds a pointer, not
        // the whole call's state, which tokio would copy as it moves it.
        // Allocated first and written in place, not built on the stack and
        // copied (as in corral's dispatch).
        let slot = Box::new_uninit();
        let call = Box::into_pin(Box::write(
            slot,
            host.call_value(&name, arguments, &options),
        ));
        let result = tokio::select! {
            result = call => result,
            () = context.ct.cancelled() => {
                tracing::info!(tool = name, "call cancelled by the client; sandbox torn down");
                metrics::counter!("corral_calls_cancelled_total", "tool" => name.clone()).increment(1);
                return Err(McpError::internal_error("the request was cancelled", None));
            }
        };
        let options_context = options.context.clone();
        let options_tenant = options.tenant.clone();
        drop(options);
        if let Some(forwarder) = forwarder {
            // The sink is gone with the options; the forwarder ends after
            // sending what is queued, before the result goes out.
            let _ = forwarder.await;
        }
        if let Some(asked) = round
            .map(|round| round.question(&tool, &name, &options_context, &result))
            .transpose()?
            .flatten()
        {
            return Ok(CallToolResponse::InputRequired(asked));
        }
        let mut result = result;
        if let Ok(out) = &mut result {
            let tenant = || tasks::tenant_of(options_tenant.as_ref(), &options_context);
            crate::resources::keep(self.tasks.store().as_ref(), tenant, &name, &mut out.parts)
                .await;
        }
        let mut result = present::to_result(result);
        if let Some(recording) = recording {
            let names: Vec<String> = recording
                .written()
                .iter()
                .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
                .collect();
            result
                .meta
                .get_or_insert_with(Default::default)
                .insert("corral/recordings".into(), json!(names));
        }
        // A tool inside a facade this client has not unfolded: say where.
        if let Some(facade) = catalog.facades().holder(&name) {
            let unfolded = self.unfolded(&context);
            let shown = disclosure::visible(&catalog, &unfolded)
                .iter()
                .any(|e| matches!(e, disclosure::Entry::Tool(t) if t.spec().name == name));
            if !shown {
                result.content.push(disclosure::hidden_note(&name, facade));
                result
                    .meta
                    .get_or_insert_with(Default::default)
                    .insert(disclosure::FACADE_META_KEY.into(), json!(facade));
            }
        }
        Ok(CallToolResponse::Complete(result))
    }
}

/// `MissingRequiredClientCapability` (-32021) for a gated call of `tool`
/// whose approval needs the client's `elicitation`.
fn missing_elicitation(tool: &str) -> McpError {
    McpError::new(
        rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "tool `{tool}` needs approval, and this server has no reviewer of its own: the \
             client must declare the `elicitation` capability so its user can be asked \
             (or the operator configures a reviewer, e.g. `corral serve --approve rules:FILE`)"
        ),
        Some(json!({"requiredCapabilities": {"elicitation": {}}})),
    )
}
