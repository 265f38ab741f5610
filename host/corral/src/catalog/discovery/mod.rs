//! Discovery for large tool sets (TnsAI's search tool, Embabel's tool groups,
//! one-shot tools and unfolding tools; `docs/references.md`): the built-in
//! `tool_search` ([`search`], ranked by [`rank`]), tool groups and the
//! selection of served tools ([`groups`]), and the facades of progressive
//! disclosure ([`disclosure`]). One-shot-per-loop tools are a call stage
//! (`call/stages/one_shot.rs`).
//!
//! Each part is applied at one place: search is a built-in tool the stages
//! dispatch; the selection filters the registry when a catalog is built, so an
//! unselected tool is unknown to every path (list, call, plan, MCP).

pub(crate) mod disclosure;
pub(crate) mod groups;
pub(crate) mod rank;
pub(crate) mod search;
mod vocabulary;

pub use disclosure::{DISCLOSURE_FILE, DisclosureMode, Facade, Facades};
pub use groups::{GROUPS_FILE, Permission, Selection, ToolGroup};

/// What catalog building needs for discovery, fixed when the host is built.
#[derive(Debug, Clone, Default)]
pub(crate) struct Discovery {
    /// Whether `tool_search` is served.
    pub tool_search: bool,
    /// Which tools are served.
    pub selection: Selection,
    /// Where facades come from.
    pub disclosure: DisclosureMode,
}
