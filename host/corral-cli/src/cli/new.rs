//! `corral new rust|python|js|c NAME`: a tool project that builds to a
//! component with one command (`./build.sh`) and passes its own test
//! (`./test.sh`, which calls the tool in the sandbox), with a README stub, a
//! sample policy and the toolchain pins it was made with.
//!
//! The SDKs are not on any registry yet. A Rust project refers to the guest
//! SDK by path in the corral checkout this binary was built from (or
//! `--sdk DIR`), and pins the versions corral was tested with (its
//! `Cargo.lock`). Python, JavaScript and C projects carry the helper files
//! (`corral_tool/`, `corral-tool.js`, `json.c`) and the WIT, and build with
//! the checkout's pinned toolchains (`scripts/guest-toolchains.sh`, which
//! their `build.sh` runs when they are missing).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use super::GlobalArgs;

/// The languages `corral new` scaffolds.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Language {
    Rust,
    Python,
    Js,
    C,
}

/// Create a tool project that builds with ./build.sh and tests itself with
/// ./test.sh.
#[derive(Args, Debug)]
pub struct NewCmd {
    /// The language
    language: Language,
    /// The project's name: its directory, its component (NAME.wasm) and its
    /// tool; lowercase letters, digits and `_`, starting with a letter
    name: String,
    /// Where to create the project's directory [default: the current directory]
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The corral checkout whose SDK and toolchains the project uses
    /// [default: the one this corral was built from]
    #[arg(long, value_name = "DIR", env = "CORRAL_ROOT")]
    sdk: Option<PathBuf>,
}

/// A template file: its path in the project and its text.
type Template = (&'static str, &'static str);

const RUST: &[Template] = &[
    (
        "Cargo.toml",
        include_str!("../../templates/rust/Cargo.toml"),
    ),
    (
        "src/lib.rs",
        include_str!("../../templates/rust/src/lib.rs"),
    ),
    ("build.sh", include_str!("../../templates/rust/build.sh")),
];
const PYTHON: &[Template] = &[
    ("app.py", include_str!("../../templates/python/app.py")),
    ("build.sh", include_str!("../../templates/python/build.sh")),
];
const JS: &[Template] = &[
    ("index.js", include_str!("../../templates/js/index.js")),
    ("build.sh", include_str!("../../templates/js/build.sh")),
];
const C: &[Template] = &[
    ("tool.c", include_str!("../../templates/c/tool.c")),
    ("build.sh", include_str!("../../templates/c/build.sh")),
];
const COMMON: &[Template] = &[
    (
        "README.md",
        include_str!("../../templates/common/README.md"),
    ),
    ("test.sh", include_str!("../../templates/common/test.sh")),
    (
        "{{name}}.policy.toml",
        include_str!("../../templates/common/policy.toml"),
    ),
];

impl Language {
    fn templates(self) -> &'static [Template] {
        match self {
            Self::Rust => RUST,
            Self::Python => PYTHON,
            Self::Js => JS,
            Self::C => C,
        }
    }

    /// Files copied from the checkout: (from, to).
    fn helpers(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Rust => &[("Cargo.lock", "Cargo.lock")],
            Self::Python => &[
                (
                    "guest-sdk/python/corral_tool/__init__.py",
                    "corral_tool/__init__.py",
                ),
                (
                    "guest-sdk/python/corral_tool/_names.py",
                    "corral_tool/_names.py",
                ),
                (
                    "guest-sdk/python/corral_tool/_parts.py",
                    "corral_tool/_parts.py",
                ),
                (
                    "guest-sdk/python/corral_tool/_client.py",
                    "corral_tool/_client.py",
                ),
                ("wit/corral-tool.wit", "wit/corral-tool.wit"),
            ],
            Self::Js => &[
                ("guest-sdk/js/corral-tool.js", "corral-tool.js"),
                ("guest-sdk/js/names.js", "names.js"),
                ("wit/corral-tool.wit", "wit/corral-tool.wit"),
            ],
            Self::C => &[
                ("sample-tools/fuzzy/json.c", "json.c"),
                ("sample-tools/fuzzy/json.h", "json.h"),
                ("wit/corral-tool.wit", "wit/corral-tool.wit"),
            ],
        }
    }

    fn describe(self) -> (&'static str, &'static str) {
        match self {
            Self::Rust => ("Rust", "src/lib.rs"),
            Self::Python => ("Python", "app.py"),
            Self::Js => ("JavaScript", "index.js"),
            Self::C => ("C", "tool.c"),
        }
    }

    fn sdk_note(self) -> &'static str {
        match self {
            Self::Rust => {
                "The corral SDK (`corral-guest`) is not on crates.io yet: `Cargo.toml` \
                 refers to it by path in the corral checkout this project was made \
                 from, and `Cargo.lock` pins the versions corral was tested with."
            }
            _ => {
                "The corral helper is not on a package registry yet: this project carries \
                 a copy of it and of the WIT, from the corral checkout it was made from, \
                 and builds with that checkout's pinned toolchains (`build.sh` installs \
                 them there when they are missing)."
            }
        }
    }
}

/// The repository this binary was built from.
fn built_from() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl NewCmd {
    /// Runs the command.
    pub async fn run(self, _global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        // A project, component and tool name at once, and a Python module
        // and a crate: corral's identifier rule for projects.
        if let Err(why) = corral::identifiers::PROJECT.check(&self.name) {
            anyhow::bail!("{why}");
        }
        let root = self.sdk.clone().unwrap_or_else(built_from);
        let root = root.canonicalize().with_context(|| {
            format!(
                "no corral checkout at {} to take the SDK from; pass --sdk DIR",
                root.display()
            )
        })?;
        // The path goes into a shell assignment and a TOML string as is.
        let shown = root.display().to_string();
        if shown
            .chars()
            .any(|c| matches!(c, '"' | '\\' | '$' | '`' | '\'') || c.is_control())
        {
            anyhow::bail!(
                "the corral checkout's path {} holds a quote, `\\`, `$`, a backtick or a \
                 control character, which the generated build files cannot carry; pass --sdk \
                 DIR with a checkout at a plainer path",
                corral::untrusted_text::escape(&shown)
            );
        }
        if !root.join("guest-sdk").is_dir() {
            anyhow::bail!(
                "{} is not a corral checkout (no guest-sdk/); pass --sdk DIR",
                root.display()
            );
        }
        let project = self.dir.clone().unwrap_or_default().join(&self.name);
        if project.exists() {
            anyhow::bail!(
                "{} already exists; choose another name or --dir",
                project.display()
            );
        }
        let (language, source) = self.language.describe();
        let fill = |text: &str| {
            text.replace("{{name}}", &self.name)
                .replace("{{tool}}", &self.name)
                .replace("{{root}}", &root.display().to_string())
                .replace("{{language}}", language)
                .replace("{{source}}", source)
                .replace("{{sdk_note}}", self.language.sdk_note())
        };
        // Built beside its final place and renamed into it: a failure leaves
        // nothing half-made.
        let parent = project.parent().filter(|p| !p.as_os_str().is_empty());
        let parent = parent.unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        let staging = tempfile::Builder::new()
            .prefix(".corral-new-")
            .tempdir_in(parent)
            .with_context(|| format!("cannot write in {}", parent.display()))?;
        let final_path = project.clone();
        let project = staging.path().to_path_buf();
        for (path, text) in self.language.templates().iter().chain(COMMON) {
            write(&project.join(fill(path)), &fill(text))?;
        }
        for (from, to) in self.language.helpers() {
            let text = std::fs::read_to_string(root.join(from)).with_context(|| {
                format!(
                    "cannot read {from} in the corral checkout {}",
                    root.display()
                )
            })?;
            write(&project.join(to), &text)?;
        }
        write(
            &project.join("TOOLCHAIN.md"),
            &toolchain_notes(&root, self.language)?,
        )?;
        write(&project.join(".gitignore"), "/target/\n/build/\n*.wasm\n")?;
        for script in ["build.sh", "test.sh"] {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(project.join(script), std::fs::Permissions::from_mode(0o755))?;
        }
        std::fs::rename(&project, &final_path)
            .with_context(|| format!("cannot create {}", final_path.display()))?;
        let project = final_path;
        outln!("created {} ({language})", project.display())?;
        outln!(
            "  cd {} && ./test.sh    # build, then call {} in the sandbox",
            project.display(),
            self.name
        )?;
        Ok(ExitCode::SUCCESS)
    }
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// `TOOLCHAIN.md`: what the project builds with, copied from the checkout's
/// pins.
fn toolchain_notes(root: &Path, language: Language) -> anyhow::Result<String> {
    let pins = |file: &str| {
        std::fs::read_to_string(root.join("scripts/toolchains").join(file))
            .with_context(|| format!("cannot read scripts/toolchains/{file}"))
    };
    let mut notes = String::from(
        "# Toolchain\n\nThe versions this project was made with (from the corral checkout's \
         pins). The host runs components of the WASI 0.2 generation \
         (`wasm32-wasip2`), world `corral:tool/plugin`.\n\n",
    );
    match language {
        Language::Rust => notes.push_str(&format!(
            "- Rust {} or newer, with the `wasm32-wasip2` target (`build.sh` adds it).\n\
             - Crate versions: `Cargo.lock`.\n",
            env!("CARGO_PKG_RUST_VERSION")
        )),
        Language::Python => notes.push_str(&format!(
            "componentize-py (from PyPI):\n\n```\n{}```\n",
            pins("requirements.txt")?
        )),
        Language::Js => notes.push_str(&format!(
            "esbuild, and componentize-qjs (QuickJS, the default engine) or componentize-js \
             (SpiderMonkey, for async handlers and `fetch()`; `CORRAL_JS_ENGINE=spidermonkey \
             ./build.sh`), from npm:\n\n```json\n{}```\n",
            pins("package.json")?
        )),
        Language::C => notes.push_str(&format!(
            "zig's clang (`ziglang` from PyPI) and jco (from npm); the C bindings are \
             corral's, in `guest-sdk/c` (what wit-bindgen-cli {} writes for the 0.1.0 \
             world):\n\n```\n{}```\n\n```json\n{}```\n",
            wit_bindgen_version(root),
            pins("requirements.txt")?,
            pins("package.json")?
        )),
    }
    Ok(notes)
}

/// The wit-bindgen-cli version `scripts/c-bindings.sh` pins (the one that
/// wrote `guest-sdk/c`).
fn wit_bindgen_version(root: &Path) -> String {
    std::fs::read_to_string(root.join("scripts/c-bindings.sh"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("WIT_BINDGEN_VERSION="))
                .map(str::to_string)
        })
        .unwrap_or_else(|| "(see scripts/c-bindings.sh)".into())
}
