//! The approval form an MCP client shows its user, one form for both flows
//! (server-initiated `elicitation/create` and 2026-07-28's input-required
//! result), and the reading of the user's answer into an
//! [`ApprovalDecision`].
//!
//! The form (an elicitation `requestedSchema`, primitive properties only, in
//! this order):
//! - `decision`: `allow`, `allow_always` ("always for this build": a standing
//!   approval bound to the plugin's sha256, so a rebuilt plugin asks again),
//!   `edit` (run with the arguments below) or `deny`, with no default, so
//!   nothing is approved unless someone chooses it; an accepted answer
//!   without a decision denies; `allow_always` is offered only for a
//!   plugin's tool (a standing approval binds to its build);
//! - `reason`: why, when denying (the model reads it);
//! - the call's arguments, prefilled, to edit: one field per argument
//!   (`edit.<name>`) when the tool's parameters are a flat object of strings,
//!   numbers, integers, booleans and string enums; otherwise one field
//!   (`edit.arguments`) holding the arguments as JSON text.
//!
//! Decline and cancel deny. Edited arguments go back to the host, which
//! validates them against the tool's schema again before anything runs.

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests,
};
use serde_json::{Map, Value};

use corral::untrusted_text::escape;
use corral::{ApprovalDecision, ReviewRequest};

/// The form's key under which edits of a non-flat tool travel as JSON text.
const JSON_FIELD: &str = "edit.arguments";

/// Longest reason kept from a user's answer, in characters.
const MAX_REASON_CHARS: usize = 1_000;

/// How the arguments appear in the form.
enum Edits<'a> {
    /// One field per top-level property: `(name, property schema)`.
    Flat(Vec<(&'a str, &'a Value)>),
    /// One JSON text field.
    Json,
}

/// The properties of `parameters` when every one is a primitive the
/// elicitation form can show.
fn edits(parameters: &Value) -> Edits<'_> {
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return Edits::Json;
    };
    let mut flat = Vec::new();
    for (name, schema) in properties {
        let kind = schema.get("type").and_then(Value::as_str);
        let primitive = match kind {
            Some("string") => schema
                .get("enum")
                .is_none_or(|e| e.as_array().is_some_and(|v| v.iter().all(Value::is_string))),
            Some("number" | "integer" | "boolean") => schema.get("enum").is_none(),
            _ => false,
        };
        if !primitive {
            return Edits::Json;
        }
        flat.push((name.as_str(), schema));
    }
    Edits::Flat(flat)
}

/// The tool's parameters schema, for the form (`{}` for a tool gone since).
pub(crate) fn parameters(host: &corral::Host, tool: &str) -> Value {
    host.tool(tool)
        .map(|t| t.spec().parameters.clone())
        .unwrap_or_default()
}

/// The question: a message and the form, for `request` of a tool whose
/// parameters schema is `parameters`.
///
/// # Errors
/// A message when the form cannot be expressed as an elicitation schema
/// (not expected: every property is built from the primitive kinds).
pub(crate) fn question(
    request: &ReviewRequest,
    parameters: &Value,
) -> Result<(String, ElicitationSchema), String> {
    let message = format!(
        "Approve this call?\n{}\n\nChoose a decision; to change the arguments, edit them \
         below and choose \"edit\".",
        request.render()
    );
    let tool = escape(&request.tool);
    let mut choices = vec![serde_json::json!({"const": "allow", "title": "Allow this call"})];
    // A standing approval needs a plugin build to bind to: pipelines and
    // built-ins have none.
    if !request.plugin_sha256.is_empty() {
        choices.push(serde_json::json!({"const": "allow_always",
            "title": format!("Allow, and do not ask again for this build of {tool}")}));
    }
    choices.push(
        serde_json::json!({"const": "edit", "title": "Allow, with the arguments edited below"}),
    );
    choices.push(serde_json::json!({"const": "deny", "title": "Deny"}));
    let mut properties: Vec<(String, Value)> = vec![
        (
            "decision".into(),
            // No default: whoever answers chooses.
            serde_json::json!({"type": "string", "title": "Decision", "oneOf": choices}),
        ),
        (
            "reason".into(),
            serde_json::json!({
                "type": "string",
                "title": "Reason, if you deny (the model reads it)",
            }),
        ),
    ];
    let current = request.arguments.as_object();
    match edits(parameters) {
        Edits::Flat(fields) => {
            for (name, schema) in fields {
                let mut field = Map::new();
                for key in [
                    "type",
                    "enum",
                    "minimum",
                    "maximum",
                    "minLength",
                    "maxLength",
                ] {
                    if let Some(value) = schema.get(key) {
                        field.insert(key.into(), value.clone());
                    }
                }
                field.insert("title".into(), Value::String(escape(name).into()));
                if let Some(description) = schema.get("description").and_then(Value::as_str) {
                    let description = escape(description);
                    field.insert("description".into(), Value::String(description.into()));
                }
                if let Some(value) = current.and_then(|args| args.get(name)) {
                    field.insert("default".into(), value.clone());
                }
                properties.push((format!("edit.{name}"), Value::Object(field)));
            }
        }
        Edits::Json => properties.push((
            JSON_FIELD.into(),
            serde_json::json!({
                "type": "string",
                "title": "Arguments (JSON)",
                "default": request.arguments.to_string(),
            }),
        )),
    }
    // The wire form keeps this order; a JSON map here would sort it.
    let fields: Vec<String> = properties
        .iter()
        .map(|(key, value)| format!("{}:{value}", Value::String(key.clone())))
        .collect();
    let text = format!(
        r#"{{"type":"object","properties":{{{}}},"required":["decision"]}}"#,
        fields.join(",")
    );
    let schema = serde_json::from_str(&text).map_err(|err| err.to_string())?;
    Ok((message, schema))
}

/// The question ([`question`]'s message and form) as the only entry of
/// an input-required result's or a task's `inputRequests`, under `key`.
pub(crate) fn input_requests(
    key: String,
    message: String,
    requested_schema: ElicitationSchema,
) -> InputRequests {
    let mut requests = InputRequests::new();
    requests.insert(
        key,
        InputRequest::Elicitation(ElicitRequest::new(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema,
            },
        )),
    );
    requests
}

/// The decision a user's answer means: `action` and, on accept, `content`
/// (the filled form). `request` is what was asked and `parameters` the
/// tool's schema, to read the edits the way [`question`] laid them out.
pub(crate) fn decision(
    request: &ReviewRequest,
    parameters: &Value,
    action: &ElicitationAction,
    content: Option<&Value>,
) -> ApprovalDecision {
    match action {
        ElicitationAction::Accept => {}
        ElicitationAction::Decline => {
            return ApprovalDecision::ExitEarly("the user declined".into());
        }
        // Cancel, and any action a later revision adds: no consent.
        _ => {
            return ApprovalDecision::ExitEarly("the user dismissed the request; denied".into());
        }
    }
    let empty = Map::new();
    let content = content.and_then(Value::as_object).unwrap_or(&empty);
    // Fail closed: an answer that does not fill the form in (no decision)
    // approves nothing.
    let Some(decision) = content.get("decision").and_then(Value::as_str) else {
        return ApprovalDecision::ExitEarly("the answer has no decision; denied".into());
    };
    match decision {
        "allow" => ApprovalDecision::Continue,
        "allow_always" => ApprovalDecision::ContinueAlways,
        "deny" => {
            let reason = content
                .get("reason")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(|r| r.chars().take(MAX_REASON_CHARS).collect::<String>());
            ApprovalDecision::ExitEarly(reason.unwrap_or_else(|| "denied by the user".into()))
        }
        "edit" => ApprovalDecision::Edit(edited(request, parameters, content)),
        other => ApprovalDecision::ExitEarly(format!(
            "the answer's decision `{}` is not allow, allow_always, edit or deny; denied",
            escape(&other.chars().take(64).collect::<String>())
        )),
    }
}

/// The arguments after the user's edits, as JSON text (the host parses and
/// validates it).
fn edited(request: &ReviewRequest, parameters: &Value, content: &Map<String, Value>) -> String {
    match edits(parameters) {
        Edits::Json => match content.get(JSON_FIELD) {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => request.arguments.to_string(),
        },
        Edits::Flat(fields) => {
            let mut arguments = request.arguments.as_object().cloned().unwrap_or_default();
            for (name, _) in fields {
                if let Some(value) = content.get(&format!("edit.{name}")) {
                    arguments.insert(name.to_string(), value.clone());
                }
            }
            Value::Object(arguments).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral::Gate;
    use serde_json::json;

    fn request(arguments: Value) -> ReviewRequest {
        ReviewRequest::new(
            Gate::Declared,
            "notes_delete",
            "notes",
            "ab".repeat(32),
            "Delete a note.",
            arguments,
            std::time::Duration::from_secs(1),
        )
    }

    #[test]
    fn a_flat_tool_gets_one_prefilled_field_per_argument_in_order() {
        let parameters = json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "The note."},
            "force": {"type": "boolean"}}});
        let (message, schema) =
            question(&request(json!({"name": "todo"})), &parameters).expect("form");
        assert!(message.starts_with("Approve this call?\n"), "{message}");
        // The wire text keeps the form's order (a JSON map would sort it).
        let text = serde_json::to_string(&schema).expect("json");
        let at = |key: &str| text.find(&format!("\"{key}\":")).expect(key);
        assert!(at("decision") < at("reason"), "{text}");
        assert!(at("reason") < at("edit.force"), "{text}");
        assert!(at("edit.force") < at("edit.name"), "{text}");
        let wire = serde_json::to_value(&schema).expect("json");
        assert_eq!(wire["properties"]["edit.name"]["default"], "todo");
        let decision = &wire["properties"]["decision"];
        assert!(decision.get("default").is_none(), "{decision}");
        assert_eq!(
            decision["oneOf"].as_array().map(Vec::len),
            Some(4),
            "{decision}"
        );
        assert_eq!(wire["required"], json!(["decision"]));
    }

    #[test]
    fn a_nested_tool_gets_its_arguments_as_json_text() {
        let parameters = json!({"type": "object", "properties": {
            "steps": {"type": "array", "items": {"type": "object"}}}});
        let args = json!({"steps": [{"id": "a"}]});
        // A built-in (no plugin build): no "always for this build".
        let mut builtin = request(args.clone());
        builtin.plugin_sha256.clear();
        let (_, schema) = question(&builtin, &parameters).expect("form");
        let wire = serde_json::to_value(&schema).expect("json");
        let choices = wire["properties"]["decision"]["oneOf"].to_string();
        assert!(!choices.contains("allow_always"), "{choices}");
        assert_eq!(
            wire["properties"][JSON_FIELD]["default"],
            Value::String(args.to_string())
        );
        let edit = json!({"decision": "edit", JSON_FIELD: "{\"steps\": []}"});
        let decided = decision(
            &request(args),
            &parameters,
            &ElicitationAction::Accept,
            Some(&edit),
        );
        assert_eq!(decided, ApprovalDecision::Edit("{\"steps\": []}".into()));
    }

    #[test]
    fn every_answer_maps_to_one_decision() {
        let parameters = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        let r = request(json!({"name": "todo"}));
        let decide = |action, content: Value| decision(&r, &parameters, &action, Some(&content));
        use ElicitationAction::{Accept, Cancel, Decline};
        assert_eq!(
            decide(Accept, json!({"decision": "allow"})),
            ApprovalDecision::Continue
        );
        // An answer that ignores the form (an older one) approves nothing.
        assert!(matches!(
            decide(Accept, json!({"approve": true})),
            ApprovalDecision::ExitEarly(r) if r.contains("no decision")
        ));
        assert_eq!(
            decide(Accept, json!({"decision": "allow_always"})),
            ApprovalDecision::ContinueAlways
        );
        assert_eq!(
            decide(Accept, json!({"decision": "deny", "reason": " not today "})),
            ApprovalDecision::ExitEarly("not today".into())
        );
        assert_eq!(
            decide(
                Accept,
                json!({"decision": "edit", "edit.name": "draft", "edit.other": 1})
            ),
            ApprovalDecision::Edit(json!({"name": "draft"}).to_string())
        );
        // Edits count only with "edit".
        assert_eq!(
            decide(Accept, json!({"decision": "allow", "edit.name": "draft"})),
            ApprovalDecision::Continue
        );
        assert!(matches!(
            decide(Accept, json!({"decision": "yes please"})),
            ApprovalDecision::ExitEarly(r) if r.contains("`yes please`")
        ));
        assert!(matches!(
            decide(Decline, json!({})),
            ApprovalDecision::ExitEarly(_)
        ));
        assert!(matches!(
            decide(Cancel, json!({})),
            ApprovalDecision::ExitEarly(_)
        ));
    }
}
