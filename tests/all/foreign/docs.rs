//! Where a component of another world's docs come from besides a WIT text
//! file beside it: a WIT package in its binary form beside it (as
//! registries publish them, `wit-component`'s encoding with its
//! `package-docs` section), and a `package-docs` section inside the
//! component itself.

use serde_json::Value;
use wit_parser::decoding::{DecodedWasm, decode};
use wit_parser::{PackageMetadata, Resolve, WorldItem};

use super::host;
use crate::support::{ANY_TYPES, guest, plugin_dir, repository_root};

/// The description of `tool` served from a directory holding `component`
/// as `types.wasm` and, when given, `wit` as `types.wit`.
async fn description(component: &[u8], wit: Option<&[u8]>, tool: &str) -> (String, Value) {
    let dir = plugin_dir(&[]);
    std::fs::write(dir.path().join("types.wasm"), component).expect("component");
    if let Some(wit) = wit {
        std::fs::write(dir.path().join("types.wit"), wit).expect("wit");
    }
    let host = host(dir.path()).await;
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    let spec = host.tool(tool).expect("tool").spec().clone();
    (spec.description, spec.parameters)
}

#[tokio::test]
async fn a_binary_wit_package_beside_the_component_gives_its_docs() {
    let mut resolve = Resolve::default();
    let package = resolve
        .push_file(repository_root().join("tests/fixtures/any_types/wit/types.wit"))
        .expect("the fixture's WIT");
    let binary = wit_component::encode(&resolve, package).expect("encode");
    assert!(binary.starts_with(b"\0asm"), "the binary form");
    let component = std::fs::read(guest(ANY_TYPES)).expect("component");
    let (text, parameters) = description(&component, Some(&binary), "kinds_divide").await;
    assert!(text.starts_with("Divides a by b"), "{text}");
    assert_eq!(
        parameters["properties"]["b"]["description"],
        "the divisor, not zero"
    );
    let (text, _) = description(&component, Some(&binary), "greet").await;
    assert_eq!(text, "Greets someone by name.");
}

#[tokio::test]
async fn a_package_docs_section_inside_the_component_gives_its_docs() {
    let component = std::fs::read(guest(ANY_TYPES)).expect("component");
    let (text, _) = description(&component, None, "greet").await;
    assert!(text.contains("carries no doc comment"), "{text}");

    // The docs of the component's own world, as wit-component encodes them.
    let Ok(DecodedWasm::Component(mut resolve, world)) = decode(&component) else {
        panic!("a component");
    };
    for item in resolve.worlds[world].exports.values_mut() {
        if let WorldItem::Function(function) = item
            && function.name == "greet"
        {
            function.docs.contents = Some("Greets someone, from the component itself.".into());
        }
    }
    let package = resolve.worlds[world].package.expect("its package");
    let section = PackageMetadata::extract(&resolve, package)
        .encode()
        .expect("encode");
    let documented = with_custom_section(&component, PackageMetadata::SECTION_NAME, &section);
    let (text, _) = description(&documented, None, "greet").await;
    assert_eq!(text, "Greets someone, from the component itself.");
}

/// `binary` with a custom section `name` holding `data` appended.
fn with_custom_section(binary: &[u8], name: &str, data: &[u8]) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let mut payload = Vec::new();
    leb(name.len(), &mut payload);
    payload.extend_from_slice(name.as_bytes());
    payload.extend_from_slice(data);
    let mut out = binary.to_vec();
    out.push(0);
    leb(payload.len(), &mut out);
    out.extend_from_slice(&payload);
    out
}
