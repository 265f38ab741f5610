//! How `corral call` shows an output of several parts (WIT 0.3.0): its
//! text parts on stdout, a line per other part on stderr, and the bytes of
//! images, audio and binary resources written to `--out DIR`.

use std::path::{Path, PathBuf};

use corral::{CallOutput, OutputPart, PartContent, ResourceContents};

/// The file extension for a MIME type the CLI writes; `bin` otherwise.
fn extension(mime: Option<&str>) -> &'static str {
    match mime.map(str::to_ascii_lowercase).as_deref() {
        Some("image/png") => "png",
        Some("image/jpeg") => "jpg",
        Some("image/gif") => "gif",
        Some("image/webp") => "webp",
        Some("image/svg+xml") => "svg",
        Some("audio/wav" | "audio/x-wav" | "audio/wave") => "wav",
        Some("audio/mpeg") => "mp3",
        Some("audio/ogg") => "ogg",
        Some("application/pdf") => "pdf",
        Some("application/json") => "json",
        Some(mime) if mime.starts_with("text/") => "txt",
        _ => "bin",
    }
}

/// Prints `out`'s parts: each text part (the structured part as pretty JSON
/// when there is no text), then, on stderr, one line per other part, its
/// bytes written to `out_dir` as `<tool>-<index>.<ext>` when given.
///
/// # Errors
/// A closed stdout, or a file that cannot be written (naming it).
pub fn print(out: &CallOutput, out_dir: Option<&Path>) -> anyhow::Result<()> {
    let has_text = out
        .parts
        .iter()
        .any(|part| matches!(part.content, PartContent::Text { .. }));
    for (index, part) in out.parts.iter().enumerate() {
        match &part.content {
            PartContent::Text { text } => outln!("{}", super::for_stdout(text))?,
            PartContent::Json { .. } if has_text => {}
            PartContent::Json { .. } => match out.json() {
                Some(value) => super::print_json(value)?,
                None => outln!("{}", super::for_stdout(&out.text))?,
            },
            _ => eprintln!("{}", describe(out, index, part, out_dir)?),
        }
    }
    Ok(())
}

/// One stderr line for a part that is not text, after writing its bytes.
fn describe(
    out: &CallOutput,
    index: usize,
    part: &OutputPart,
    out_dir: Option<&Path>,
) -> anyhow::Result<String> {
    let escape = |text: &str| corral::untrusted_text::escape(text).into_owned();
    let (what, mime, bytes) = match &part.content {
        PartContent::Image(media) => ("image", Some(media.mime_type.as_str()), &media.data),
        PartContent::Audio(media) => ("audio", Some(media.mime_type.as_str()), &media.data),
        PartContent::ResourceLink(link) => {
            return Ok(format!(
                "part {index}: link {} <{}>{}",
                escape(&link.name),
                escape(&link.uri),
                link.mime_type
                    .as_deref()
                    .map(|m| format!(" ({})", escape(m)))
                    .unwrap_or_default()
            ));
        }
        PartContent::Resource(resource) => match &resource.contents {
            ResourceContents::Blob(data) => ("resource", resource.mime_type.as_deref(), data),
            ResourceContents::Text(text) => {
                return Ok(format!(
                    "part {index}: resource <{}>, {} bytes of text:\n{}",
                    escape(&resource.uri),
                    text.len(),
                    escape(text)
                ));
            }
            _ => return Ok(format!("part {index}: a resource this corral cannot show")),
        },
        _ => return Ok(format!("part {index}: a part this corral cannot show")),
    };
    let kind = mime.map(escape).unwrap_or_else(|| "unknown type".into());
    let Some(dir) = out_dir else {
        return Ok(format!(
            "part {index}: {what} {kind}, {} bytes (pass --out DIR to write it)",
            bytes.len()
        ));
    };
    let path: PathBuf = dir.join(format!("{}-{index}.{}", out.tool, extension(mime)));
    corral_files::write_whole(&path, bytes, corral_files::WriteOptions::SYNCED)
        .map_err(|err| anyhow::anyhow!("cannot write part {index} to {}: {err}", path.display()))?;
    Ok(format!(
        "part {index}: {what} {kind}, {} bytes, written to {}",
        bytes.len(),
        path.display()
    ))
}
