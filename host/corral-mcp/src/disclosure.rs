//! Progressive disclosure over MCP (Embabel's `UnfoldingTool`): what a
//! client's `tools/list` shows when the host has facades
//! ([`corral::Facades`]), and what calling a facade does.
//!
//! - **The first list** holds the facades that no other facade holds, the
//!   tools in no facade, and the built-in tools. Each facade is a tool with
//!   one optional argument, `fold`.
//! - **Unfolding**: calling a facade lists its tools (name, description,
//!   `inputSchema`), its nested facades and its usage notes, and makes them
//!   part of the client's list (with `notifications/tools/list_changed` on a
//!   session). The facade stays listed under the same name as the *guide*:
//!   its description says it is unfolded and carries the usage notes, once,
//!   for all its tools; calling it again returns the listing; calling it
//!   with `{"fold": true}` hides its tools again. Unfolding a nested facade
//!   unfolds the facades around it too.
//! - **Exclusive** facades: while one is unfolded, the list holds only it,
//!   what it unfolds, and the built-in tools, until it is folded.
//! - **Hidden tools still work**: a call of a tool inside a folded facade
//!   runs, and its result says which facade holds it (`_meta["corral/facade"]`
//!   and a note after the output).
//!
//! Where the unfolded set lives:
//! - **Session-based revisions** (up to 2025-11-25): in the session, until
//!   it ends.
//! - **2026-07-28** (no sessions): with the client. A facade call returns the
//!   set as a token in `_meta["corral/disclosure"]`, signed with the server's
//!   key (the same as for approvals, so every replica reads it) and good for
//!   [`TOKEN_TTL`]; a client that sends it back in the `_meta` of its later
//!   requests gets the unfolded list. A client that does not still has the
//!   listing in the facade's result and can call those tools by name.
//!
//! A list with facades is per conversation: it is marked `cacheScope:
//! private`, `ttlMs: 0`. Its order is deterministic: by name.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ContentBlock, JsonObject, Tool as McpTool, ToolAnnotations};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use corral::{Catalog, Facade, Tool};

/// The `_meta` key of the unfolded set of a 2026-07-28 client.
pub const DISCLOSURE_META_KEY: &str = "corral/disclosure";

/// The `_meta` key naming the facade that holds a hidden tool a call used.
pub const FACADE_META_KEY: &str = "corral/facade";

/// How long a 2026-07-28 client's unfolded set stays good: 86 400 000 ms
/// (a day, about a long conversation).
pub const TOKEN_TTL: Duration = Duration::from_secs(86_400);

/// The unfolded facades of one client, in the order it unfolded them.
pub(crate) type Unfolded = Vec<String>;

/// A session's unfolded facades (session-based revisions).
pub(crate) type SessionState = Arc<Mutex<Unfolded>>;

/// The purpose label a disclosure token's signature covers.
const DISCLOSURE: &[u8] = b"corral/disclosure";

/// The token of a 2026-07-28 client's unfolded set.
#[derive(Debug, Serialize, Deserialize)]
struct Token {
    unfolded: Unfolded,
}

/// The token for `unfolded`, sealed by `states`; `None` (logged) when it
/// cannot be written.
pub(crate) fn seal(states: &crate::approval::States, unfolded: &Unfolded) -> Option<String> {
    let token = Token {
        unfolded: unfolded.clone(),
    };
    match states.seal_value(&token, DISCLOSURE, TOKEN_TTL) {
        Ok(sealed) => Some(sealed),
        Err(err) => {
            tracing::error!("cannot write a disclosure token: {err}");
            None
        }
    }
}

/// The unfolded set in a client's token; nothing for none, or for one that
/// is not this server's (a listing is no secret: the client just sees the
/// first list).
pub(crate) fn open(states: &crate::approval::States, token: Option<&str>) -> Unfolded {
    let Some(token) = token else {
        return Vec::new();
    };
    match states.open_value::<Token>(token, DISCLOSURE) {
        Ok(token) => token.unfolded,
        Err(_) => {
            tracing::debug!("ignoring a disclosure token that does not verify");
            Vec::new()
        }
    }
}

/// One entry of a client's list.
pub(crate) enum Entry<'a> {
    /// A tool.
    Tool(&'a Arc<Tool>),
    /// A facade, unfolded (the guide) or not.
    Facade(&'a Facade, bool),
}

/// What `catalog` shows a client that unfolded `unfolded`, sorted by name.
pub(crate) fn visible<'a>(catalog: &'a Catalog, unfolded: &[String]) -> Vec<Entry<'a>> {
    let facades = catalog.facades();
    let is_unfolded = |name: &str| unfolded.iter().any(|u| u == name);
    // The last unfolded exclusive facade, if any, is the only root.
    let exclusive = unfolded
        .iter()
        .rev()
        .filter_map(|name| facades.get(name))
        .find(|f| f.exclusive);
    let mut entries: Vec<Entry<'a>> = Vec::new();
    let mut stack: Vec<&Facade> = Vec::new();
    for tool in catalog.tools() {
        let name = &tool.spec().name;
        let builtin = tool.plugin().is_none() && tool.pipeline().is_none();
        if builtin || (exclusive.is_none() && facades.holder(name).is_none()) {
            entries.push(Entry::Tool(tool));
        }
    }
    match exclusive {
        Some(facade) => stack.push(facade),
        None => stack.extend(facades.top_level()),
    }
    while let Some(facade) = stack.pop() {
        let open = is_unfolded(&facade.name);
        entries.push(Entry::Facade(facade, open));
        if open {
            for tool in &facade.tools {
                if let Some(tool) = catalog.tool(tool) {
                    entries.push(Entry::Tool(tool));
                }
            }
            stack.extend(facade.facades.iter().filter_map(|n| facades.get(n)));
        }
    }
    entries.sort_by(|a, b| name_of(a).cmp(name_of(b)));
    entries
}

fn name_of<'a>(entry: &'a Entry<'_>) -> &'a str {
    match entry {
        Entry::Tool(tool) => &tool.spec().name,
        Entry::Facade(facade, _) => &facade.name,
    }
}

/// The MCP definition of `facade`, folded or (as its guide) unfolded.
pub(crate) fn definition(facade: &Facade, unfolded: bool) -> McpTool {
    let description = if unfolded {
        let mut text = format!(
            "Guide to `{}` (unfolded: its tools are listed). {} Call it to see its tools again; \
             call it with {{\"fold\": true}} to hide them.",
            facade.name, facade.description
        );
        if let Some(notes) = &facade.usage_notes {
            text.push_str(&format!("\nUsage notes: {notes}"));
        }
        text
    } else {
        facade.description.clone()
    };
    // Kept small: a facade is in every first list. `fold` is explained in
    // the guide's description.
    let schema: JsonObject = match json!({
        "type": "object",
        "properties": {"fold": {"type": "boolean"}},
    }) {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    McpTool::new(facade.name.clone(), description, Arc::new(schema))
        .with_annotations(ToolAnnotations::new().read_only(true))
}

/// Applies a call of `facade` (with `arguments`) to `unfolded`; returns
/// the result's text.
pub(crate) fn call(
    catalog: &Catalog,
    facade: &Facade,
    arguments: &JsonObject,
    unfolded: &mut Unfolded,
) -> String {
    let facades = catalog.facades();
    if arguments.get("fold").and_then(Value::as_bool) == Some(true) {
        // Fold it and everything unfolded inside it.
        let mut inside = BTreeSet::from([facade.name.clone()]);
        let mut stack = vec![facade];
        while let Some(f) = stack.pop() {
            for nested in f.facades.iter().filter_map(|n| facades.get(n)) {
                inside.insert(nested.name.clone());
                stack.push(nested);
            }
        }
        unfolded.retain(|u| !inside.contains(u));
        return json!({
            "facade": facade.name,
            "folded": true,
            "hint": format!("`{}`'s tools are hidden again; call `{}` to list them.", facade.name, facade.name),
        })
        .to_string();
    }
    // Unfold it and the facades around it.
    let mut chain = vec![facade.name.clone()];
    let mut at = facade.name.as_str();
    while let Some(up) = facades.holder(at) {
        chain.push(up.to_string());
        at = up;
    }
    // Most recent last: an exclusive facade unfolded again is the one
    // shown.
    for name in chain.into_iter().rev() {
        unfolded.retain(|u| *u != name);
        unfolded.push(name);
    }
    let tools: Vec<Value> = facade
        .tools
        .iter()
        .filter_map(|name| catalog.tool(name))
        .map(|tool| {
            let spec = tool.spec();
            json!({"name": spec.name, "description": spec.description, "inputSchema": spec.parameters})
        })
        .collect();
    let nested: Vec<Value> = facade
        .facades
        .iter()
        .filter_map(|n| facades.get(n))
        .map(|f| json!({"name": f.name, "description": f.description}))
        .collect();
    let mut listing = json!({
        "facade": facade.name,
        "description": facade.description,
        "tools": tools,
        "hint": format!(
            "These tools are now in your tool list: call them by name. Call `{}` again for \
             this list, or with {{\"fold\": true}} to hide them.",
            facade.name
        ),
    });
    if !nested.is_empty() {
        listing["facades"] = Value::Array(nested);
    }
    if let Some(notes) = &facade.usage_notes {
        listing["usage_notes"] = json!(notes);
    }
    if facade.exclusive {
        listing["exclusive"] = json!(true);
    }
    listing.to_string()
}

/// The note appended to the result of a hidden tool's call.
pub(crate) fn hidden_note(tool: &str, facade: &str) -> ContentBlock {
    ContentBlock::text(format!(
        "(`{tool}` belongs to `{facade}`; call `{facade}` to list its related tools.)"
    ))
}
