//! The tape's rules: what a recording keeps under its cap, and how a replay
//! answers each channel and names the first departure.

use super::*;

fn random(bytes: &[u8]) -> Event {
    Event::Random {
        source: RandomSource::Secure,
        bytes: bytes.to_vec(),
    }
}

#[test]
fn a_recording_stops_at_its_cap_and_says_where() {
    let tape = Tape::record(100);
    assert!(tape.push(random(&[1; 40])).is_some());
    assert!(tape.push(random(&[2; 40])).is_none(), "72 + 72 > 100");
    assert!(tape.push(random(&[3])).is_none(), "nothing after the cut");
    let log = tape.take_log();
    assert_eq!(log.events.len(), 1);
    assert_eq!(log.incomplete.len(), 1);
    assert!(
        log.incomplete[0].contains("import #1"),
        "{:?}",
        log.incomplete
    );
}

#[test]
fn clocks_answer_in_order_then_repeat_their_last_value() {
    let events = vec![
        Event::Clock {
            clock: ClockKind::Monotonic,
            nanos: 5,
        },
        random(&[7]),
        Event::Clock {
            clock: ClockKind::Monotonic,
            nanos: 9,
        },
    ];
    let tape = Tape::replay(events, Vec::new(), 0);
    let never = || panic!("a replay never reads the host's clock");
    assert_eq!(tape.clock(ClockKind::Monotonic, never), 5);
    assert_eq!(tape.clock(ClockKind::Monotonic, never), 9);
    assert_eq!(tape.clock(ClockKind::Monotonic, never), 9);
    assert_eq!(tape.clock(ClockKind::Wall, never), 0);
    let log = tape.take_replay();
    assert_eq!(log.divergence, None, "extra clock reads are no departure");
    assert_eq!(log.unused, 1, "the random read never came");
}

#[test]
fn the_first_departure_names_the_recorded_event_and_what_was_asked() {
    let tape = Tape::replay(vec![random(&[1, 2]), random(&[3, 4])], Vec::new(), 0);
    let same_len = |want: usize| move |e: &Event| matches!(e, Event::Random { bytes, .. } if bytes.len() == want);
    assert_eq!(
        tape.answer(&random(&[0, 0]), same_len(2)),
        Some(random(&[1, 2]))
    );
    assert_eq!(tape.answer(&random(&[0; 8]), same_len(8)), None);
    assert_eq!(
        tape.answer(&random(&[0; 2]), same_len(2)),
        None,
        "past the end"
    );
    let divergence = tape.take_replay().divergence.expect("a departure");
    assert_eq!(divergence.position, 1);
    assert!(
        divergence
            .expected
            .as_deref()
            .unwrap_or("")
            .contains("(2 bytes)")
    );
    assert!(divergence.got.contains("(8 bytes)"), "{divergence}");
}
