//! The plugin directory's listing: which entries the loader tries to load.

use std::path::{Path, PathBuf};

use crate::host::error::HostError;

/// The entries named `*.wasm` directly inside `dir`, sorted by file name,
/// whatever their type: one that is not a regular file (a directory, a
/// named pipe, a symlink loop) is listed too, so the loader reports it as
/// not loaded with the reason instead of skipping it without a word.
///
/// # Errors
/// [`HostError::PluginDir`] when the directory cannot be listed.
pub fn plugin_files(dir: &Path) -> Result<Vec<PathBuf>, HostError> {
    let io_err = |source| HostError::PluginDir {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_err)? {
        let path = entry.map_err(io_err)?.path();
        if path.extension().is_some_and(|e| e == "wasm") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn every_wasm_entry_is_listed_whatever_its_type_and_nothing_else() {
        let dir = tempfile::tempdir().expect("dir");
        let fifo = dir.path().join("fifo.wasm");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let subdir = dir.path().join("dir.wasm");
        std::fs::create_dir(&subdir).expect("dir");
        let looped = dir.path().join("loop.wasm");
        std::os::unix::fs::symlink("loop.wasm", &looped).expect("symlink");
        let dangling = dir.path().join("gone.wasm");
        std::os::unix::fs::symlink("nowhere.wasm", &dangling).expect("symlink");
        std::fs::write(dir.path().join("notes.txt"), "not a plugin").expect("write");
        assert_eq!(
            plugin_files(dir.path()).expect("list"),
            vec![subdir, fifo, dangling, looped]
        );
        match plugin_files(&dir.path().join("missing")) {
            Err(HostError::PluginDir { path, .. }) => assert!(path.ends_with("missing")),
            other => panic!("{other:?}"),
        }
    }
}
