//! The caps on the files corral reads beside the plugins
//! (`corral_files::Kind`): an oversized policy, `groups.toml` or
//! `pipelines.json` is refused with a load error that names the file and
//! its cap, without reading it whole, and every other plugin still loads.

use corral::{LoadErrorReason, PolicyError};

use crate::support::{ENCODE, TEXT, host, plugin_dir};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

#[tokio::test]
async fn oversized_policy_groups_and_pipelines_files_are_refused_naming_file_and_cap() {
    let dir = plugin_dir(&[TEXT, ENCODE]);
    // One byte over each cap; what the bytes are does not matter, since
    // nothing over the cap is parsed.
    std::fs::write(
        dir.path().join("text.policy.toml"),
        "#".repeat(256 * KIB + 1),
    )
    .unwrap();
    std::fs::write(dir.path().join(corral::GROUPS_FILE), "#".repeat(MIB + 1)).unwrap();
    std::fs::write(
        dir.path().join(corral::PIPELINES_FILE),
        " ".repeat(4 * MIB + 1),
    )
    .unwrap();
    let host = host(dir.path()).await;
    let errors = host.load_errors();

    let policy = errors
        .iter()
        .find(|e| e.path.ends_with("text.wasm"))
        .unwrap_or_else(|| panic!("no error for text.wasm: {errors:?}"));
    match &policy.reason {
        LoadErrorReason::Policy(PolicyError::Read { path, message }) => {
            assert!(path.ends_with("text.policy.toml"), "{path:?}");
            assert!(
                message.contains("cap of 262144 bytes for a policy"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    let shown = policy.to_string();
    assert!(shown.contains("text.policy.toml"), "{shown}");

    let groups = errors
        .iter()
        .find(|e| e.path.ends_with(corral::GROUPS_FILE))
        .unwrap_or_else(|| panic!("no error for groups.toml: {errors:?}"));
    assert!(
        matches!(&groups.reason, LoadErrorReason::InvalidGroups(m)
            if m.contains("cap of 1048576 bytes for the tool groups file")),
        "{groups}"
    );

    let pipelines = errors
        .iter()
        .find(|e| e.path.ends_with(corral::PIPELINES_FILE))
        .unwrap_or_else(|| panic!("no error for pipelines.json: {errors:?}"));
    assert!(
        matches!(&pipelines.reason, LoadErrorReason::InvalidPipelines(m)
            if m.contains("cap of 4194304 bytes for the pipelines file")),
        "{pipelines}"
    );

    // The plugin without a policy problem serves its tools.
    assert!(
        host.tools().iter().any(|t| t
            .plugin()
            .is_some_and(|p| p.path().ends_with("encode.wasm"))),
        "encode still loads: {errors:?}"
    );
    assert!(
        !host
            .tools()
            .iter()
            .any(|t| t.plugin().is_some_and(|p| p.path().ends_with("text.wasm"))),
        "text does not load without its policy"
    );
}
