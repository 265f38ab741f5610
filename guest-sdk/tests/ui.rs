//! Compile-time checks of `#[tool]` and `plugin!`: misuse is a compile error
//! pointing at the offending code (expected messages in `ui/*.stderr`;
//! regenerate with `TRYBUILD=overwrite cargo test -p corral-guest --test ui`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass_*.rs");
    t.compile_fail("tests/ui/fail_*.rs");
}
