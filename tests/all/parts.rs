//! Results of several parts (WIT 0.3.0 `tool-output`): images, audio,
//! embedded resources and annotations through the library, the CLI (text
//! on stdout, `--out DIR` files, `--json` with base64) and MCP; and the
//! host refusing parts that lie about their bytes, come by the thousand,
//! point at `file://` or `javascript:`, or carry escape codes; and the
//! Python, JavaScript and C helpers' parts and client requests.

use base64::Engine as _;
use corral::{CallOptions, PartContent, Role};
use serde_json::json;

use crate::cli::{corral, stdout_json};
use crate::mcp::Stdio_;
use crate::support::{
    C_PROBE, CHART, HOSTILE, JS_PROBE, JS_WEB, PY_PROBE, REFERENCE_TOOLS, plugin_dir,
    plugin_dir_with_policies,
};

const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";

fn base64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64")
}

#[tokio::test]
async fn the_library_returns_every_part_in_order_with_its_annotations() {
    let dir = plugin_dir(&[REFERENCE_TOOLS]);
    let host = crate::support::host(dir.path()).await;
    let out = host
        .call("test_multiple_content_types", "{}", &CallOptions::default())
        .await
        .expect("mixed");
    assert_eq!(out.text, "Multiple content types test:");
    assert_eq!(out.parts.len(), 3, "{:?}", out.parts);
    assert!(matches!(&out.parts[0].content, PartContent::Text { text } if text == &out.text));
    match &out.parts[1].content {
        PartContent::Image(media) => {
            assert_eq!(media.mime_type, "image/png");
            assert!(media.data.starts_with(PNG_MAGIC));
        }
        other => panic!("an image, not {other:?}"),
    }
    let annotations = out.parts[1].annotations.as_ref().expect("annotations");
    assert_eq!(annotations.audience, [Role::User]);
    assert_eq!(annotations.priority, Some(0.5));
    assert!(matches!(&out.parts[2].content, PartContent::Resource(r)
        if r.uri == "corral://reference/mixed-content-resource"));

    let audio = host
        .call("test_audio_content", "{}", &CallOptions::default())
        .await
        .expect("audio");
    assert_eq!(audio.text, "", "no text part");
    assert!(matches!(&audio.parts[..], [p] if matches!(&p.content,
        PartContent::Audio(m) if m.mime_type == "audio/wav" && m.data.starts_with(b"RIFF"))));
}

#[tokio::test]
async fn parts_that_break_the_rules_fail_the_call_and_name_the_part() {
    let dir = plugin_dir(&[HOSTILE]);
    let host = crate::support::host(dir.path()).await;
    let call = |arguments: serde_json::Value| {
        let host = host.clone();
        async move {
            host.call("bad_parts", &arguments.to_string(), &CallOptions::default())
                .await
        }
    };
    // GIF bytes called a PNG.
    let err = call(json!({"kind": "mime"})).await.unwrap_err();
    assert_eq!(err.kind(), "output_invalid", "{err}");
    assert!(
        err.to_string().contains("part 0") && err.to_string().contains("image/png"),
        "{err}"
    );
    // Ten thousand parts.
    let err = call(json!({"kind": "many", "count": 10_000}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "output_invalid", "{err}");
    assert!(err.to_string().contains("at most 64"), "{err}");
    // Schemes a client must never be handed by a guest.
    for uri in [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "http://example.com/",
    ] {
        let err = call(json!({"kind": "uri", "uri": uri})).await.unwrap_err();
        assert_eq!(err.kind(), "output_invalid", "{uri}: {err}");
        assert!(err.to_string().contains("https://"), "{err}");
    }
    let ok = call(json!({"kind": "uri", "uri": "https://example.com/a"}))
        .await
        .expect("an https link is fine");
    assert!(matches!(&ok.parts[..], [p] if matches!(&p.content, PartContent::ResourceLink(_))));
    // Within the rules the host still serves.
    crate::support::assert_still_serves(&host).await;
}

#[test]
fn the_cli_prints_text_writes_binary_parts_and_gives_json() {
    let dir = plugin_dir(&[REFERENCE_TOOLS, HOSTILE]);
    let out_dir = tempfile::tempdir().expect("tempdir");
    let out_path = out_dir.path().to_str().expect("utf-8");
    let out = corral(
        dir.path(),
        &["call", "test_multiple_content_types", "--out", out_path],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout.trim(), "Multiple content types test:");
    let written = out_dir.path().join("test_multiple_content_types-1.png");
    assert!(stderr.contains(&written.display().to_string()), "{stderr}");
    let bytes = std::fs::read(&written).expect("the image was written");
    assert!(bytes.starts_with(PNG_MAGIC));
    assert!(
        stderr.contains("resource <corral://reference/mixed-content-resource>"),
        "{stderr}"
    );

    // Without --out, the part is described, not written.
    let out = corral(dir.path(), &["call", "test_image_content"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("image image/png") && stderr.contains("--out DIR"),
        "{stderr}"
    );

    // --json: every part, bytes as base64.
    let out = corral(
        dir.path(),
        &["call", "test_multiple_content_types", "--json"],
    );
    let json = stdout_json(&out);
    let parts = json["parts"].as_array().expect("parts");
    assert_eq!(parts.len(), 3, "{json}");
    assert_eq!(parts[1]["content"]["type"], "image");
    assert_eq!(parts[1]["annotations"]["audience"], json!(["user"]));
    assert!(base64(parts[1]["content"]["data"].as_str().expect("data")).starts_with(PNG_MAGIC));

    // The line about a part on stderr shows a guest's escape codes
    // escaped (stdout, piped here, carries the tool's text as it is, and
    // is escaped on a terminal).
    let out = corral(dir.path(), &["call", "bad_parts", r#"{"kind": "escape"}"#]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("link ") && stderr.contains("named"),
        "{stderr}"
    );
    assert!(!out.stderr.contains(&0x1b), "{stderr}");
}

#[test]
fn mcp_clients_get_image_audio_and_resource_content_blocks() {
    let dir = plugin_dir(&[REFERENCE_TOOLS]);
    let mut mcp = Stdio_::start(dir.path(), &["--no-watch"]);
    mcp.initialize(json!({}));
    let image = mcp.call(1, "test_image_content", json!({}));
    let block = &image["result"]["content"][0];
    assert_eq!(block["type"], "image", "{image}");
    assert_eq!(block["mimeType"], "image/png");
    assert!(base64(block["data"].as_str().expect("data")).starts_with(PNG_MAGIC));
    assert!(
        image["result"].get("structuredContent").is_none(),
        "{image}"
    );

    let audio = mcp.call(2, "test_audio_content", json!({}));
    assert_eq!(audio["result"]["content"][0]["type"], "audio", "{audio}");
    assert_eq!(audio["result"]["content"][0]["mimeType"], "audio/wav");

    let embedded = mcp.call(3, "test_embedded_resource", json!({}));
    let resource = &embedded["result"]["content"][0];
    assert_eq!(resource["type"], "resource", "{embedded}");
    assert_eq!(resource["resource"]["mimeType"], "text/plain");
    assert_eq!(
        resource["resource"]["text"],
        "This is an embedded resource content."
    );

    let mixed = mcp.call(4, "test_multiple_content_types", json!({}));
    let types: Vec<&str> = mixed["result"]["content"]
        .as_array()
        .expect("content")
        .iter()
        .map(|b| b["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(types, ["text", "image", "resource"], "{mixed}");
    let annotations = &mixed["result"]["content"][1]["annotations"];
    assert_eq!(annotations["audience"], json!(["user"]), "{mixed}");
    assert_eq!(annotations["priority"], 0.5);
}

#[tokio::test]
async fn the_chart_sample_draws_a_png_of_the_size_asked_and_returns_its_data() {
    let dir = plugin_dir(&[CHART]);
    let host = crate::support::host(dir.path()).await;
    let arguments = json!({"title": "Calls", "labels": ["a", "b", "c"],
                           "values": [3.0, -1.5, 7.25], "width": 320, "height": 200});
    let out = host
        .call("bar_chart", &arguments.to_string(), &CallOptions::default())
        .await
        .expect("chart");
    assert_eq!(out.parts.len(), 5, "{:?}", out.parts);
    assert!(
        matches!(&out.parts[0].content, PartContent::Text { text } if text.contains("the largest is c (7.25)")),
        "{:?}",
        out.parts[0]
    );
    let PartContent::Image(image) = &out.parts[1].content else {
        panic!("an image, not {:?}", out.parts[1]);
    };
    assert!(image.data.starts_with(PNG_MAGIC));
    // The IHDR chunk: width and height, big-endian, at bytes 16..24.
    let side = |at: usize| u32::from_be_bytes(image.data[at..at + 4].try_into().expect("4 bytes"));
    assert_eq!((side(16), side(20)), (320, 200));
    // The data is the structured part, which plans reference.
    let data = out.json().expect("json");
    assert_eq!(data["bars"][1], json!({"label": "b", "value": -1.5}));
    // The file, linked and embedded under one `corral://` URI (an MCP client
    // gets the link and reads the file; see `mcp::resources`).
    let (PartContent::ResourceLink(link), PartContent::Resource(file)) =
        (&out.parts[3].content, &out.parts[4].content)
    else {
        panic!("a link and the file, not {:?}", &out.parts[3..]);
    };
    assert!(
        link.uri.starts_with("corral://chart/calls-") && link.uri.ends_with(".png"),
        "{link:?}"
    );
    assert_eq!(file.uri, link.uri);
    assert_eq!(link.size, Some(image.data.len() as u64));
    // A pipeline ending in the chart returns its parts too.
    let pipelines = json!({"version": 1, "pipelines": [{
        "name": "chart_of_two",
        "description": "Chart two numbers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "number"}}},
        "error_strategy": "fail_fast",
        "steps": [{"tool": "bar_chart", "arguments": {"title": "Two", "labels": ["a", "b"],
                   "values": ["$ref:input.a", 2], "width": 64, "height": 64}}]
    }]});
    std::fs::write(dir.path().join("pipelines.json"), pipelines.to_string()).expect("write");
    let host = crate::support::host(dir.path()).await;
    let piped = host
        .call("chart_of_two", r#"{"a": 1}"#, &CallOptions::default())
        .await
        .expect("pipeline");
    assert!(
        matches!(&piped.parts[..], [_, p, ..] if matches!(&p.content, PartContent::Image(_))),
        "{:?}",
        piped.parts
    );
    assert_eq!(piped.json().expect("json")["bars"][0]["value"], 1.0);
    // Bad input is the caller's to fix, named.
    let err = host
        .call(
            "bar_chart",
            r#"{"title": "x", "labels": ["a"], "values": [1, 2]}"#,
            &CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_arguments", "{err}");
    assert!(err.to_string().contains("same length"), "{err}");
}

/// Answers a call's client requests: the person says "Ada", the model "4",
/// the roots are one folder.
pub(crate) struct Scripted;

impl corral::ClientRequests for Scripted {
    fn ask<'a>(
        &'a self,
        _asking: &'a corral::Asking,
        request: corral::ClientRequest,
    ) -> corral::ClientFuture<'a> {
        Box::pin(async move {
            match request {
                corral::ClientRequest::Elicit { .. } => Ok(corral::ClientAnswer::Elicited(
                    corral::Elicitation::Accept(json!({"name": "Ada"})),
                )),
                corral::ClientRequest::Sample { .. } => Ok(corral::ClientAnswer::Sampled(
                    corral::Sampled::new("4".into(), "m".into(), None),
                )),
                _ => Ok(corral::ClientAnswer::Roots(vec![corral::ClientRoot::new(
                    "file:///work".into(),
                    Some("work".into()),
                )])),
            }
        })
    }
}

#[tokio::test]
async fn the_python_javascript_and_c_helpers_return_parts_and_ask_the_client() {
    let policy = "version = 1\n[client]\nelicitation = true\nroots = true\n\
                  sampling = { max_tokens = 20, calls_per_call = 1 }\n";
    let dir = plugin_dir_with_policies(&[
        (PY_PROBE, Some(policy)),
        (JS_PROBE, Some(policy)),
        (JS_WEB, Some(policy)),
        (C_PROBE, Some(policy)),
    ]);
    let host = crate::support::host(dir.path()).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    for tool in ["py_parts", "js_parts"] {
        let out = host
            .call(tool, r#"{"name": "Ada"}"#, &CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        let kinds: Vec<&str> = out
            .parts
            .iter()
            .map(|p| match &p.content {
                PartContent::Text { .. } => "text",
                PartContent::Image(_) => "image",
                PartContent::Json { .. } => "json",
                PartContent::ResourceLink(_) => "link",
                PartContent::Resource(_) => "resource",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            ["text", "image", "json", "link", "resource"],
            "{tool}"
        );
        let annotations = out.parts[1].annotations.as_ref().expect("annotations");
        assert_eq!(
            (annotations.audience.as_slice(), annotations.priority),
            (&[Role::User][..], Some(0.5)),
            "{tool}"
        );
        assert_eq!(*out.json().expect("json"), json!({"name": "Ada"}), "{tool}");
    }

    // Asked at once, each answered, in each helper's own shapes; and once
    // more alone (the throwing function, from QuickJS and SpiderMonkey).
    let options = CallOptions::default().with_client(std::sync::Arc::new(Scripted));
    let question = r#"{"question": "Who are you?"}"#;
    let ada = json!({"action": "accept", "content": {"name": "Ada"}});
    let expected = [
        (
            "py_ask",
            json!({"answers": [["accept", {"name": "Ada"}], [["file:///work", "work"]]]}),
        ),
        (
            "js_ask",
            json!({"answers": [ada, [{"uri": "file:///work", "name": "work"}]], "again": ada}),
        ),
        ("js_web_elicit", ada.clone()),
        ("c_ask", json!({"action": 0, "answers": {"name": "Ada"}})),
        ("c_sample", json!({"text": "4"})),
    ];
    for (tool, want) in expected {
        let arguments = if tool.starts_with("c_") {
            r#"{"path": "?"}"#
        } else {
            question
        };
        let out = host
            .call(tool, arguments, &options)
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert_eq!(*out.json().expect("json"), want, "{tool}");
    }
    // Without the grants nothing throws past the helper: each answer is the
    // ClientError naming the grant to add.
    let dir = plugin_dir(&[PY_PROBE, JS_PROBE]);
    let host = crate::support::host(dir.path()).await;
    for tool in ["py_ask", "js_ask"] {
        let out = host
            .call(tool, r#"{"question": "Who?"}"#, &options)
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        let answers = out.json().expect("json")["answers"].clone();
        assert!(
            answers[0]
                .as_str()
                .is_some_and(|a| a.starts_with("denied: ") && a.contains("elicitation = true")),
            "{tool}: {answers}"
        );
    }
}

#[tokio::test]
async fn a_plan_references_a_binary_steps_resources_and_a_charts_data() {
    let dir = plugin_dir(&[REFERENCE_TOOLS, CHART]);
    let host = crate::support::host(dir.path()).await;
    let plan = json!({"steps": [
        {"id": "file", "tool": "test_embedded_resource", "arguments": {}},
        {"id": "image", "tool": "test_image_content", "arguments": {}},
        {"id": "chart", "tool": "bar_chart", "arguments": {"title": "T", "labels": ["a"],
                                                        "values": [2], "width": 64, "height": 64}},
        {"id": "say", "tool": "greet", "arguments": {"name": "$ref:file.links.0.uri"}},
        {"id": "top", "tool": "greet", "arguments": {"name": "$ref:chart.bars.0.label"}},
    ]});
    let out = host
        .call(
            "execute_tool_plan",
            &plan.to_string(),
            &CallOptions::default(),
        )
        .await
        .expect("plan");
    let result = out.json().expect("json");
    let step = |id: &str| {
        result["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no step {id} in {result}"))
    };
    // Only binary parts: the step is its resources, named and typed.
    assert_eq!(
        step("file")["output"],
        json!({"links": [{"uri": "corral://reference/embedded-resource",
                          "name": "embedded-resource", "mime_type": "text/plain", "size": 37}],
               "media": []})
    );
    assert_eq!(
        step("image")["output"],
        json!({"links": [], "media": [{"type": "image", "mime_type": "image/png", "size": 69}]})
    );
    assert_eq!(
        step("say")["output"],
        "Hello, corral://reference/embedded-resource!"
    );
    // A result with a structured part is that part.
    assert_eq!(step("top")["output"], "Hello, a!");
}

#[tokio::test]
async fn a_guests_request_keys_and_count_are_checked_before_anyone_is_asked() {
    let policy = "version = 1\n[client]\nroots = true\n";
    let dir = plugin_dir_with_policies(&[(REFERENCE_TOOLS, Some(policy))]);
    let host = crate::support::host(dir.path()).await;
    let options = CallOptions::default().with_client(std::sync::Arc::new(Scripted));
    let out = host
        .call("test_bad_asks", "{}", &options)
        .await
        .expect("asked");
    // A string result is one JSON part: the string.
    let text = out.json().and_then(|v| v.as_str()).expect("a string");
    let lines: Vec<&str> = text.lines().collect();
    // The first `a` is asked; the second `a` and `bad key` are not.
    let keyed: Vec<&str> = lines[0].split("; error ").collect();
    assert_eq!(keyed[0], "1 roots", "{text}");
    assert!(
        keyed[1].contains("two requests of one `ask` are named `a`"),
        "{text}"
    );
    assert!(keyed[2].contains("must be 1 to 64 ASCII letters"), "{text}");
    // Nine at once: every one fails, none is asked.
    let many: Vec<&str> = lines[1].split("; error ").collect();
    assert_eq!(many.len(), 9, "{text}");
    assert!(
        many.iter()
            .all(|a| a.contains("9 requests asked at once; `ask` takes at most 8")),
        "{text}"
    );
}
