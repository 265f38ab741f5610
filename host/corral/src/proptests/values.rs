//! The `wit_values` fuzz target's invariant as a property test: JSON read
//! as a component value of every kind in `tests/support/wit/values.wit`
//! (any-component mode's arguments), then written back as JSON text, reads
//! back as the same value and writes the same text; caps keep a prefix and
//! count the whole ([`corral_sandbox::__fuzz::value_round_trip`]).

use std::sync::OnceLock;

use proptest::prelude::*;
use wasmtime::component::types::Type;

use super::CASES;
use corral_sandbox::__fuzz::value_round_trip as round_trip;

/// The parameter types of the test world, built once.
fn params() -> &'static [(String, Type)] {
    static PARAMS: OnceLock<Vec<(String, Type)>> = OnceLock::new();
    PARAMS.get_or_init(|| corral_test_support::exported_params(corral_test_support::VALUES_WIT))
}

#[test]
fn the_test_world_has_a_parameter_of_every_kind() {
    let kinds: std::collections::BTreeSet<String> = params()
        .iter()
        .map(|(_, t)| {
            format!("{t:?}")
                .split('(')
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    for kind in [
        "Bool", "S8", "U8", "S16", "U16", "S32", "U32", "S64", "U64", "Float32", "Float64", "Char",
        "String", "List", "Record", "Tuple", "Variant", "Enum", "Flags", "Option", "Result",
    ] {
        assert!(
            kinds.contains(kind),
            "no parameter of kind {kind} in {kinds:?}"
        );
    }
}

#[test]
fn values_that_fit_are_made_often_enough_to_test_the_round_trip() {
    let (mut fits, mut refused) = (0, 0);
    for seed in 0..200u32 {
        for (_, ty) in params() {
            let mut choices = (0..).map(|i: u32| seed.wrapping_mul(2_654_435_761).rotate_left(i));
            let value = corral_test_support::value_for(ty, &mut choices);
            match round_trip(ty, &value) {
                Ok(Some(_)) => fits += 1,
                Ok(None) => refused += 1,
                Err(broken) => panic!("{value}: {broken}"),
            }
        }
    }
    assert!(fits > refused / 4, "{fits} fit, {refused} refused");
    assert!(
        refused > 0,
        "no value was refused: the generator never errs"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn a_value_that_fits_its_type_reads_back_as_itself(
        choices in proptest::collection::vec(any::<u32>(), 0..64),
    ) {
        let mut choices = choices.into_iter();
        for (name, ty) in params() {
            let value = corral_test_support::value_for(ty, &mut choices);
            if let Err(broken) = round_trip(ty, &value) {
                prop_assert!(false, "{}: {} ({})", name, broken, value);
            }
        }
    }
}
