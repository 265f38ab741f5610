//! A tool's output of several parts (WIT 0.3.0 `tool-output`): text, one
//! structured JSON value, images, audio, resource links and embedded
//! resources, each with optional annotations. A tool that returns any
//! `T: Serialize` still returns one JSON part; a tool returns a
//! [`ToolOutput`] to say more.

use serde::Serialize;

use crate::__bindings::corral::tool::types as wit;
use crate::ToolError;

/// Who a part is for (WIT `role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The person using the client.
    User,
    /// The model.
    Assistant,
}

/// One part of a [`ToolOutput`]; build it with the constructors and
/// annotate it with [`Part::for_audience`] and [`Part::with_priority`].
#[derive(Debug, Clone)]
pub struct Part(wit::Part);

impl Part {
    fn of(content: wit::Content) -> Self {
        Self(wit::Part {
            content,
            annotations: None,
        })
    }

    /// Text for the model or the person.
    pub fn text(text: impl Into<String>) -> Self {
        Self::of(wit::Content::Text(text.into()))
    }

    /// The structured result: `value` as JSON (at most one per output; the
    /// host checks it against the tool's output schema).
    ///
    /// # Errors
    /// `value` cannot be serialised.
    pub fn json<T: Serialize>(value: &T) -> Result<Self, ToolError> {
        serde_json::to_string(value)
            .map(|json| Self::of(wit::Content::Json(json)))
            .map_err(|err| ToolError::failed(format!("could not serialize the output: {err}")))
    }

    /// An image: `data` of type `mime_type` (`image/png`...). The host
    /// refuses PNG, JPEG, GIF and WebP bytes that are not what the type says.
    pub fn image(mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self::of(wit::Content::Image(wit::Media {
            mime_type: mime_type.into(),
            data,
        }))
    }

    /// Audio: `data` of type `mime_type` (`audio/wav`...).
    pub fn audio(mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self::of(wit::Content::Audio(wit::Media {
            mime_type: mime_type.into(),
            data,
        }))
    }

    /// A link to a resource the client can fetch: an `https://` or
    /// `corral://` URI, with a non-empty `name`. A `corral://` URI names a
    /// resource the host keeps: embed it in the same output
    /// ([`resource_blob`](Self::resource_blob) or
    /// [`resource_text`](Self::resource_text) with the same URI), and an
    /// MCP client gets the link alone and reads the contents with
    /// `resources/read` (for an hour, and only the tenant that called).
    pub fn link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::of(wit::Content::ResourceLink(wit::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            description: String::new(),
            mime_type: None,
            size: None,
        }))
    }

    /// An embedded resource of text.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: Option<&str>,
        text: impl Into<String>,
    ) -> Self {
        Self::of(wit::Content::EmbeddedResource(wit::EmbeddedResource {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            contents: wit::ResourceContents::Text(text.into()),
        }))
    }

    /// An embedded resource of bytes.
    pub fn resource_blob(uri: impl Into<String>, mime_type: Option<&str>, data: Vec<u8>) -> Self {
        Self::of(wit::Content::EmbeddedResource(wit::EmbeddedResource {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            contents: wit::ResourceContents::Blob(data),
        }))
    }

    /// A link's description, MIME type and size (ignored for other parts).
    #[must_use]
    pub fn described(
        mut self,
        description: &str,
        mime_type: Option<&str>,
        size: Option<u64>,
    ) -> Self {
        if let wit::Content::ResourceLink(link) = &mut self.0.content {
            link.description = description.to_owned();
            link.mime_type = mime_type.map(str::to_owned);
            link.size = size;
        }
        self
    }

    fn annotations(&mut self) -> &mut wit::Annotations {
        self.0.annotations.get_or_insert(wit::Annotations {
            audience: Vec::new(),
            priority: None,
        })
    }

    /// This part meant for `audience` only.
    #[must_use]
    pub fn for_audience(mut self, audience: &[Audience]) -> Self {
        self.annotations().audience = audience
            .iter()
            .map(|a| match a {
                Audience::User => wit::Role::User,
                Audience::Assistant => wit::Role::Assistant,
            })
            .collect();
        self
    }

    /// This part's importance, 0.0 (least) to 1.0 (most); the host refuses
    /// a value outside that range.
    #[must_use]
    pub fn with_priority(mut self, priority: f64) -> Self {
        self.annotations().priority = Some(priority);
        self
    }
}

/// What a tool returns when one JSON value is not enough: parts in the
/// order the client shows them (at most 64).
///
/// ```ignore
/// Ok(ToolOutput::new()
///     .with(Part::text("A chart of the numbers."))
///     .with(Part::image("image/png", png))
///     .with(Part::json(&data)?))
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolOutput {
    parts: Vec<Part>,
}

impl ToolOutput {
    /// An output of no parts (an empty text).
    pub fn new() -> Self {
        Self::default()
    }

    /// This output with `part` appended.
    #[must_use]
    pub fn with(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }

    /// Appends `part`.
    pub fn push(&mut self, part: Part) {
        self.parts.push(part);
    }
}

/// What a tool function may return inside `Ok`: a [`ToolOutput`], or any
/// `T: Serialize`, which becomes one JSON part (nothing for `()`).
pub trait IntoToolOutput {
    /// The parts the host receives.
    ///
    /// # Errors
    /// The value cannot be serialised.
    fn into_parts(self) -> Result<Vec<wit::Part>, ToolError>;
}

impl<T: Serialize> IntoToolOutput for T {
    fn into_parts(self) -> Result<Vec<wit::Part>, ToolError> {
        // A tool that returns nothing (`()` or another zero-sized type)
        // returns no part: an empty text, as AgentEnsemble's contract says.
        if std::mem::size_of::<T>() == 0 {
            return Ok(Vec::new());
        }
        Ok(vec![Part::json(&self)?.0])
    }
}

impl IntoToolOutput for ToolOutput {
    fn into_parts(self) -> Result<Vec<wit::Part>, ToolError> {
        Ok(self.parts.into_iter().map(|part| part.0).collect())
    }
}
