//! The `notes` sample plugin: plain-text notes kept as `<name>.md` files in the
//! one directory the host grants it, seen by the guest as `/notes`.
//!
//! Without a grant the plugin has no filesystem at all (corral denies every
//! path by default), and every tool says so. Deleting a note requires approval:
//! the host asks its reviewer before the sandbox even starts.

use std::path::PathBuf;

use corral_guest::{Level, ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Where the granted directory appears inside the guest.
const ROOT: &str = "/notes";

/// The longest note accepted, in bytes.
const MAX_NOTE_BYTES: usize = 64 * 1024;

#[derive(Deserialize, JsonSchema)]
struct Name {
    /// The note's name: letters, digits, `-` and `_`, at most 64 characters.
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,64}$"))]
    name: String,
}

fn path_of(name: &str) -> PathBuf {
    PathBuf::from(ROOT).join(format!("{name}.md"))
}

/// The error for any filesystem failure, naming the note and the cause.
fn fs_error(what: &str, name: &str, err: std::io::Error) -> ToolError {
    if std::fs::metadata(ROOT).is_err() {
        return ToolError::failed(format!(
            "no notes directory: the host did not grant `{ROOT}` to this plugin \
             (grant a directory in notes.policy.toml)"
        ));
    }
    match err.kind() {
        std::io::ErrorKind::NotFound => {
            ToolError::invalid(format!("there is no note named `{name}`"))
        }
        _ => ToolError::failed(format!("cannot {what} note `{name}`: {err}")),
    }
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

/// List the notes, sorted by name, with their sizes in bytes.
#[tool(category = "notes", keywords("notes", "list", "files"), idempotent)]
fn notes_list(_args: Empty) -> Result<Value, ToolError> {
    let entries = std::fs::read_dir(ROOT).map_err(|e| fs_error("list", "*", e))?;
    let mut notes = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| fs_error("list", "*", e))?;
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if let Some(name) = file_name.strip_suffix(".md") {
            let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
            notes.push(json!({ "name": name, "bytes": bytes }));
        }
    }
    notes.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Ok(json!({ "notes": notes }))
}

/// Read a note's text.
#[tool(category = "notes", keywords("notes", "read"), idempotent)]
fn notes_read(args: Name) -> Result<Value, ToolError> {
    let text = std::fs::read_to_string(path_of(&args.name))
        .map_err(|e| fs_error("read", &args.name, e))?;
    Ok(json!({ "name": args.name, "text": text }))
}

#[derive(Deserialize, JsonSchema)]
struct Write {
    /// The note's name: letters, digits, `-` and `_`, at most 64 characters.
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,64}$"))]
    name: String,
    /// The note's text (at most 65 536 bytes); replaces any previous text.
    text: String,
}

/// Create or replace a note.
#[tool(category = "notes", keywords("notes", "write", "save"), idempotent)]
fn notes_write(args: Write) -> Result<Value, ToolError> {
    if args.text.len() > MAX_NOTE_BYTES {
        return Err(ToolError::invalid(format!(
            "the text is {} bytes; a note holds at most {MAX_NOTE_BYTES}",
            args.text.len()
        )));
    }
    std::fs::write(path_of(&args.name), &args.text)
        .map_err(|e| fs_error("write", &args.name, e))?;
    corral_guest::log(Level::Info, &format!("wrote note {}", args.name));
    Ok(json!({ "name": args.name, "bytes": args.text.len() }))
}

/// Delete a note. Irreversible, so the host asks for approval first.
#[tool(
    category = "notes",
    keywords("notes", "delete", "remove"),
    requires_approval
)]
fn notes_delete(args: Name) -> Result<Value, ToolError> {
    std::fs::remove_file(path_of(&args.name)).map_err(|e| fs_error("delete", &args.name, e))?;
    Ok(json!({ "deleted": args.name }))
}

corral_guest::plugin!(notes_list, notes_read, notes_write, notes_delete);
