//! Private directories, in one place: the component cache, the secret
//! store's directory, the recordings directory. Missing ones are created
//! (with their missing parents) with mode 0700; an existing one is left as
//! it is, since it may be a directory the operator shares (`/tmp`), and
//! [`is_private`] says whether others can read it.

use std::path::Path;

/// Creates `dir` and its missing parents with mode 0700 (on Unix); an
/// existing `dir` is left alone.
///
/// # Errors
/// When a directory cannot be created.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Whether only its owner can list and enter `dir` (mode bits `0o077`
/// clear); `true` where there are no mode bits.
pub fn is_private(dir: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o077 == 0)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_directory_is_private_and_an_existing_one_untouched() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().expect("dir");
        let new = root.path().join("a/b");
        create_private_dir(&new).expect("create");
        assert!(is_private(&new));
        let shared = root.path().join("shared");
        std::fs::create_dir(&shared).expect("create");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        create_private_dir(&shared).expect("exists");
        assert!(!is_private(&shared), "left as it was");
    }
}
