//! Compile-time checks of `#[tool]` and `plugin!`: misuse is a compile error
//! pointing at the offending code (expected messages in `ui/*.stderr`;
//! regenerate with `TRYBUILD=overwrite cargo test -p corral-guest --test ui`).
//! Every case fails to compile, so trybuild only type-checks (`cargo
//! check`); the correct use, every option at once, is `options.rs`, an
//! ordinary test.

#[test]
fn ui() {
    // `.ci/run` lints as it builds, with clippy-driver as the workspace's
    // compiler wrapper; trybuild's own cargo would inherit it, and
    // clippy-driver words some diagnostics differently (full paths). The
    // expected messages are rustc's, as a tool author sees them.
    // SAFETY: this binary's only test, run before trybuild starts any
    // thread; nothing else reads the environment meanwhile.
    unsafe {
        std::env::remove_var("RUSTC_WORKSPACE_WRAPPER");
        std::env::remove_var("CLIPPY_ARGS");
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail_*.rs");
}
