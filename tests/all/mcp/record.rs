//! Recording a call an MCP client asks for (`_meta["corral/record"]`):
//! only where the operator allows it (`serve --record-on-request`); the
//! result names the file (not the directory), and the file replays.

use serde_json::{Value, json};

use super::http::{HttpServer, message_of};
use crate::support::{HOSTILE, plugin_dir};

/// `echo` over stateless HTTP, asking to be recorded when `record`.
fn echo(server: &HttpServer, record: bool) -> Value {
    let mut meta = super::stateless_meta(json!({}));
    if record {
        meta["corral/record"] = json!(true);
    }
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "kept"}, "_meta": meta}});
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
    ];
    let (status, body) = server.send("POST", "/mcp", &headers, &message.to_string());
    assert_eq!(status, 200, "{body}");
    message_of(&body)["result"].clone()
}

#[test]
fn a_client_gets_its_call_recorded_only_where_the_operator_allows_it() {
    let dir = plugin_dir(&[HOSTILE]);
    let recordings = dir.path().join("recordings");
    let at = recordings.display().to_string();

    let closed = HttpServer::start(dir.path(), &["--recordings-dir", &at]);
    let result = echo(&closed, true);
    assert_eq!(result["isError"], false, "{result}");
    assert!(
        result["_meta"].get("corral/recordings").is_none(),
        "{result}"
    );
    assert!(!recordings.exists());
    drop(closed);

    let open = HttpServer::start(
        dir.path(),
        &["--recordings-dir", &at, "--record-on-request"],
    );
    let plain = echo(&open, false);
    assert!(plain["_meta"].get("corral/recordings").is_none(), "{plain}");
    let result = echo(&open, true);
    let names = result["_meta"]["corral/recordings"]
        .as_array()
        .unwrap_or_else(|| panic!("{result}"));
    assert_eq!(names.len(), 1, "{result}");
    let name = names[0].as_str().expect("a name");
    assert!(!name.contains('/'), "{name}");
    let file = recordings.join(name);
    let recording = corral::replay::Recording::read(&file).expect("the recording");
    assert_eq!(recording.header.tool, "echo");
    assert!(recording.header.arguments.contains("kept"));
}
