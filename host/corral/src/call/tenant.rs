//! Whose quotas, tasks and resources a call's are: its [`Tenant`]. A
//! token-authenticated caller's tenant is the one its bearer token maps to
//! (`corral serve --tokens FILE`; the MCP layer sets
//! [`Tenant::authenticated`] on the call). Otherwise it is the call's
//! context key `tenant`, which the client asserts ([`Tenant::asserted`]).
//! Calls with neither share the tenant `anonymous`.

use sha2::{Digest as _, Sha256};

/// The context key whose value is a client-asserted tenant: `tenant`.
pub const TENANT_CONTEXT_KEY: &str = "tenant";

/// Longest tenant name shown in an error: 64 characters (cut with `…`).
const SHOWN_TENANT_CHARS: usize = 64;

/// Who a call's quota belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tenant {
    id: String,
    source: TenantSource,
}

/// Where a [`Tenant`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TenantSource {
    /// Mapped from the caller's credentials (an HTTP bearer token).
    Authenticated,
    /// The call's context key `tenant`, as the client asserted it.
    Asserted,
    /// Neither: every such call shares one tenant.
    Anonymous,
}

impl Tenant {
    /// A tenant the caller's credentials vouch for (the MCP layer's
    /// bearer-token map). Not bound by the host's `[global]` quotas.
    pub fn authenticated(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            source: TenantSource::Authenticated,
        }
    }

    /// The tenant a client asserts in its context (`tenant=ID`).
    pub fn asserted(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            source: TenantSource::Asserted,
        }
    }

    /// The tenant of calls with no credentials and no `tenant` context key.
    pub fn anonymous() -> Self {
        Self {
            id: String::new(),
            source: TenantSource::Anonymous,
        }
    }

    /// The tenant of a call: `explicit` (set by the caller's transport)
    /// if any, else the context key `tenant` of the call (or, without one,
    /// of the host), else anonymous.
    pub(crate) fn of(
        explicit: Option<&Tenant>,
        call: &crate::CallContext,
        host: &crate::CallContext,
    ) -> Self {
        if let Some(tenant) = explicit {
            return tenant.clone();
        }
        match call
            .get(TENANT_CONTEXT_KEY)
            .or_else(|| host.get(TENANT_CONTEXT_KEY))
        {
            Some(id) if !id.is_empty() => Self::asserted(id),
            _ => Self::anonymous(),
        }
    }

    /// The tenant's name (empty for [`Tenant::anonymous`]). Guest- or
    /// client-supplied for an asserted tenant: escape it for a terminal.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Where it comes from.
    pub fn source(&self) -> TenantSource {
        self.source
    }

    /// The part of a bucket's key: a digest of the source and the name.
    pub(crate) fn key(&self) -> String {
        match self.source {
            TenantSource::Anonymous => "anonymous".into(),
            source => {
                let tag = if source == TenantSource::Authenticated {
                    "t"
                } else {
                    "c"
                };
                let digest = Sha256::digest(format!("{tag}\0{}", self.id).as_bytes());
                format!("{tag}{}", &hex::encode(digest)[..32])
            }
        }
    }

    /// How an error shows it: `"acme"`, `"acme" (client-asserted)`,
    /// `anonymous`; escaped and cut.
    pub fn shown(&self) -> String {
        let mut name: String = self.id.chars().take(SHOWN_TENANT_CHARS).collect();
        if name.len() < self.id.len() {
            name.push('…');
        }
        let name = corral_names::text::escape(&name);
        match self.source {
            TenantSource::Authenticated => format!("\"{name}\""),
            TenantSource::Asserted => format!("\"{name}\" (client-asserted)"),
            TenantSource::Anonymous => "anonymous".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_are_keyed_by_digest_and_shown_escaped() {
        let a = Tenant::asserted("acme");
        let t = Tenant::authenticated("acme");
        assert_ne!(
            a.key(),
            t.key(),
            "an asserted name never spends a token's quota"
        );
        assert!(!a.key().contains("acme"));
        assert_eq!(Tenant::anonymous().key(), "anonymous");
        assert_eq!(t.shown(), "\"acme\"");
        assert_eq!(a.shown(), "\"acme\" (client-asserted)");
        let hostile = Tenant::asserted(format!("\u{1b}[2J{}", "x".repeat(100)));
        let shown = hostile.shown();
        assert!(!shown.contains('\u{1b}'), "{shown}");
        assert!(shown.contains('…') && shown.len() < 100, "{shown}");

        let mut call = crate::CallContext::new();
        let mut host = crate::CallContext::new();
        host.insert("tenant", "from-host");
        assert_eq!(
            Tenant::of(None, &call, &host),
            Tenant::asserted("from-host")
        );
        call.insert("tenant", "from-call");
        assert_eq!(
            Tenant::of(None, &call, &host),
            Tenant::asserted("from-call")
        );
        assert_eq!(Tenant::of(Some(&t), &call, &host), t);
        assert_eq!(
            Tenant::of(None, &crate::CallContext::new(), &crate::CallContext::new()),
            Tenant::anonymous()
        );
    }
}
