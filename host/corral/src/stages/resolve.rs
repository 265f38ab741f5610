//! Stage 1, resolve: a tool name to the [`Tool`] that serves it in the
//! catalog the call started with.

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::error::CallError;
use crate::registry::Tool;

/// The tool called `name` in `catalog`.
///
/// # Errors
/// [`CallError::UnknownTool`], with the closest loaded name as a suggestion.
pub(super) fn tool(catalog: &Catalog, name: &str) -> Result<Arc<Tool>, CallError> {
    catalog
        .tool(name)
        .cloned()
        .ok_or_else(|| CallError::UnknownTool {
            name: name.to_string(),
            suggestion: catalog.registry.suggest(name),
        })
}
