//! The optional, versioned files beside the plugins, read by one rule:
//! `corral.lock`, `groups.toml`, `disclosure.toml` and `pipelines.json`.
//!
//! - A missing file is no file (`Ok(None)`): each is optional.
//! - It is read under the cap of its [`corral_files::Kind`].
//! - Its `version` is checked before its shape, so a file written for a
//!   later corral says "version 2 is not supported" rather than naming the
//!   first field this corral does not know (each format refuses unknown
//!   fields, after Spin's manifests).
//! - Then it is parsed whole.
//!
//! The callers put each [`VersionedError`] into their own error, naming
//! the file.

use std::path::Path;

use serde::de::DeserializeOwned;

/// How a versioned file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// TOML (`corral.lock`, `groups.toml`, `disclosure.toml`).
    Toml,
    /// JSON (`pipelines.json`).
    Json,
}

/// Why a versioned file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum VersionedError {
    /// It cannot be read: I/O, not a file, over its cap, not UTF-8. The
    /// text names the cap where one was passed ([`corral_files::ReadError::reason`]).
    #[error("{0}")]
    Read(String),
    /// Not valid TOML or JSON of the expected shape: the parser's message
    /// (with its line and column for TOML).
    #[error("{0}")]
    Shape(String),
    /// A `version` other than the one this corral reads.
    #[error("version {found} is not supported; this corral reads version {supported}")]
    Version {
        /// The file's version.
        found: i64,
        /// The version this corral reads.
        supported: u32,
    },
}

/// Only the `version` of a file, whatever else it holds.
#[derive(serde::Deserialize)]
struct Probe {
    version: Option<i64>,
}

/// The file `path` of `kind`, in `format`, of version `supported`; `None`
/// when there is no such file.
///
/// # Errors
/// [`VersionedError`] when it cannot be read, has another version, or does
/// not parse as `T`.
pub(crate) fn read<T: DeserializeOwned>(
    path: &Path,
    kind: corral_files::Kind,
    format: Format,
    supported: u32,
) -> Result<Option<T>, VersionedError> {
    let text = match corral_files::read_text(path, kind) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(err) => return Err(VersionedError::Read(err.reason())),
    };
    if let Ok(Probe {
        version: Some(found),
    }) = parse::<Probe>(&text, format)
        && found != i64::from(supported)
    {
        return Err(VersionedError::Version { found, supported });
    }
    parse(&text, format)
        .map(Some)
        .map_err(VersionedError::Shape)
}

fn parse<T: DeserializeOwned>(text: &str, format: Format) -> Result<T, String> {
    match format {
        Format::Toml => toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string()),
        Format::Json => serde_json::from_str(text).map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct File {
        version: u32,
        name: String,
    }

    fn read_str(text: Option<&str>, format: Format) -> Result<Option<File>, VersionedError> {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("file");
        if let Some(text) = text {
            std::fs::write(&path, text).expect("write");
        }
        read(&path, corral_files::Kind::Groups, format, 1)
    }

    #[test]
    fn missing_is_none_and_a_good_file_parses_in_either_format() {
        assert_eq!(read_str(None, Format::Toml), Ok(None));
        let want = Some(File {
            version: 1,
            name: "a".into(),
        });
        assert_eq!(
            read_str(Some("version = 1\nname = \"a\""), Format::Toml),
            Ok(want)
        );
        let want = Some(File {
            version: 1,
            name: "a".into(),
        });
        assert_eq!(
            read_str(Some(r#"{"version": 1, "name": "a"}"#), Format::Json),
            Ok(want)
        );
    }

    #[test]
    fn the_version_is_checked_before_the_shape() {
        // A later version with a field this corral does not know.
        let err = read_str(Some("version = 2\nname = \"a\"\nmore = 1"), Format::Toml).unwrap_err();
        assert_eq!(
            err.to_string(),
            "version 2 is not supported; this corral reads version 1"
        );
        let err = read_str(Some(r#"{"version": 0, "extra": true}"#), Format::Json).unwrap_err();
        assert!(
            matches!(err, VersionedError::Version { found: 0, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_bad_shape_names_the_line_and_a_missing_version_is_a_shape_error() {
        let err = read_str(Some("version = 1\nname = 3"), Format::Toml).unwrap_err();
        assert!(
            matches!(&err, VersionedError::Shape(m) if m.contains("line 2")),
            "{err}"
        );
        let err = read_str(Some("name = \"a\""), Format::Toml).unwrap_err();
        assert!(err.to_string().contains("missing field `version`"), "{err}");
    }
}
