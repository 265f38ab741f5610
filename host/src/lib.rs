//! corral: a WebAssembly plugin host that runs untrusted LLM tools in a sandbox.
//!
//! A tool is a WebAssembly component targeting the `corral:tool/plugin` world
//! (`wit/corral-tool.wit`). corral loads a directory of them, validates and names
//! their tools, and runs each call in a fresh, deny-by-default sandbox with fuel,
//! an epoch deadline and a memory cap.
//!
//! Where a call goes, module by module:
//! - [`loader`]: find `*.wasm`, read its [`policy`], compile (via [`cache`]),
//!   link, run `describe`;
//! - [`resolver`]: validate specs and names, apply the policy's presentation,
//!   compile argument schemas;
//! - [`catalog`]: the resolved tools served at one moment, swapped whole on
//!   reload; [`watch`]: hot reload of the plugin directory;
//! - [`host`]: the [`Host`] API: look up, validate arguments, run, classify;
//! - [`sandbox`]: the store, WASI context, grants, limits and host imports of
//!   one call;
//! - [`plan`]: the built-in `execute_tool_plan`: `$ref`s, waves, fail-forward;
//! - [`mcp`]: the MCP server (stdio and streamable HTTP) over a [`Host`];
//! - [`pipeline`]: tools chained into one compound tool (`pipelines.json`);
//! - [`approval`]: the approval gates (declared and guest-requested), reviewers,
//!   standing approvals; [`audit`]: the JSON-lines record of every decision;
//! - [`context`]: out-of-band context, its merge and per-plugin allow/deny;
//! - [`limits`], [`engine`]: the knobs and the wasmtime engine behind them;
//! - [`spec`], [`call`], [`error`]: the data that goes in and out.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let host = corral::Host::builder().plugin_dir("plugins").build().await?;
//! for spec in host.specs() {
//!     println!("{}: {}", spec.name, spec.description);
//! }
//! let out = host
//!     .call("sha256", r#"{"text": "abc"}"#, &corral::CallOptions::default())
//!     .await?;
//! println!("{}", out.text);
//! # Ok(()) }
//! ```

pub mod approval;
pub mod audit;
mod bindings;
pub mod cache;
pub mod call;
pub mod catalog;
pub mod context;
pub mod engine;
pub mod error;
pub mod host;
pub mod limits;
pub mod loader;
pub mod mcp;
pub mod pipeline;
pub mod plan;
pub mod policy;
pub mod resolver;
pub mod sandbox;
pub mod spec;
pub mod watch;

pub use approval::{ApprovalDecision, Reviewer};
pub use cache::ComponentCache;
pub use call::{CallContext, CallOptions, CallOutput, ToolResult};
pub use catalog::{Catalog, ReloadReport};
pub use context::ContextPolicy;
pub use error::{CallError, HostError, LoadError, LoadErrorReason};
pub use host::{CALL_LOG_TARGET, Host, HostBuilder, bundled_plugin_dir};
pub use limits::{Limits, PoolConfig};
pub use spec::{Latency, ReturnBehavior, ToolMetadata, ToolSpec};
