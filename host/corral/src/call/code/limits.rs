//! [`CodeLimits`]: the limits of one `execute_code` script, beside the
//! sandbox limits its run has like any call.

/// Limits of `execute_code` on top of the sandbox's [`Limits`](corral_sandbox::Limits).
///
/// | knob | unit | default |
/// |---|---|---|
/// | `max_calls` | tool calls per script | 100 |
/// | `max_call_bytes` | bytes the script's tool calls return, in all | 16 MiB |
/// | `max_code_bytes` | bytes of script | 64 KiB |
/// | `max_journal_bytes` | bytes of a run's journal, as JSON | 256 KiB |
///
/// Going over `max_calls` or `max_call_bytes` throws a `ToolError` of kind
/// `limit` into the script (which may catch it); a longer script is the
/// caller's invalid input. The journal (every answer the script got, see
/// [`Journal`](corral_sandbox::Journal)) matters only when a call inside the
/// script waits for approval on a retry (MCP 2026-07-28 clients): the
/// journal then rides in the `requestState` the client carries back, and a
/// journal over `max_journal_bytes` fails the call instead, saying so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeLimits {
    /// Most tool calls one script makes.
    pub max_calls: u32,
    /// Most bytes its tool calls return, in all.
    pub max_call_bytes: usize,
    /// Longest script, in bytes.
    pub max_code_bytes: usize,
    /// Largest journal handed back with a call waiting for approval, in
    /// bytes of JSON.
    pub max_journal_bytes: usize,
}

impl Default for CodeLimits {
    fn default() -> Self {
        Self {
            max_calls: 100,
            max_call_bytes: 16 << 20,
            max_code_bytes: 64 << 10,
            max_journal_bytes: 256 << 10,
        }
    }
}

impl CodeLimits {
    /// These limits with at most `calls` tool calls per script.
    #[must_use]
    pub fn with_max_calls(mut self, calls: u32) -> Self {
        self.max_calls = calls;
        self
    }

    /// These limits with at most `bytes` returned by a script's calls.
    #[must_use]
    pub fn with_max_call_bytes(mut self, bytes: usize) -> Self {
        self.max_call_bytes = bytes;
        self
    }

    /// These limits with journals of at most `bytes` (JSON).
    #[must_use]
    pub fn with_max_journal_bytes(mut self, bytes: usize) -> Self {
        self.max_journal_bytes = bytes;
        self
    }
}
