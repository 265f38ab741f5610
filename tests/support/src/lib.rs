//! corral-test-support: what corral's tests and benches share. Where the built
//! guests are (its build script builds the Rust ones), temporary plugin
//! directories that hold exactly the guests a test needs, hosts over them,
//! call helpers, a tiny HTTP server, the bare-wasmtime call floor the
//! benches compare with, the mixed hostile load ([`load`]), and the component
//! types of every kind of value any-component mode converts, and valid
//! signature evidence of each kind.

mod echo;
mod evidence;
mod floor;
#[cfg(feature = "load")]
pub mod load;
mod redis;
mod registry;
pub mod resilience;
mod sigstore;
mod wit_values;
pub use echo::EchoServer;
pub use evidence::{Seeds, evidence_seeds};
pub use floor::Floor;
pub use redis::RedisServer;
pub use registry::{CuttingRelay, Registry};
pub use sigstore::{ALICE, DAY, Keyless, TestSigstore};
pub use wit_values::{VALUES_WIT, exported_params, value_for};

use std::path::{Path, PathBuf};

use corral::{CallError, CallOptions, ComponentCache, Host, Limits, PoolConfig, ToolSpec};

/// The repository's root directory.
pub fn repository_root() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .ancestors()
        .nth(2)
        .unwrap_or(crate_dir)
        .to_path_buf()
}

/// The plugin directory `scripts/build-guests.sh` fills with the bundled
/// sample tools: `<repository>/plugins`.
pub fn bundled_plugin_dir() -> PathBuf {
    repository_root().join("plugins")
}
use serde_json::Value;
use tempfile::TempDir;

/// Directory holding every built guest (set by `tests/build.rs`).
pub const GUESTS_DIR: &str = env!("CORRAL_GUESTS_DIR");

/// Fixture: a plugin whose tools misbehave in every way (and a few benign ones).
pub const HOSTILE: &str = "fixture_hostile.wasm";
/// Fixture: the MCP conformance runner's diagnostic tools (`greet`,
/// `slow_compute`, `confirm_delete`, ...), written with the SDK.
pub const REFERENCE_TOOLS: &str = "fixture_reference_tools.wasm";
/// Fixture: `describe` traps.
pub const TRAP_DESCRIBE: &str = "fixture_trap_describe.wasm";
/// Fixture: provides `dup_tool`.
pub const DUP_A: &str = "fixture_dup_a.wasm";
/// Fixture: also provides `dup_tool`.
pub const DUP_B: &str = "fixture_dup_b.wasm";
/// The fetch sample's next build: one line changed, it asks for `?v=2`.
pub const FETCH_NEXT: &str = "fixture_fetch_next.wasm";
/// Fixture: a tool named `bad-name!`.
pub const BAD_NAME: &str = "fixture_bad_name.wasm";
/// Fixture: a tool whose schema is not valid JSON Schema.
pub const BAD_SCHEMA: &str = "fixture_bad_schema.wasm";
/// Fixture: a WASI command component (another world).
pub const COMMAND: &str = "fixture-command.wasm";
/// Fixture: `describe` sleeps for a minute.
pub const DESCRIBE_SLEEP: &str = "fixture_describe_sleep.wasm";
/// Fixture: `describe` spins forever.
pub const DESCRIBE_SPIN: &str = "fixture_describe_spin.wasm";
/// Fixture: `describe` overflows its stack.
pub const DESCRIBE_RECURSE: &str = "fixture_describe_recurse.wasm";
/// Fixture: a 1 GiB static in linear memory.
pub const BIG_STATIC: &str = "fixture_big_static.wasm";
/// Fixture: `describe` declares 10 000 tools.
pub const FLOOD_DESCRIBE: &str = "fixture_flood_describe.wasm";
/// Fixture: a description with terminal escape codes.
pub const ESCAPE_DESCRIBE: &str = "fixture_escape_describe.wasm";
/// Fixture: imports an interface corral does not provide.
pub const UNKNOWN_IMPORT: &str = "fixture_unknown_import.wasm";
/// Fixture: a working plugin of contract 0.1.0 (`v1_tool`).
pub const V1_PLUGIN: &str = "fixture_v1_plugin.wasm";
/// A plugin of contract 0.2.0 (raw bindings of `wit/v0.2.0`): `v2_tool`
/// answers `{"v": 2}` under its output schema.
pub const V2_PLUGIN: &str = "fixture_v2_plugin.wasm";
/// Fixture: two tools that depend on each other.
pub const CYCLE: &str = "fixture_cycle.wasm";
/// Fixture: 200 realistic tools in 15 categories (`tests/fixtures/catalog/tools.json`);
/// its policy must raise `[describe] max_tools`.
pub const CATALOG: &str = "fixture_catalog.wasm";
/// Fixture outside corral's world: functions over every WIT type
/// (`tests/fixtures/any_types/wit/types.wit`, its doc comments).
pub const ANY_TYPES: &str = "fixture_any_types.wasm";
/// Fixture outside corral's world whose exported functions misbehave (spin,
/// sleep, allocate, recurse, trap, pry, flood).
pub const ANY_HOSTILE: &str = "fixture_any_hostile.wasm";
/// Fixture outside corral's world that exports an `async func` (the
/// component model's async ABI).
pub const ANY_ASYNC: &str = "fixture_any_async.wasm";
/// `any_types`'s WIT built with componentize-js (`jco componentize`):
/// `tests/fixtures/any_js/index.js`.
pub const ANY_JS: &str = "lang/any_js.wasm";
/// Fixture outside corral's world built with componentize-py
/// (`tests/fixtures/any_py`: `stats.summarize`, `version`, and the
/// toolchain's own `init` export).
pub const ANY_PY: &str = "lang/any_py.wasm";
/// Fixture outside corral's world built with componentize-qjs `--sync`
/// (`tests/fixtures/any_qjs`: `add`, `text.greet`, and the toolchain's own
/// world-level `init` export).
pub const ANY_QJS: &str = "lang/any_qjs.wasm";
/// Fixture outside corral's world in the `cargo component` layout: a
/// filesystem helper (`list-dir`, `read-file`).
pub const ANY_FILES: &str = "fixture_any_files.wasm";
/// Fixture outside corral's world that fetches URLs with the Spin SDK's
/// outbound HTTP client (`web.fetch`).
pub const ANY_SPIN: &str = "fixture_any_spin.wasm";
/// Sample plugin `text`.
pub const TEXT: &str = "text.wasm";
/// Sample plugin `math`.
pub const MATH: &str = "math.wasm";
/// Sample plugin `json`.
pub const JSON: &str = "json.wasm";
/// Sample plugin `encode`.
pub const ENCODE: &str = "encode.wasm";
/// Sample plugin `notes`.
pub const NOTES: &str = "notes.wasm";
/// Sample plugin `fetch`.
pub const FETCH: &str = "fetch.wasm";
/// Sample plugin `chart` (contract 0.3.0 parts: a PNG bar chart); not in
/// [`SAMPLES`], whose tests it would only slow down.
pub const CHART: &str = "chart.wasm";
/// Every sample plugin written in Rust but `chart`.
pub const SAMPLES: &[&str] = &[TEXT, MATH, JSON, ENCODE, NOTES, FETCH];

// Guests in other languages, built by `scripts/build-guests.sh` (which the test
// command runs first) into `lang/` of the guests directory.
/// Sample plugin `tables`, in Python.
pub const TABLES: &str = "lang/tables.wasm";
/// Sample plugin `versions`, in JavaScript (the QuickJS engine).
pub const VERSIONS: &str = "lang/versions.wasm";
/// Sample plugin `fuzzy`, in C.
pub const FUZZY: &str = "lang/fuzzy.wasm";
/// Fixture in Python: echo, an uncaught exception, a file read, a socket.
pub const PY_PROBE: &str = "lang/py_probe.wasm";
/// Fixture in JavaScript (the QuickJS engine): echo, an uncaught exception,
/// nothing returned.
pub const JS_PROBE: &str = "lang/js_probe.wasm";
/// Fixture in JavaScript (the SpiderMonkey engine): `fetch()`, and a rejected
/// promise.
pub const JS_WEB: &str = "lang/js_web.wasm";
/// Fixture in C: `abort()` and a file read.
pub const C_PROBE: &str = "lang/c_probe.wasm";

/// The path of a built guest.
pub fn guest(name: &str) -> PathBuf {
    let path = match name.strip_prefix("lang/") {
        Some(file) => Path::new(env!("CORRAL_LANG_GUESTS_DIR")).join(file),
        None => Path::new(GUESTS_DIR).join(name),
    };
    assert!(
        path.exists(),
        "{} is missing: run `scripts/build-guests.sh` first (it builds the Python, \
         JavaScript and C guests; cargo builds only the Rust ones)",
        path.display()
    );
    path
}

/// The file name a guest gets in a plugin directory (`lang/x.wasm` is `x.wasm`).
pub fn file_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// A temporary plugin directory holding copies of `guests`.
pub fn plugin_dir(guests: &[&str]) -> TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in guests {
        std::fs::copy(guest(name), dir.path().join(file_name(name)))
            .unwrap_or_else(|e| panic!("copy {name}: {e}"));
    }
    dir
}

/// The cache shared by all tests, so each guest compiles once per run.
pub fn cache() -> ComponentCache {
    ComponentCache::in_dir(cache_dir())
}

/// Where [`cache`] keeps its entries (under `target/`).
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CORRAL_TEST_CACHE_DIR"))
}

/// A small pool: tests create many hosts.
pub fn pool() -> PoolConfig {
    PoolConfig::default()
        .with_max_concurrent_instances(8)
        .with_max_memory_bytes(1 << 30)
}

/// The builder every test host starts from: plugins from `dir`, the small
/// [`pool`] and the shared component [`cache`]. A test adds its own knobs
/// to it; [`host`] and [`host_with`] build it as it is.
pub fn builder(dir: &Path) -> corral::HostBuilder {
    Host::builder().plugin_dir(dir).pool(pool()).cache(cache())
}

/// A host over `dir` with default limits.
pub async fn host(dir: &Path) -> Host {
    host_with(dir, Limits::default()).await
}

/// A host over `dir` with `limits`.
pub async fn host_with(dir: &Path, limits: Limits) -> Host {
    builder(dir)
        .limits(limits)
        .build()
        .await
        .expect("host builds")
}

/// Calls `tool` with default options; its JSON output, or the error.
pub async fn call(host: &Host, tool: &str, arguments: Value) -> Result<Value, CallError> {
    host.call(tool, &arguments.to_string(), &CallOptions::default())
        .await
        .map(|out| out.into_json().expect("the tool returns JSON"))
}

/// The error of a call expected to fail.
pub fn failure(result: Result<Value, CallError>) -> CallError {
    match result {
        Ok(value) => panic!("expected a failure, got {value}"),
        Err(err) => err,
    }
}

/// Asserts what a model needs of a spec: a description, a category, an
/// object schema, and a description for every parameter.
pub fn assert_described_for_a_model(spec: &ToolSpec) {
    let name = &spec.name;
    assert!(!spec.description.is_empty(), "{name} has no description");
    assert!(!spec.metadata.category.is_empty(), "{name} has no category");
    assert_eq!(spec.parameters["type"], "object", "{name}");
    let properties = spec.parameters["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("{name} has no properties"));
    for (param, schema) in properties {
        assert!(
            schema["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "{name}.{param} has no description"
        );
    }
}

/// Calls `echo` on the hostile fixture and asserts it works: the host still
/// serves after whatever the test did before.
pub async fn assert_still_serves(host: &Host) {
    let out = host
        .call("echo", r#"{"text":"still here"}"#, &Default::default())
        .await
        .expect("a benign call succeeds after the hostile one");
    assert_eq!(out.into_json().expect("json")["echo"], "still here");
}

/// Lowercase hex sha256 of the built guest `name`.
pub fn guest_sha256(name: &str) -> String {
    use sha2::Digest as _;
    let bytes = std::fs::read(guest(name)).expect("read guest");
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A temporary plugin directory holding copies of `guests`, each with the
/// policy text given (written as `<stem>.policy.toml`) or none.
pub fn plugin_dir_with_policies(guests: &[(&str, Option<&str>)]) -> TempDir {
    let names: Vec<&str> = guests.iter().map(|(g, _)| *g).collect();
    let dir = plugin_dir(&names);
    for (name, policy) in guests {
        if let Some(text) = policy {
            let stem = file_name(name).trim_end_matches(".wasm");
            std::fs::write(dir.path().join(format!("{stem}.policy.toml")), text)
                .expect("write policy");
        }
    }
    dir
}

/// A tiny HTTP/1.1 server on 127.0.0.1 that answers every request with
/// `200 OK` and `body`, and counts the requests it served.
pub struct TestServer {
    /// Its port.
    pub port: u16,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    /// Starts serving on a free port, on a background thread.
    pub fn start(body: &'static str) -> Self {
        Self::start_with(0, body)
    }

    fn start_with(failures: usize, body: &'static str) -> Self {
        use std::io::{BufRead as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = hits.clone();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let Ok(mut stream) = stream else { continue };
                let served = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    line.clear();
                }
                let (status, text) = if served < failures {
                    ("503 Service Unavailable", "try again")
                } else {
                    ("200 OK", body)
                };
                // One write: small writes would wait on the client's delayed
                // acknowledgement (Nagle), up to 200 ms a response.
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = stream.set_nodelay(true);
                let _ = stream.write_all(response.as_bytes());
            }
        });
        Self {
            port,
            hits,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops serving: the listener is closed when this returns, so a
    /// connection to the port is refused.
    pub fn stop(mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accept loop, which then sees the flag.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// Starts serving on a free port; the first `failures` requests get
    /// `503 Service Unavailable`, the rest `200 OK` with `body`.
    pub fn start_failing(failures: usize, body: &'static str) -> Self {
        Self::start_with(failures, body)
    }

    /// How many requests reached it.
    pub fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The sample tools (Rust, Python, JavaScript and C, with their policies and
/// the example pipelines) plus [`CATALOG`], 200 more tools in 15 categories,
/// with a policy raising its `[describe] max_tools`: the directory the
/// disclosure and `tool_search` measurements use. The Python, JavaScript and
/// C samples come from `scripts/build-guests.sh`.
pub fn catalog_dir() -> TempDir {
    let dir = plugin_dir(&[
        TEXT, MATH, JSON, ENCODE, NOTES, FETCH, TABLES, VERSIONS, FUZZY, CATALOG,
    ]);
    let root = repository_root();
    std::fs::copy(
        root.join("examples/pipelines/pipelines.json"),
        dir.path().join("pipelines.json"),
    )
    .expect("pipelines");
    std::fs::create_dir(dir.path().join("notes-data")).expect("notes-data");
    for policy in ["notes.policy.toml", "fetch.policy.toml"] {
        let sample = policy.trim_end_matches(".policy.toml");
        std::fs::copy(
            root.join("sample-tools").join(sample).join(policy),
            dir.path().join(policy),
        )
        .unwrap_or_else(|e| panic!("{policy}: {e}"));
    }
    std::fs::write(
        dir.path().join("fixture_catalog.policy.toml"),
        "version = 1\n[describe]\nmax_tools = 256\n",
    )
    .expect("catalog policy");
    dir
}

/// The number of tokens of `text` for OpenAI's `o200k_base` encoding
/// (`tiktoken-rs`, tables compiled in).
pub fn tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}
