//! The `corral:tool/client` imports of contract 0.3.0: a guest's requests
//! to the MCP client that made the call (`elicit`, `sample`, `roots`).
//!
//! Deny by default: until the host passes these requests on under a
//! policy grant, every request gets `unsupported`, naming what it asked,
//! and no guest can reach a client.

use super::SandboxState;
use crate::bindings::v3::corral::tool::client::{
    ClientError, ElicitAnswer, Host, ModelPreferences, Root, Sampled, SamplingMessage,
};

/// The answer to every client request of this host.
fn unsupported(what: &str) -> ClientError {
    ClientError::Unsupported(format!(
        "corral does not pass {what} requests to MCP clients yet; the tool must do without"
    ))
}

impl Host for SandboxState {
    async fn elicit(
        &mut self,
        _message: String,
        _requested_schema: String,
    ) -> Result<ElicitAnswer, ClientError> {
        Err(unsupported("elicitation"))
    }

    async fn sample(
        &mut self,
        _messages: Vec<SamplingMessage>,
        _preferences: Option<ModelPreferences>,
        _max_tokens: u32,
    ) -> Result<Sampled, ClientError> {
        Err(unsupported("sampling"))
    }

    async fn roots(&mut self) -> Result<Vec<Root>, ClientError> {
        Err(unsupported("roots"))
    }
}
