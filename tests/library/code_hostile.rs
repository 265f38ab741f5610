//! Hostile scripts and hostile tool output in code mode, beyond the
//! sandbox's limits (`code::hostile_scripts_are_stopped_by_the_sandbox`): a
//! huge return value, a flood of console lines, prototype tricks to reach a
//! hidden tool, `eval` of a tool's text, and a tool that breaks its output
//! schema.

use corral::{CODE_TOOL, CallError, Host, Limits};
use serde_json::{Value, json};

use crate::support::{ENCODE, HOSTILE, builder, call, failure, plugin_dir};

async fn run(host: &Host, code: &str) -> Result<Value, CallError> {
    call(host, CODE_TOOL, json!({ "code": code })).await
}

async fn hostile_host() -> (tempfile::TempDir, Host) {
    let dir = plugin_dir(&[ENCODE, HOSTILE]);
    let host = builder(dir.path())
        .limits(Limits::default().with_timeout_ms(10_000))
        // `base64_*` hidden from every client: a script must not reach them.
        .exclude_tools(regex::Regex::new("^base64_").expect("regex"))
        .build()
        .await
        .expect("host");
    (dir, host)
}

#[tokio::test]
async fn a_100_mb_return_value_and_a_million_console_lines_are_cut_off() {
    let (_dir, host) = hostile_host().await;
    let err = failure(run(&host, "return 'x'.repeat(100 * 1024 * 1024)").await);
    // Refused whole: past the memory cap while it is built, or past the
    // output cap once returned.
    assert!(
        matches!(
            &err,
            CallError::OutputTooLarge { .. } | CallError::MemoryLimit { .. }
        ) || err.to_string().contains("out of memory"),
        "{err:?}"
    );
    // A million lines: the run's fuel ends the flood (each line costs
    // the interpreter's work, whether or not the host keeps it).
    let err = failure(
        run(
            &host,
            "for (let i = 0; i < 1000000; i++) console.log('line', i);\nreturn 'done'",
        )
        .await,
    );
    assert!(
        matches!(err, CallError::OutOfFuel { .. } | CallError::Timeout { .. }),
        "{err:?}"
    );
    // Fewer, within the fuel: the host keeps the first lines and counts the
    // rest.
    let out = run(
        &host,
        "for (let i = 0; i < 20000; i++) console.log('line', i);\nreturn 'done'",
    )
    .await
    .expect("the flood ends");
    assert_eq!(out["result"], "done");
    let logs = out["logs"].as_array().expect("logs");
    assert_eq!(
        logs.len(),
        corral::MAX_LOG_LINES as usize + 1,
        "{}",
        logs.len()
    );
    let last = logs.last().expect("a note")["text"].as_str().expect("text");
    assert!(last.contains("more console lines dropped"), "{last}");
}

#[tokio::test]
async fn prototype_tricks_do_not_reach_a_hidden_tool() {
    let (_dir, host) = hostile_host().await;
    // The hidden tool itself, by every spelling a script has.
    let out = run(
        &host,
        "const tries = [\n\
           () => tools.base64_encode({text: 'a'}),\n\
           () => tools['base64_' + 'encode']({text: 'a'}),\n\
           () => tools.parallel([['base64_encode', {text: 'a'}]]).then(r => r[0]),\n\
         ];\n\
         const out = [];\n\
         for (const t of tries) { try { out.push(await t()) } catch (e) { out.push(e.kind) } }\n\
         return out;",
    )
    .await
    .expect("script");
    assert_eq!(
        out["result"],
        json!([
            "invalid_arguments",
            "invalid_arguments",
            "invalid_arguments"
        ]),
        "{out}"
    );
    // Polluting the prototypes, or replacing `tools`' own, forges nothing:
    // every name goes to the host, which serves only what the caller sees.
    let out = run(
        &host,
        "Object.prototype.base64_encode = () => 'forged';\n\
         Function.prototype.base64_encode = () => 'forged';\n\
         let swapped;\n\
         try { Object.setPrototypeOf(tools, {base64_encode: () => 'forged'}); swapped = 'swapped' }\n\
         catch (e) { swapped = e.name }\n\
         const out = [Object.getPrototypeOf(tools), swapped];\n\
         for (const name of ['base64_encode', '__proto__', 'constructor', 'hasOwnProperty']) {\n\
           try { out.push(await tools[name]({text: 'a'})) } catch (e) { out.push(e.kind) }\n\
         }\n\
         return out;",
    )
    .await
    .expect("script");
    let result = out["result"].as_array().expect("array");
    assert_eq!(result[0], Value::Null, "tools has a null prototype: {out}");
    assert!(
        !out.to_string().contains("forged"),
        "a forged function answered: {out}"
    );
    assert!(
        result[2..].iter().all(|r| r == "invalid_arguments"),
        "{out}"
    );
    // Each of those calls was a call the host refused, not a local one.
    let calls = out["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 4, "{out}");
    assert!(calls.iter().all(|c| c["ok"] == json!(false)), "{out}");
}

#[tokio::test]
async fn eval_of_a_tools_text_runs_in_the_same_sandbox() {
    let (_dir, host) = hostile_host().await;
    // The text a tool returned is code the script may run, with no more
    // reach than the script's own.
    let out = run(
        &host,
        "const text = (await tools.echo({text: '[typeof fetch, typeof std, typeof os, \
         typeof tools.sha256, 6 * 7]'})).echo;\n\
         return eval(text);",
    )
    .await
    .expect("eval");
    assert_eq!(
        out["result"],
        json!(["undefined", "undefined", "undefined", "function", 42])
    );
    // And still under the same limits.
    let err = failure(
        run(
            &host,
            "const text = (await tools.echo({text: 'while (true) {}'})).echo;\neval(text);",
        )
        .await,
    );
    assert!(
        matches!(err, CallError::OutOfFuel { .. } | CallError::Timeout { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_result_that_breaks_its_output_schema_is_a_tool_error_in_the_script() {
    let (_dir, host) = hostile_host().await;
    let out = run(
        &host,
        "try { return await tools.lie({}) } catch (e) { return [e.kind, e.code, e.message] }",
    )
    .await
    .expect("caught");
    assert_eq!(out["result"][0], "execution_failed", "{out}");
    assert_eq!(out["result"][1], "output_invalid", "{out}");
    assert!(
        out["result"][2]
            .as_str()
            .expect("message")
            .contains("breaks its own output schema"),
        "{out}"
    );
}
