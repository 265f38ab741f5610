//! Why guest code stopped without returning ([`Failure`]), told apart from
//! wasmtime's trap codes, the memory limiter and what the guest's language
//! runtime printed on stderr about its crash.

use wasmtime::Trap;

use super::imports::truncate;
use crate::error::CallError;
use crate::limits::Limits;

/// Why guest code stopped without returning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Fuel ran out.
    OutOfFuel,
    /// The epoch deadline or the wall-clock timeout passed.
    Timeout,
    /// A memory growth was refused and the guest then failed.
    MemoryLimit,
    /// The wasm stack overflowed.
    StackOverflow,
    /// Any other trap; the text includes the guest's panic message if it printed one.
    Trap(String),
    /// The sandbox could not be set up (a granted directory is gone); no guest
    /// code ran.
    Setup(String),
}

impl Failure {
    /// Turns the failure into the public error class for `tool`.
    pub fn into_call_error(self, tool: &str, limits: &Limits) -> CallError {
        let tool = tool.to_string();
        match self {
            Failure::OutOfFuel => CallError::OutOfFuel {
                tool,
                budget: limits.fuel,
            },
            Failure::Timeout => CallError::Timeout {
                tool,
                timeout_ms: limits.timeout_ms,
            },
            Failure::MemoryLimit => CallError::MemoryLimit {
                tool,
                limit_bytes: limits.memory_bytes,
            },
            Failure::StackOverflow => CallError::StackOverflow { tool },
            Failure::Trap(message) => CallError::Trapped { tool, message },
            Failure::Setup(message) => CallError::Internal { tool, message },
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::OutOfFuel => f.write_str("ran out of fuel"),
            Failure::Timeout => f.write_str("exceeded its deadline"),
            Failure::MemoryLimit => f.write_str("hit the memory cap"),
            Failure::StackOverflow => f.write_str("overflowed its stack"),
            Failure::Trap(message) | Failure::Setup(message) => f.write_str(message),
        }
    }
}

/// Maps a wasmtime error to a [`Failure`] class.
pub fn classify(err: &wasmtime::Error, memory_refused: bool, stderr: &str) -> Failure {
    match err.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => return Failure::OutOfFuel,
        Some(Trap::Interrupt) => return Failure::Timeout,
        Some(Trap::StackOverflow) => return Failure::StackOverflow,
        _ => {}
    }
    if memory_refused {
        return Failure::MemoryLimit;
    }
    let mut message = match err.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => format!("{:#}", err.root_cause()),
    };
    // wasmtime's hostcall fuel (`Limits::transfer_bytes`) ran out lifting a
    // value: say what that means for the caller.
    if message.contains("fuel allocated for hostcalls has been exhausted") {
        message = "it passed more data across the component boundary in one value than the \
                   host lifts for a call of this output cap (each list element costs the host \
                   40 bytes, and the allowance is 32 bytes per byte of the output cap): \
                   return less, or raise the output cap"
            .to_string();
    }
    if let Some(reason) = crash_reason(stderr) {
        message.push_str(&format!(" (guest {reason})"));
    }
    Failure::Trap(message)
}

/// What the guest said about its crash on stderr, in the words of its
/// language's runtime, newest first: a Python exception (componentize-py
/// prints the traceback, then its own runtime panics), a JavaScript value
/// thrown out of an export (componentize-js reports it while lifting the
/// result; componentize-qjs's runtime panics with the exception's `Debug`
/// form), or a Rust panic. `None` when stderr holds none of them (a C
/// `abort()` says nothing).
fn crash_reason(stderr: &str) -> Option<String> {
    python_exception(stderr)
        .or_else(|| javascript_exception(stderr))
        .or_else(|| quickjs_exception(stderr))
        .or_else(|| panic_message(stderr))
        .map(truncate)
}

/// The exception line ("RuntimeError: kaboom") of the last Python traceback.
fn python_exception(stderr: &str) -> Option<String> {
    let start = stderr.rfind("Traceback (most recent call last):")?;
    let line = stderr[start..]
        .lines()
        .skip(1)
        .find(|line| !line.is_empty() && !line.starts_with(char::is_whitespace))?;
    Some(format!("raised {}", line.trim()))
}

/// The value a JavaScript export threw, from componentize-js's report
/// "invalid variant tag value `undefined` (received `Error: kaboom`)".
fn javascript_exception(stderr: &str) -> Option<String> {
    const MARK: &str = "(received `";
    let start = stderr.rfind(MARK)? + MARK.len();
    let end = stderr[start..].find("`)")?;
    Some(format!("threw {}", &stderr[start..start + end]))
}

/// The message of the exception a QuickJS export threw, from the panic of
/// componentize-qjs's runtime: `Exception { message: Some("Error: kaboom"),
/// stack: ... }` (the JavaScript SDK puts the error's name into the message).
/// The message is a Rust `Debug` string: it ends at the first unescaped `"`.
fn quickjs_exception(stderr: &str) -> Option<String> {
    const MARK: &str = "Exception { message: Some(\"";
    let start = stderr.rfind(MARK)? + MARK.len();
    let mut message = String::new();
    let mut chars = stderr[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(format!("threw {message}")),
            '\\' => match chars.next()? {
                'n' => message.push('\n'),
                't' => message.push('\t'),
                other => message.push(other),
            },
            c => message.push(c),
        }
    }
    None
}

/// Finds a Rust panic line ("panicked at src/lib.rs:3:5:\nmessage") in stderr.
fn panic_message(stderr: &str) -> Option<String> {
    let start = stderr.rfind("panicked at ")?;
    let text: String = stderr[start..]
        .lines()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    Some(text.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_panic_message() {
        let stderr = "noise\nthread '<unnamed>' panicked at src/lib.rs:3:5:\nboom\nnote: run with RUST_BACKTRACE";
        assert_eq!(
            panic_message(stderr).as_deref(),
            Some("panicked at src/lib.rs:3:5: boom")
        );
        assert_eq!(panic_message("all fine"), None);
        assert_eq!(crash_reason("all fine"), None);
    }

    #[test]
    fn finds_a_python_exception_before_the_runtime_panic() {
        let stderr = "Traceback (most recent call last):\n  File \"/0/app.py\", line 5, in boom\n    raise RuntimeError(message)\nRuntimeError: kaboom\n\nthread '<unnamed>' (1) panicked at runtime/src/lib.rs:1293:29:\nPython function threw an unexpected exception\n";
        assert_eq!(
            crash_reason(stderr).as_deref(),
            Some("raised RuntimeError: kaboom")
        );
    }

    #[test]
    fn finds_a_thrown_javascript_value() {
        let stderr = "invalid variant tag value `undefined` (received `Error: kaboom`) specified for `ToolError`\nStack:\n  export_tool_0_1_0$call@initializer.js:419:17\n";
        assert_eq!(crash_reason(stderr).as_deref(), Some("threw Error: kaboom"));
    }

    #[test]
    fn finds_a_quickjs_exception_before_its_runtime_panic() {
        let stderr = "thread '<unnamed>' panicked at crates/runtime/src/interpreter.rs:51:31:\nFailed to call 'call': Value(Exception(\nException { message: Some(\"TypeError: say \\\"no\\\"\"), stack: Some(\"    at call (/t.js:4:5)\\n\") })\n)\n";
        assert_eq!(
            crash_reason(stderr).as_deref(),
            Some("threw TypeError: say \"no\"")
        );
        // Cut off before its closing quote: not a message.
        assert_eq!(
            quickjs_exception("Exception { message: Some(\"Error: cut"),
            None
        );
    }
}
