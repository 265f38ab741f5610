//! A tool's output as content parts (WIT 0.3.0 `tool-output`), in
//! version-neutral form, and the one place for the rules a guest's parts
//! must keep: how many, one structured part at most, the bytes they take
//! against the output cap, MIME types and the magic numbers of images,
//! URI schemes and annotation ranges ([`check`]).
//!
//! A 0.1.0 or 0.2.0 guest, and a component of another world, answer one
//! string: [`GuestOutput::Text`]. A 0.3.0 guest answers parts:
//! [`GuestOutput::Parts`].

use serde::Serialize;

/// Parts one output may have: 64.
pub const MAX_PARTS: usize = 64;
/// The longest MIME type accepted: 127 characters (RFC 6838's limit per
/// name).
pub const MAX_MIME_CHARS: usize = 127;
/// The longest URI accepted: 2 048 bytes.
pub const MAX_URI_BYTES: usize = 2048;

/// What a guest's `call` returned.
#[derive(Debug, Clone, PartialEq)]
pub enum GuestOutput {
    /// One string: every 0.1.0 and 0.2.0 output, and a component of
    /// another world's value as JSON text.
    Text(String),
    /// The parts of a 0.3.0 `tool-output`, in the guest's order, not yet
    /// checked ([`check`]).
    Parts(Vec<OutputPart>),
}

/// One piece of a result (WIT `part`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct OutputPart {
    /// What it is.
    pub content: PartContent,
    /// How a client should treat it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

impl OutputPart {
    /// A part of `content` without annotations.
    pub fn new(content: PartContent) -> Self {
        Self {
            content,
            annotations: None,
        }
    }

    /// This part with `annotations`.
    #[must_use]
    pub fn with_annotations(mut self, annotations: Option<Annotations>) -> Self {
        self.annotations = annotations;
        self
    }
}

/// What a part holds (WIT `content`; MCP's content blocks).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
#[non_exhaustive]
pub enum PartContent {
    /// Text for the model or the person.
    Text {
        /// The text (untrusted).
        text: String,
    },
    /// The structured result, as JSON text: at most one per output.
    Json {
        /// The JSON text.
        json: String,
    },
    /// An image.
    Image(Media),
    /// Audio.
    Audio(Media),
    /// A link to a resource the client fetches itself.
    ResourceLink(ResourceLink),
    /// A resource carried in the result.
    Resource(EmbeddedResource),
}

/// Bytes and their MIME type (WIT `media`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Media {
    /// `type/subtype`, e.g. `image/png`.
    pub mime_type: String,
    /// The bytes (base64 when serialised).
    #[serde(serialize_with = "base64_bytes")]
    pub data: Vec<u8>,
}

impl Media {
    /// `data` of type `mime_type`.
    pub fn new(mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self {
            mime_type: mime_type.into(),
            data,
        }
    }
}

/// A resource the client can fetch (WIT `resource-link`, MCP
/// `ResourceLink`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ResourceLink {
    /// `https://...` or `corral://...`.
    pub uri: String,
    /// A short name; non-empty.
    pub name: String,
    /// What it is; may be empty.
    pub description: String,
    /// Its MIME type, if known.
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    pub size: Option<u64>,
}

/// A resource's contents carried in a result (WIT `embedded-resource`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// Its URI, under the same rule as a link's.
    pub uri: String,
    /// Its MIME type, if known.
    pub mime_type: Option<String>,
    /// Its contents.
    pub contents: ResourceContents,
}

/// What an embedded resource holds (WIT `resource-contents`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResourceContents {
    /// UTF-8 text.
    Text(String),
    /// Bytes (base64 when serialised).
    Blob(#[serde(serialize_with = "base64_bytes")] Vec<u8>),
}

/// Who a part is for (WIT `role`, MCP `Role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person using the client.
    User,
    /// The model.
    Assistant,
}

/// How a client should treat a part (WIT `annotations`, MCP `Annotations`).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[non_exhaustive]
pub struct Annotations {
    /// Who the part is for; empty means everyone.
    pub audience: Vec<Role>,
    /// 0.0 (least) to 1.0 (most important); `None` when unsaid.
    pub priority: Option<f64>,
}

impl Annotations {
    /// Annotations for `audience` with `priority`.
    pub fn new(audience: Vec<Role>, priority: Option<f64>) -> Self {
        Self { audience, priority }
    }
}

fn base64_bytes<S: serde::Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    use base64::Engine as _;
    serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// A checked output: the text every surface shows, and the parts when
/// there is more than that text.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The structured part's JSON text if there is one, else the text
    /// parts joined by newlines (empty when there are none).
    pub text: String,
    /// Every part in order, or empty when the output was one text or one
    /// structured part without annotations (then `text` says it all).
    pub parts: Vec<OutputPart>,
    /// Bytes the output takes against the cap: text, JSON, URIs, names and
    /// data.
    pub bytes: usize,
}

/// Why a guest's parts were refused: one sentence naming the part (from 0)
/// and what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartsError {
    /// More bytes than the output cap allows.
    TooLarge(usize),
    /// Any other broken rule.
    Invalid(String),
}

/// Checks `parts` against the rules of WIT 0.3.0 `tool-output` and the
/// output cap `output_bytes`, and derives the text every surface shows.
///
/// # Errors
/// [`PartsError::TooLarge`] past the cap (counted before anything else is
/// checked); [`PartsError::Invalid`] for more than [`MAX_PARTS`] parts, a
/// second `json` part or one that is not JSON, a MIME type that is not `type/subtype` (image and
/// audio parts must be `image/*` and `audio/*`), an image whose bytes are
/// not the PNG, JPEG, GIF or WebP its type says, a URI that is not
/// `https://` or `corral://` (or longer than [`MAX_URI_BYTES`]), an empty
/// link name, or a priority outside 0.0..=1.0.
pub fn check(parts: Vec<OutputPart>, output_bytes: usize) -> Result<Checked, PartsError> {
    let bytes: usize = parts.iter().map(part_bytes).sum();
    if bytes > output_bytes {
        return Err(PartsError::TooLarge(bytes));
    }
    if parts.len() > MAX_PARTS {
        return Err(PartsError::Invalid(format!(
            "{} parts; an output has at most {MAX_PARTS}: merge texts, or return links",
            parts.len()
        )));
    }
    let mut json = None;
    for (index, part) in parts.iter().enumerate() {
        let fail = |problem: String| Err(PartsError::Invalid(format!("part {index}: {problem}")));
        if let Some(annotations) = &part.annotations
            && let Some(priority) = annotations.priority
            && !(0.0..=1.0).contains(&priority)
        {
            return fail(format!("priority {priority} is outside 0.0 to 1.0"));
        }
        match &part.content {
            PartContent::Text { .. } => {}
            PartContent::Json { json: text } => {
                if json.replace(text.as_str()).is_some() {
                    return fail("a second json part; an output has one structured result".into());
                }
                if let Err(err) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
                    return fail(format!(
                        "the json part is not JSON ({err}); use a text part"
                    ));
                }
            }
            PartContent::Image(media) => {
                if let Err(problem) = media_rule(media, "image") {
                    return fail(problem);
                }
            }
            PartContent::Audio(media) => {
                if let Err(problem) = media_rule(media, "audio") {
                    return fail(problem);
                }
            }
            PartContent::ResourceLink(link) => {
                if link.name.trim().is_empty() {
                    return fail("a resource link needs a name".into());
                }
                if let Err(problem) = uri_rule(&link.uri).and(optional_mime(&link.mime_type)) {
                    return fail(problem);
                }
            }
            PartContent::Resource(resource) => {
                if let Err(problem) =
                    uri_rule(&resource.uri).and(optional_mime(&resource.mime_type))
                {
                    return fail(problem);
                }
            }
        }
    }
    let plain = parts.len() == 1
        && parts[0].annotations.is_none()
        && matches!(
            parts[0].content,
            PartContent::Text { .. } | PartContent::Json { .. }
        );
    if plain {
        // One text or structured part (most calls): its string is the
        // text, moved, not copied.
        let Some(OutputPart {
            content: PartContent::Text { text } | PartContent::Json { json: text },
            ..
        }) = parts.into_iter().next()
        else {
            unreachable!("a plain output is one text or json part");
        };
        return Ok(Checked {
            text,
            parts: Vec::new(),
            bytes,
        });
    }
    // Otherwise the text is the structured part's JSON, or the text parts
    // joined (gathered only here: a plain output never needs the list).
    let text = match json {
        Some(json) => json.to_owned(),
        None => parts
            .iter()
            .filter_map(|part| match &part.content {
                PartContent::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    Ok(Checked { text, parts, bytes })
}

/// Bytes `part` takes against the output cap.
fn part_bytes(part: &OutputPart) -> usize {
    match &part.content {
        PartContent::Text { text } => text.len(),
        PartContent::Json { json } => json.len(),
        PartContent::Image(media) | PartContent::Audio(media) => {
            media.mime_type.len() + media.data.len()
        }
        PartContent::ResourceLink(link) => {
            link.uri.len()
                + link.name.len()
                + link.description.len()
                + link.mime_type.as_ref().map_or(0, String::len)
        }
        PartContent::Resource(resource) => {
            resource.uri.len()
                + resource.mime_type.as_ref().map_or(0, String::len)
                + match &resource.contents {
                    ResourceContents::Text(text) => text.len(),
                    ResourceContents::Blob(data) => data.len(),
                }
        }
    }
}

/// `type/subtype` of restricted-name characters (RFC 6838), at most
/// [`MAX_MIME_CHARS`].
fn mime_rule(mime: &str) -> Result<(), String> {
    let name = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    let valid = mime.len() <= MAX_MIME_CHARS
        && mime
            .split_once('/')
            .is_some_and(|(kind, sub)| name(kind) && name(sub));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "MIME type {:?} is not `type/subtype`, for example `image/png`",
            corral_names::text::escape(&mime.chars().take(40).collect::<String>())
        ))
    }
}

fn optional_mime(mime: &Option<String>) -> Result<(), String> {
    mime.as_deref().map_or(Ok(()), mime_rule)
}

/// An image or audio part: its type is `kind/*`, and an image's bytes are
/// what its type says for the formats with magic numbers.
fn media_rule(media: &Media, kind: &str) -> Result<(), String> {
    mime_rule(&media.mime_type)?;
    let mime = media.mime_type.to_ascii_lowercase();
    if !mime.starts_with(&format!("{kind}/")) {
        return Err(format!(
            "an {kind} part has MIME type {}; use an `{kind}/...` type",
            media.mime_type
        ));
    }
    if kind == "image" {
        let data = media.data.as_slice();
        let matches = match mime.as_str() {
            "image/png" => Some(data.starts_with(b"\x89PNG\r\n\x1a\n")),
            "image/jpeg" => Some(data.starts_with(&[0xFF, 0xD8, 0xFF])),
            "image/gif" => Some(data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a")),
            "image/webp" => {
                Some(data.len() >= 12 && data.starts_with(b"RIFF") && &data[8..12] == b"WEBP")
            }
            _ => None,
        };
        if matches == Some(false) {
            return Err(format!(
                "the bytes of an image part are not {}: the type must say what the bytes are",
                media.mime_type
            ));
        }
    }
    Ok(())
}

/// A URI a guest may hand to a client: `https://` or `corral://`.
fn uri_rule(uri: &str) -> Result<(), String> {
    let lower = uri.get(..10).unwrap_or(uri).to_ascii_lowercase();
    let scheme_ok = lower.starts_with("https://") || lower.starts_with("corral://");
    let clean = !uri.chars().any(|c| c.is_control() || c.is_whitespace());
    if scheme_ok && clean && uri.len() <= MAX_URI_BYTES {
        Ok(())
    } else {
        Err(format!(
            "URI {:?} is refused; a guest may give `https://` or `corral://` URIs \
             without spaces or control characters, up to {MAX_URI_BYTES} bytes",
            corral_names::text::escape(&uri.chars().take(60).collect::<String>())
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(mime: &str, data: &[u8]) -> OutputPart {
        OutputPart::new(PartContent::Image(Media::new(mime, data.to_vec())))
    }

    fn text(text: &str) -> OutputPart {
        OutputPart::new(PartContent::Text { text: text.into() })
    }

    #[test]
    fn a_single_text_or_json_part_is_just_text() {
        let checked = check(vec![text("hi")], 100).unwrap();
        assert_eq!((checked.text.as_str(), checked.parts.len()), ("hi", 0));
        let json = OutputPart::new(PartContent::Json {
            json: "{\"a\":1}".into(),
        });
        let checked = check(vec![text("see"), json], 100).unwrap();
        assert_eq!(checked.text, "{\"a\":1}");
        assert_eq!(checked.parts.len(), 2);
        assert_eq!(check(Vec::new(), 0).unwrap().text, "");
    }

    #[test]
    fn images_must_be_what_their_type_says() {
        let png = b"\x89PNG\r\n\x1a\n....";
        assert!(check(vec![image("image/png", png)], 100).is_ok());
        let lie = check(vec![image("image/png", b"GIF89a....")], 100).unwrap_err();
        assert!(
            matches!(lie, PartsError::Invalid(ref m) if m.contains("part 0")),
            "{lie:?}"
        );
        assert!(check(vec![image("image/svg+xml", b"<svg/>")], 100).is_ok());
        assert!(check(vec![image("text/html", b"<b>")], 100).is_err());
        assert!(check(vec![image("image", b"x")], 100).is_err());
    }

    #[test]
    fn uris_counts_caps_and_priorities_are_enforced() {
        let link = |uri: &str| {
            OutputPart::new(PartContent::ResourceLink(ResourceLink {
                uri: uri.into(),
                name: "n".into(),
                description: String::new(),
                mime_type: None,
                size: None,
            }))
        };
        assert!(check(vec![link("https://example.com/a")], 100).is_ok());
        assert!(check(vec![link("corral://results/1")], 100).is_ok());
        for bad in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "https://a b",
            "http://x",
        ] {
            assert!(check(vec![link(bad)], 100).is_err(), "{bad}");
        }
        assert_eq!(
            check(vec![text("0123456789")], 9),
            Err(PartsError::TooLarge(10))
        );
        let many = vec![text(""); MAX_PARTS + 1];
        assert!(check(many, 100).is_err());
        let loud = text("x").with_annotations(Some(Annotations::new(vec![], Some(1.5))));
        assert!(check(vec![loud], 100).is_err());
        let two = OutputPart::new(PartContent::Json { json: "1".into() });
        assert!(check(vec![two.clone(), two], 100).is_err());
        let broken = OutputPart::new(PartContent::Json {
            json: "{nope".into(),
        });
        assert!(
            matches!(check(vec![broken], 100), Err(PartsError::Invalid(m)) if m.contains("not JSON"))
        );
    }
}
