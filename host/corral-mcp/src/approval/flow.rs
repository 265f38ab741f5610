//! Who answers a gated call of one request ([`Flow`]), from what the
//! request says of its client ([`ClientOf`]): its capabilities and its
//! protocol revision, read once a `tools/call`.

use rmcp::RoleServer;
use rmcp::service::RequestContext;

/// Who answers a gated call of this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// 2026-07-28 with `elicitation`: input-required results and retries.
    InputRequired,
    /// A session-based client with `elicitation`: `elicitation/create`.
    Elicitation,
    /// The host's reviewer.
    Host,
}

/// What one request says of its client, read once a request: its
/// capabilities and whether it is stateless (a protocol revision without
/// `initialize`, MCP 2026-07-28). Both come from the request's `_meta`
/// (2026-07-28) or else the session's `initialize`; rmcp clones the
/// capabilities on each read, so a `tools/call` reads them here once.
#[derive(Debug)]
pub(crate) struct ClientOf {
    /// The client's capabilities, `None` when it declared none.
    pub caps: Option<rmcp::model::ClientCapabilities>,
    /// Whether the request's revision has no `initialize`.
    pub stateless: bool,
}

impl ClientOf {
    /// The client of the request of `context`.
    pub fn read(context: &RequestContext<RoleServer>) -> Self {
        Self {
            caps: context.client_capabilities(),
            stateless: context
                .protocol_version()
                .is_some_and(|v| !v.has_initialize()),
        }
    }

    /// Who answers a gated call of this request.
    pub fn flow(&self) -> Flow {
        let elicits = self.caps.as_ref().is_some_and(|c| c.elicitation.is_some());
        match (elicits, self.stateless) {
            (false, _) => Flow::Host,
            (true, true) => Flow::InputRequired,
            (true, false) => Flow::Elicitation,
        }
    }
}
