//! What a plugin's `describe` and `call` return, from each contract
//! version's generated types to the version-neutral ones the rest of the
//! host sees: tool specs ([`RawSpec`], the newer metadata at its defaults
//! for older versions), a 0.3.0 call's parts ([`OutputPart`]) and a guest's
//! error information ([`ErrorInfo`]).

use crate::bindings::{v1, v2, v3};
use crate::parts::{
    Annotations, EmbeddedResource, Media, OutputPart, PartContent, ResourceContents, ResourceLink,
    Role,
};
use crate::sandbox::outcome::ErrorInfo;
use crate::spec::{Latency, RawSpec, ResilienceHints, ReturnBehavior, ToolMetadata};

pub(super) fn info_v1(info: v1::corral::tool::types::ErrorInfo) -> ErrorInfo {
    ErrorInfo {
        message: info.message,
        code: info.code,
        retryable: false,
    }
}

/// `error-info` of 0.2.0 and later, which carry `retryable`.
macro_rules! info_since_v2 {
    ($name:ident, $version:ident) => {
        pub(super) fn $name(info: $version::corral::tool::types::ErrorInfo) -> ErrorInfo {
            ErrorInfo {
                message: info.message,
                code: info.code,
                retryable: info.retryable,
            }
        }
    };
}

info_since_v2!(info_v2, v2);
info_since_v2!(info_v3, v3);

/// A 0.3.0 `part`, version-neutral (checked later, by `parts::check`).
pub(super) fn part_v3(part: v3::corral::tool::types::Part) -> OutputPart {
    use v3::corral::tool::types as t;
    let media = |m: t::Media| Media::new(m.mime_type, m.data);
    let content = match part.content {
        t::Content::Text(text) => PartContent::Text { text },
        t::Content::Json(json) => PartContent::Json { json },
        t::Content::Image(m) => PartContent::Image(media(m)),
        t::Content::Audio(m) => PartContent::Audio(media(m)),
        t::Content::ResourceLink(link) => PartContent::ResourceLink(ResourceLink {
            uri: link.uri,
            name: link.name,
            description: link.description,
            mime_type: link.mime_type,
            size: link.size,
        }),
        t::Content::EmbeddedResource(resource) => PartContent::Resource(EmbeddedResource {
            uri: resource.uri,
            mime_type: resource.mime_type,
            contents: match resource.contents {
                t::ResourceContents::Text(text) => ResourceContents::Text(text),
                t::ResourceContents::Blob(data) => ResourceContents::Blob(data),
            },
        }),
    };
    let annotations = part
        .annotations
        .map(|a| Annotations::new(a.audience.into_iter().map(role_v3).collect(), a.priority));
    OutputPart::new(content).with_annotations(annotations)
}

fn role_v3(role: v3::corral::tool::types::Role) -> Role {
    match role {
        v3::corral::tool::types::Role::User => Role::User,
        v3::corral::tool::types::Role::Assistant => Role::Assistant,
    }
}

/// The metadata fields both versions share, from either version's enums.
macro_rules! common_metadata {
    ($m:expr, $types:path) => {{
        use $types as t;
        ToolMetadata {
            category: $m.category,
            keywords: $m.keywords,
            version: $m.version,
            idempotent: $m.idempotent,
            parallelizable: $m.parallelizable,
            latency: match $m.latency {
                t::LatencyHint::Fast => Latency::Fast,
                t::LatencyHint::Medium => Latency::Medium,
                t::LatencyHint::Slow => Latency::Slow,
            },
            requires_approval: $m.requires_approval,
            return_behavior: match $m.return_behavior {
                t::ReturnBehavior::ToLlm => ReturnBehavior::ToLlm,
                t::ReturnBehavior::Immediate => ReturnBehavior::Immediate,
            },
            priority: ToolMetadata::DEFAULT_PRIORITY,
            depends_on: Vec::new(),
            resilience: None,
        }
    }};
}

pub(super) fn spec_v1(spec: v1::corral::tool::types::ToolSpec) -> RawSpec {
    RawSpec {
        name: spec.name,
        description: spec.description,
        parameters: spec.parameters,
        output_schema: None,
        metadata: common_metadata!(spec.metadata, v1::corral::tool::types),
    }
}

/// The 0.2.0 and 0.3.0 specs, which have the same fields.
macro_rules! spec_since_v2 {
    ($name:ident, $version:ident) => {
        pub(super) fn $name(spec: $version::corral::tool::types::ToolSpec) -> RawSpec {
            let m = spec.metadata;
            let (priority, depends_on, output_schema, hints) = (
                m.priority,
                m.depends_on.clone(),
                m.output_schema.clone(),
                m.resilience,
            );
            let mut metadata = common_metadata!(m, $version::corral::tool::types);
            metadata.priority = priority;
            metadata.depends_on = depends_on;
            metadata.resilience = hints.map(|h| ResilienceHints {
                max_attempts: h.max_attempts,
                cache_ttl_ms: h.cache_ttl_ms,
                requests_per_second: h.requests_per_second,
            });
            RawSpec {
                name: spec.name,
                description: spec.description,
                parameters: spec.parameters,
                output_schema,
                metadata,
            }
        }
    };
}

spec_since_v2!(spec_v2, v2);
spec_since_v2!(spec_v3, v3);
