//! What a policy grants, in words a reviewer can read (`corral describe` and
//! `corral policy check` print it).

use super::{EnvGrant, Policy};
use corral_sandbox::{LimitOverrides, Limits};

impl Policy {
    /// What the plugin may reach, for machines (MCP's `_meta`, the
    /// manifest): `{"files": [{"path": guest path, "writable"}],
    /// "environment": [variable name], "http": [allowed destination],
    /// "privateNetworks": bool}`. Host paths and environment values are left
    /// out: a client learns what the tool can reach, not the host's layout
    /// or secrets.
    pub fn grants_summary(&self) -> serde_json::Value {
        let files: Vec<serde_json::Value> = self
            .filesystem
            .iter()
            .map(|d| serde_json::json!({"path": d.guest, "writable": d.writable}))
            .collect();
        let environment: Vec<&str> = self.environment.iter().map(EnvGrant::name).collect();
        let http: Vec<String> = self.http_allow.iter().map(ToString::to_string).collect();
        serde_json::json!({
            "files": files,
            "environment": environment,
            "http": http,
            "privateNetworks": self.http_private,
        })
    }

    /// What the plugin is granted, in words a reviewer can read: one line per
    /// kind of grant, or one line saying it gets nothing beyond the defaults.
    /// `limits` are the limits its calls run under, printed when this policy
    /// sets any: a loaded tool's [`Tool::limits`](crate::Tool::limits)
    /// (computed once when the catalog was built), or, for a plugin alone,
    /// [`limits::effective`](corral_sandbox::effective) of the host's defaults
    /// and this policy.
    pub fn grants(&self, limits: &Limits) -> Vec<String> {
        let mut lines = Vec::new();
        for dir in &self.filesystem {
            lines.push(format!(
                "files: {} {} (the guest sees it as {})",
                if dir.writable {
                    "read and write"
                } else {
                    "read only"
                },
                dir.host.display(),
                dir.guest
            ));
        }
        for env in &self.environment {
            lines.push(format!("environment: {}", env.describe()));
        }
        if !self.http_allow.is_empty() {
            let hosts: Vec<String> = self.http_allow.iter().map(ToString::to_string).collect();
            lines.push(format!("outbound HTTP to: {}", hosts.join(", ")));
            if self.http_private {
                lines.push(
                    "outbound HTTP may reach internal addresses (loopback, private, \
                     link-local): allow_private_networks"
                        .into(),
                );
            }
        }
        let d = &self.describe;
        let caps: Vec<String> = [
            ("timeout_ms", d.timeout_ms.map(|v| v as usize)),
            ("max_tools", d.max_tools),
            ("max_description_chars", d.max_description_chars),
            ("max_schema_bytes", d.max_schema_bytes),
            ("max_output_bytes", d.max_output_bytes),
        ]
        .into_iter()
        .filter_map(|(knob, value)| value.map(|v| format!("{knob} = {v}")))
        .collect();
        if !caps.is_empty() {
            lines.push(format!("describe: {}", caps.join(", ")));
        }
        if self.limits != LimitOverrides::default() {
            lines.push(format!(
                "limits: {} fuel units, {} ms, {} MiB memory, {} bytes of output per call",
                limits.fuel,
                limits.timeout_ms,
                limits.memory_bytes >> 20,
                limits.output_bytes
            ));
        }
        if !self.require_approval.is_empty() {
            let tools: Vec<&str> = self.require_approval.iter().map(String::as_str).collect();
            lines.push(format!("approval required for: {}", tools.join(", ")));
        }
        if let Some(context) = &self.context {
            lines.push(format!("context keys: {}", context.describe()));
        }
        if let Some(prefix) = &self.prefix {
            lines.push(format!("tool names prefixed with `{prefix}`"));
        }
        for from in self.rename.keys() {
            lines.push(format!(
                "tool `{from}` shown as `{}`",
                self.shown_name(from)
            ));
        }
        for tool in self.notes.keys() {
            lines.push(format!(
                "tool `{tool}` has a note appended to its description"
            ));
        }
        for credential in &self.http_credentials {
            let secrets: Vec<&str> = credential.secrets().collect();
            lines.push(format!(
                "header `{}` set by the host on requests to {}, with the secret {} (the guest \
                 never sees it)",
                credential.header,
                credential.host,
                secrets.join(", ")
            ));
        }
        for (tool, set) in &self.metadata {
            let mut fields = Vec::new();
            if let Some(category) = &set.category {
                fields.push(format!("category `{category}`"));
            }
            if let Some(keywords) = &set.keywords {
                fields.push(format!("keywords {}", keywords.join(", ")));
            }
            match set.idempotent {
                Some(true) => fields.push("idempotent (so it may be retried and cached)".into()),
                Some(false) => fields.push("not idempotent".into()),
                None => {}
            }
            if let Some(parallel) = set.parallelizable {
                fields.push(
                    if parallel {
                        "parallelizable"
                    } else {
                        "one call at a time"
                    }
                    .into(),
                );
            }
            if let Some(latency) = set.latency {
                fields.push(format!("latency {latency}"));
            }
            lines.push(format!(
                "tool `{tool}` metadata set by the policy: {}",
                fields.join(", ")
            ));
        }
        let words = |mode: super::TaskMode| match mode {
            super::TaskMode::Required => "always a task; clients without tasks are refused",
            super::TaskMode::Always => "always a task for MCP clients that take them",
            super::TaskMode::AfterInput => {
                "a task once the MCP client has answered what the tool asks first"
            }
            super::TaskMode::Never => "never a task",
            _ => "a task when slow",
        };
        if self.tasks.mode != super::TaskMode::WhenSlow {
            lines.push(format!("MCP calls: {}", words(self.tasks.mode)));
        }
        for (tool, mode) in &self.tasks.tools {
            lines.push(format!("MCP calls of `{tool}`: {}", words(*mode)));
        }
        if self.client.elicitation {
            lines.push("may ask the person at the MCP client for input (elicitation)".into());
        }
        if let Some(sampling) = self.client.sampling {
            lines.push(format!(
                "may ask the MCP client's model (sampling): at most {} tokens a request, \
                 {} requests a call{}",
                sampling.max_tokens,
                sampling.calls_per_call,
                sampling
                    .tokens_per_hour
                    .map(|t| format!(", {t} tokens an hour per tenant"))
                    .unwrap_or_default(),
            ));
        }
        for tool in &self.sampling_required_by {
            lines.push(format!(
                "tool `{tool}` needs sampling: MCP clients that cannot sample are refused"
            ));
        }
        if self.client.roots {
            lines.push("may learn the MCP client's workspace roots".into());
        }
        for quota in &self.quotas.quotas {
            lines.push(format!("each tenant's quota of {quota}"));
        }
        if let Some(record) = &self.record {
            let which = if record.only_failures {
                "failed calls"
            } else {
                "calls"
            };
            let tools: Vec<String> = record
                .tools
                .iter()
                .map(|(tool, rate)| format!("{}% of `{tool}`'s", rate * 100.0))
                .collect();
            lines.push(format!(
                "records {}% of its {which}{} into the host's recordings directory{}",
                record.rate * 100.0,
                if tools.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", tools.join(", "))
                },
                if record.gate_updates {
                    "; a new build replays them before it replaces the served one"
                } else {
                    ""
                }
            ));
        }
        if !self.any_component {
            lines.push("any-component mode off: loads only if it targets corral's world".into());
        }
        if let Some(sha) = &self.sha256 {
            lines.push(format!("integrity: loads only if its sha256 is {sha}"));
        }
        if !self.signed_by.is_empty() {
            let keys: Vec<String> = self
                .signed_by
                .iter()
                .map(|k| {
                    k.file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            lines.push(format!(
                "integrity: loads only if signed by {}",
                keys.join(" or ")
            ));
        }
        if !self.identities.is_empty() {
            let ids: Vec<String> = self.identities.iter().map(ToString::to_string).collect();
            lines.push(format!(
                "integrity: loads only if signed without a key by {}",
                ids.join(" or ")
            ));
        }
        let integrity_only = usize::from(self.sha256.is_some())
            + usize::from(!self.signed_by.is_empty())
            + usize::from(!self.identities.is_empty());
        if lines.len() == integrity_only {
            lines.insert(
                0,
                "nothing beyond the defaults: no files, no environment, no network".into(),
            );
        }
        lines
    }
}
