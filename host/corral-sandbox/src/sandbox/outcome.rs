//! What a guest's `call` answered when it did not succeed, in
//! version-neutral form: the WIT `tool-error` of every contract version,
//! and the oversized answer of a component of another world.

/// A guest's own error from `call` (WIT `tool-error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestError {
    /// `invalid-arguments`.
    InvalidArguments(ErrorInfo),
    /// `execution-failed`.
    ExecutionFailed(ErrorInfo),
    /// A component of another world answered a value whose JSON text takes
    /// this many bytes, more than the output cap (counted while written,
    /// never kept whole).
    TooLarge(usize),
}

/// WIT `error-info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorInfo {
    /// The guest's message (untrusted text).
    pub message: String,
    /// The guest's error code, if it gave one.
    pub code: Option<i32>,
    /// The guest says trying again may help (0.2.0; always `false` for 0.1.0).
    pub retryable: bool,
}
