//! The OS keyring backend of the secret store: one `keyring-core` entry
//! (service `corral`, user the store's name) holding the store's TOML text.
//! On Linux the entry lives in the kernel's keyutils keyring
//! (`linux-keyutils-keyring-store`); other platforms have no backend in
//! this build.

/// The keyring service every store's entry is filed under.
const SERVICE: &str = "corral";

#[cfg(target_os = "linux")]
fn entry(name: &str) -> Result<keyring_core::Entry, String> {
    // (A keyring credential store, not a wasmtime one.)
    use linux_keyutils_keyring_store::Store as Keyutils;
    let store: std::sync::Arc<keyring_core::CredentialStore> = Keyutils::new()
        .map_err(|e| format!("the kernel keyring cannot be reached ({e}); use a file store"))?;
    keyring_core::Entry::new_in_store(&store, SERVICE, name)
        .map_err(|e| format!("its keyring entry cannot be made ({e})"))
}

#[cfg(not(target_os = "linux"))]
fn entry(_name: &str) -> Result<keyring_core::Entry, String> {
    Err("this build has an OS keyring backend on Linux only; use a file store".into())
}

/// The store's text, `None` when the entry does not exist.
pub(super) fn read(name: &str) -> Result<Option<String>, String> {
    match entry(name)?.get_password() {
        Ok(text) => Ok(Some(text)),
        Err(keyring_core::Error::NoEntry) => Ok(None),
        Err(e) => Err(format!("cannot read it from the keyring: {e}")),
    }
}

/// Replaces the store's text; an empty store deletes the entry.
pub(super) fn write(name: &str, text: &str) -> Result<(), String> {
    let entry = entry(name)?;
    if text.trim().is_empty() {
        return match entry.delete_credential() {
            Ok(()) | Err(keyring_core::Error::NoEntry) => Ok(()),
            Err(e) => Err(format!("cannot delete it from the keyring: {e}")),
        };
    }
    entry
        .set_password(text)
        .map_err(|e| format!("cannot write it to the keyring: {e}"))
}

#[cfg(test)]
mod tests {
    use super::super::SecretStore;

    #[test]
    fn a_keyring_store_keeps_names_and_values_and_deletes_its_entry_when_empty() {
        let name = format!("corral_test_{}", std::process::id());
        let store = SecretStore::keyring(&name);
        assert!(store.path().is_none());
        assert_eq!(store.location(), format!("keyring corral/{name}"));
        assert!(store.names().expect("empty").is_empty());
        store.set("API_KEY", "s3cr3t \"quoted\"").expect("set");
        store.set("OTHER", "x").expect("set");
        // Another handle on the same entry sees the same table.
        let again = SecretStore::keyring(&name);
        assert_eq!(again.names().expect("names"), ["API_KEY", "OTHER"]);
        assert_eq!(again.load().expect("load")["API_KEY"], "s3cr3t \"quoted\"");
        assert!(again.delete("OTHER").expect("delete"));
        assert!(again.delete("API_KEY").expect("delete"));
        assert_eq!(super::read(&name), Ok(None), "the entry is gone");
    }
}
