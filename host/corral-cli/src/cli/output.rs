//! What the CLI prints and how: guest text escaped for a terminal, JSON
//! with terminal-driving characters escaped, the flag that helps after a
//! failed call, and a quiet exit on a closed pipe.

/// Whether `err` comes from writing to a closed pipe.
pub(super) fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Guest text for stdout: escaped when stdout is a terminal (so no guest
/// can drive it), as it is when piped (it is data then).
pub fn for_stdout(text: &str) -> std::borrow::Cow<'_, str> {
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        corral::untrusted_text::escape(text)
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The command-line flag that changes what a failed call ran into, as a
/// suffix for the library's message (which names no flags, since models read
/// it too): ` (--fuel)` for fuel, and so on; empty when no flag helps.
pub fn flag_hint(err: &corral::CallError) -> &'static str {
    use corral::CallError;
    match err {
        CallError::OutOfFuel { .. } => " (--fuel)",
        CallError::Timeout { .. } => " (--timeout-ms)",
        CallError::MemoryLimit { .. } => " (--memory-mib)",
        CallError::OutputTooLarge { .. } => " (--output-kib)",
        CallError::UnknownTool { .. } => " (`corral list` shows them)",
        _ => "",
    }
}

/// Prints `value` as pretty JSON on stdout, with terminal-driving characters
/// (DEL, C1 and bidi controls, which serde_json leaves raw) as JSON escapes.
pub fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    outln!("{}", corral::untrusted_text::escape_json(&text))?;
    Ok(())
}
