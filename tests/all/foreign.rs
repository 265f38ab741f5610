//! Any-component mode: a component of another world (`any_types`, every
//! WIT type, doc comments in the WIT beside it) served as tools. Every type
//! round-trips; the generated schemas accept what the component accepts and
//! refuse the rest before any guest code runs; doc comments become
//! descriptions; what is not a tool is skipped and said; a policy sets
//! metadata or forbids the mode; the host can turn it off.

mod builds;
mod docs;
mod hostile;
mod inspect;
mod paths;

use corral::{CallError, CallOptions, Host, LoadErrorReason};
use serde_json::{Value, json};

pub(super) use crate::support::host;
use crate::support::{ANY_JS, ANY_TYPES, COMMAND, cache, guest, plugin_dir, pool, repository_root};

/// A plugin directory holding the `any_types` fixture as `types.wasm`, with
/// its WIT beside it unless `docs` is false, and `policy` when given.
fn types_dir(docs: bool, policy: Option<&str>) -> tempfile::TempDir {
    types_dir_of(ANY_TYPES, docs, policy)
}

/// [`types_dir`] with `component`, a build of `any_types`'s WIT.
fn types_dir_of(component: &str, docs: bool, policy: Option<&str>) -> tempfile::TempDir {
    let dir = plugin_dir(&[]);
    std::fs::copy(guest(component), dir.path().join("types.wasm")).expect("copy");
    if docs {
        std::fs::copy(
            repository_root().join("tests/fixtures/any_types/wit/types.wit"),
            dir.path().join("types.wit"),
        )
        .expect("wit");
    }
    if let Some(policy) = policy {
        std::fs::write(dir.path().join("types.policy.toml"), policy).expect("policy");
    }
    dir
}

pub(super) async fn call(host: &Host, tool: &str, arguments: Value) -> Result<Value, CallError> {
    host.call_value(tool, arguments, &CallOptions::default())
        .await
        .map(|out| out.into_json().unwrap_or(Value::Null))
}

/// JSON equality with numbers compared by value (`2` is `2.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[tokio::test]
async fn every_wit_type_round_trips() {
    round_trips(ANY_TYPES).await;
}

/// The same WIT built with componentize-js (`jco componentize`) answers
/// exactly as the Rust build does.
#[tokio::test]
async fn every_wit_type_round_trips_through_a_javascript_build() {
    round_trips(ANY_JS).await;
}

/// Every type of `any_types`'s WIT round-trips through `component`, which
/// keeps its docs from the WIT beside it.
async fn round_trips(component: &str) {
    let dir = types_dir_of(component, true, None);
    let host = host(dir.path()).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    assert_eq!(
        host.tool("kinds_divide")
            .expect("divide")
            .spec()
            .description,
        "Divides a by b; fails with a message when b is zero.\n\n- `a`: the dividend\n\
         - `b`: the divisor, not zero"
    );

    let primitives = json!({"flag": true, "tiny": -128, "byte": 255, "short": -32768,
        "ushort": 65535, "int": -2147483648_i64, "uint": 4294967295_u64,
        "big": "-9223372036854775808", "ubig": "18446744073709551615", "single": 1.5,
        "double": "-Infinity", "letter": "é", "text": "a\nb"});
    let out = call(&host, "kinds_echo_primitives", primitives.clone())
        .await
        .expect("call");
    let expected: Vec<Value> = [
        "flag", "tiny", "byte", "short", "ushort", "int", "uint", "big", "ubig", "single",
        "double", "letter", "text",
    ]
    .iter()
    .map(|k| primitives[k].clone())
    .collect();
    assert!(same(&out, &Value::Array(expected)), "{out}");
    // 64-bit values within 2^53 stay numbers; NaN travels as a string.
    let small = json!({"flag": false, "tiny": 0, "byte": 0, "short": 0, "ushort": 0, "int": 0,
        "uint": 0, "big": 42, "ubig": "7", "single": 0, "double": "NaN", "letter": "x", "text": ""});
    let out = call(&host, "kinds_echo_primitives", small)
        .await
        .expect("call");
    assert_eq!(
        (&out[7], &out[8], &out[10]),
        (&json!(42), &json!(7), &json!("NaN")),
        "{out}"
    );

    let everything = json!({"flag": false, "tiny": 1, "byte": 2, "short": 3, "ushort": 4,
        "int": 5, "uint": 6, "big": 7, "ubig": 8, "single": 0.25, "double": -1e300,
        "letter": "x", "text": "t", "bytes": "AAEC/w==", "words": ["a", "b"], "maybe": 3,
        "nested-maybe": {"some": null}, "pair": ["p", -9], "at": {"x": 0.5, "y": 1},
        "shape": {"tag": "rect", "value": {"x": 2, "y": 3}}, "color": "green",
        "perms": ["write", "read"], "shapes": [{"tag": "circle", "value": 2}, {"tag": "empty"}]});
    let out = call(&host, "kinds_echo_everything", json!({"value": everything}))
        .await
        .expect("call");
    // Flags come back in their declaration order.
    let mut expected = everything.clone();
    expected["perms"] = json!(["read", "write"]);
    assert!(same(&out, &expected), "{out}");
    // A missing option field is `none`, and comes back missing.
    let mut no_maybe = everything.clone();
    no_maybe.as_object_mut().expect("object").remove("maybe");
    let out = call(&host, "kinds_echo_everything", json!({"value": no_maybe}))
        .await
        .expect("call");
    assert!(out.get("maybe").is_none(), "{out}");

    for shape in [
        json!({"tag": "circle", "value": 1.5}),
        json!({"tag": "empty"}),
    ] {
        let out = call(&host, "kinds_echo_shape", json!({"value": shape}))
            .await
            .expect("call");
        assert!(same(&out, &shape), "{out}");
    }
    for nested in [json!(null), json!({"some": null}), json!({"some": 5})] {
        let out = call(&host, "kinds_echo_nested_option", json!({"value": nested}))
            .await
            .expect("call");
        assert_eq!(out, nested);
    }
    assert_eq!(
        call(
            &host,
            "kinds_count_perms",
            json!({"perms": ["read", "exec"]})
        )
        .await
        .expect("call"),
        json!(2)
    );
    assert_eq!(
        call(&host, "greet", json!({"name": "Ana"}))
            .await
            .expect("call"),
        json!("Hello, Ana!")
    );
    // A function with no result answers the empty text.
    let out = host
        .call_value("kinds_nothing", json!({}), &CallOptions::default())
        .await
        .expect("call");
    assert_eq!(out.text, "");

    // `result`: `ok` is the value; `err` fails the call with its JSON.
    assert!(same(
        &call(&host, "kinds_divide", json!({"a": 1, "b": 4}))
            .await
            .expect("call"),
        &json!(0.25)
    ));
    let err = call(&host, "kinds_divide", json!({"a": 1, "b": 0}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::ToolFailed { message, .. } if message == "\"cannot divide 1 by zero\""),
        "{err}"
    );
    assert_eq!(
        call(&host, "kinds_only_blue", json!({"color": "blue"}))
            .await
            .expect("call"),
        Value::Null
    );
    let err = call(&host, "kinds_only_blue", json!({"color": "red"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("\"red\""), "{err}");
}

#[tokio::test]
async fn schemas_accept_what_the_component_takes_and_refuse_the_rest_before_it_runs() {
    let dir = types_dir(true, None);
    let host = host(dir.path()).await;
    let refused = [
        ("kinds_count_perms", json!({"perms": ["read", "read"]})),
        ("kinds_count_perms", json!({"perms": ["fly"]})),
        ("kinds_only_blue", json!({"color": "purple"})),
        ("kinds_echo_shape", json!({"value": {"tag": "hexagon"}})),
        ("kinds_echo_shape", json!({"value": {"tag": "circle"}})),
        ("kinds_divide", json!({"a": 1})),
        ("kinds_divide", json!({"a": 1, "b": 2, "c": 3})),
        ("kinds_echo_nested_option", json!({"value": 5})),
        (
            "kinds_echo_primitives",
            json!({"flag": true, "tiny": 128, "byte": 0, "short": 0,
            "ushort": 0, "int": 0, "uint": 0, "big": 0, "ubig": 0, "single": 0, "double": 0,
            "letter": "ab", "text": ""}),
        ),
        (
            "kinds_echo_primitives",
            json!({"flag": true, "tiny": 0, "byte": 0, "short": 0,
            "ushort": 0, "int": 0, "uint": 0, "big": 0, "ubig": 0, "single": 1e39, "double": 0,
            "letter": "a", "text": ""}),
        ),
    ];
    for (tool, arguments) in refused {
        let schema = host.tool(tool).expect("tool").spec().parameters.clone();
        let validator = jsonschema::validator_for(&schema).expect("schema compiles");
        assert!(
            !validator.is_valid(&arguments),
            "{tool} schema accepts {arguments}"
        );
        let err = call(&host, tool, arguments.clone()).await.unwrap_err();
        assert_eq!(err.kind(), "invalid_arguments", "{tool} {arguments}: {err}");
    }
    // Within the schema, a value that still does not fit is refused by the
    // conversion, naming where.
    let err = call(
        &host,
        "kinds_echo_primitives",
        json!({"flag": true, "tiny": 0, "byte": 0,
        "short": 0, "ushort": 0, "int": 0, "uint": 0, "big": "99999999999999999999", "ubig": 0,
        "single": 0, "double": 0, "letter": "a", "text": ""}),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("big: expected an integer that fits i64"),
        "{err}"
    );
    // JSON Schema counts `5.0` and `1e3` as integers; so does the conversion.
    let out = call(
        &host,
        "kinds_echo_primitives",
        json!({"flag": true, "tiny": 0, "byte": 5.0,
        "short": 0, "ushort": 0, "int": 0, "uint": 1e3, "big": 0, "ubig": 0,
        "single": 0, "double": 0, "letter": "a", "text": ""}),
    )
    .await
    .expect("whole numbers are integers");
    assert_eq!((&out[2], &out[6]), (&json!(5), &json!(1000)), "{out}");
}

#[tokio::test]
async fn doc_comments_become_descriptions_and_their_absence_is_said() {
    let dir = types_dir(true, None);
    let host = host(dir.path()).await;
    let greet = host.tool("greet").expect("greet");
    assert_eq!(greet.spec().description, "Greets someone by name.");
    let everything = host.tool("kinds_echo_everything").expect("tool");
    let record = &everything.spec().parameters["properties"]["value"];
    assert_eq!(record["description"], "One of everything, nested.");
    assert_eq!(
        record["properties"]["at"]["properties"]["x"]["description"],
        "Horizontal position, in metres."
    );
    let color = host
        .tool("kinds_only_blue")
        .expect("tool")
        .spec()
        .parameters["properties"]["color"]
        .clone();
    assert_eq!(
        color["oneOf"][0],
        json!({"const": "red", "description": "The colour of fire."})
    );
    let flags = host
        .tool("kinds_count_perms")
        .expect("tool")
        .spec()
        .parameters["properties"]["perms"]
        .clone();
    assert!(
        flags["items"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("`exec`: Run it.")),
        "{flags}"
    );

    let bare = types_dir(false, None);
    let host = self::host(bare.path()).await;
    let greet = host.tool("greet").expect("greet");
    assert!(
        greet.spec().description.contains("carries no doc comment"),
        "{}",
        greet.spec().description
    );
    // A policy supplies one.
    let described = types_dir(
        false,
        Some("version = 1\n[presentation]\ndescriptions = { greet = \"Says hello.\" }\n"),
    );
    let host = self::host(described.path()).await;
    assert_eq!(
        host.tool("greet").expect("greet").spec().description,
        "Says hello."
    );
}

#[tokio::test]
async fn metadata_comes_from_the_policy_and_the_mode_can_be_forbidden() {
    let dir = types_dir(
        true,
        Some(
            "version = 1\n[metadata.kinds_divide]\ncategory = \"math\"\nkeywords = [\"divide\"]\n\
         idempotent = true\nlatency = \"fast\"\n",
        ),
    );
    let host = host(dir.path()).await;
    let divide = host.tool("kinds_divide").expect("divide");
    let m = &divide.spec().metadata;
    assert_eq!((m.category.as_str(), m.idempotent), ("math", true));
    // The defaults for what a component cannot declare.
    let greet = host.tool("greet").expect("greet");
    assert_eq!(
        (
            greet.spec().metadata.category.as_str(),
            greet.spec().metadata.idempotent
        ),
        ("", false)
    );
    assert!(greet.spec().metadata.parallelizable);

    let forbidden = types_dir(true, Some("version = 1\nany_component = false\n"));
    let host = self::host(forbidden.path()).await;
    let errors = host.load_errors();
    assert!(
        matches!(&errors[0].reason, LoadErrorReason::WrongWorld(m) if m.contains("any_component = false")),
        "{errors:?}"
    );

    let off = Host::builder()
        .plugin_dir(dir.path())
        .pool(pool())
        .cache(cache())
        .any_component(false)
        .build()
        .await
        .expect("host");
    assert!(off.tool("greet").is_none());
    assert!(
        off.load_errors()[0]
            .to_string()
            .contains("does not serve components of other worlds")
    );
}

#[tokio::test]
async fn what_is_not_a_tool_is_skipped_and_said() {
    // A resource's constructor and method, and a function returning one.
    let dir = types_dir(true, None);
    let host = host(dir.path()).await;
    assert!(
        host.tools()
            .iter()
            .all(|t| !t.spec().name.contains("counter"))
    );
    // A command component (`wasi:cli/run` only) offers nothing: it fails to
    // load, saying why.
    let dir = plugin_dir(&[COMMAND]);
    let host = self::host(dir.path()).await;
    let error = host.load_errors()[0].to_string();
    assert!(
        error.contains("`wasi:cli/run@0.2.0`: a WASI interface a runtime calls, not a tool"),
        "{error}"
    );
}
