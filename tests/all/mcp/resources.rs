//! The `corral://` resources a tool's result leaves behind: the chart
//! sample links and embeds its PNG under one URI, so an MCP client gets the
//! link alone and reads the file with `resources/read`, as the tenant that
//! called and no other.

use serde_json::json;

use super::Stdio_;
use crate::support::{CHART, plugin_dir};

#[test]
fn a_linked_resource_is_read_by_its_tenant_only() {
    let dir = plugin_dir(&[CHART]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    mcp.initialize(json!({}));
    let tenant = |name: &str| json!({"corral/context": {"tenant": name}});
    let called = mcp.request(
        1,
        "tools/call",
        json!({"name": "bar_chart", "_meta": tenant("a"),
               "arguments": {"title": "Q3 sales", "labels": ["x", "y"], "values": [1, 2],
                             "width": 64, "height": 64}}),
    );
    let content = called["result"]["content"].as_array().expect("content");
    let types: Vec<&str> = content
        .iter()
        .map(|b| b["type"].as_str().unwrap_or_default())
        .collect();
    // The file went into the store: the client gets the link, not the bytes
    // a second time.
    assert_eq!(types, ["text", "image", "resource_link"], "{called}");
    let link = &content[2];
    let uri = link["uri"].as_str().expect("uri");
    assert!(uri.starts_with("corral://chart/q3-sales-"), "{link}");
    assert_eq!(link["mimeType"], "image/png", "{link}");

    let read = |mcp: &mut Stdio_, id: u64, who: &str| {
        mcp.request(
            id,
            "resources/read",
            json!({"uri": uri, "_meta": tenant(who)}),
        )
    };
    let file = read(&mut mcp, 2, "a");
    let contents = &file["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "image/png", "{file}");
    assert_eq!(
        contents["blob"], content[1]["data"],
        "the same PNG as the image part"
    );
    // Another tenant, or a URI nothing made, reads as no resource at all.
    for (id, response) in [
        (3, read(&mut mcp, 3, "b")),
        (4, {
            mcp.request(
                4,
                "resources/read",
                json!({"uri": "corral://chart/none.png",
                                                "_meta": tenant("a")}),
            )
        }),
    ] {
        assert_eq!(response["error"]["code"], -32002, "{id}: {response}");
        assert!(
            response["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("no resource `corral://chart/")),
            "{response}"
        );
    }
}
