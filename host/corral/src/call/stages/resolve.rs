//! Stage 1, resolve: a tool name to the [`Tool`] that serves it in the
//! catalog the call started with.

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::catalog::registry::Tool;
use corral_sandbox::CallError;

/// The tool called `name` in `catalog`: `found`, the caller's lookup of
/// `name` in that catalog.
///
/// # Errors
/// [`CallError::UnknownTool`], with the closest loaded name as a suggestion.
pub(super) fn tool(
    catalog: &Catalog,
    name: &str,
    found: Option<Arc<Tool>>,
) -> Result<Arc<Tool>, CallError> {
    debug_assert!(
        found.as_ref().map(|t| t.spec().name.as_str())
            == catalog.tool(name).map(|t| t.spec().name.as_str())
    );
    found.ok_or_else(|| CallError::UnknownTool {
        name: name.to_string(),
        suggestion: catalog.registry.suggest(name),
    })
}
