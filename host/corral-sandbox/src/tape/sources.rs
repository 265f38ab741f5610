//! The taped sources of a run's WASI context: its wall and monotonic
//! clocks and its two random generators, each the host's own while
//! recording (what it returns is appended to the [`Tape`]) and the
//! recording's while replaying. Installed by [`install`] on the
//! `WasiCtxBuilder` of a run that has a tape; a run without one keeps
//! wasmtime-wasi's defaults untouched.

use std::convert::Infallible;
use std::time::Duration;

use rand_core::TryRng;
use wasmtime_wasi::clocks::{MonotonicClock, WallClock};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, Rng, WasiCtxBuilder};

use super::{ClockKind, Event, RandomSource, Tape};

/// Puts the taped clocks and generators, and the tape's insecure seed, on
/// `builder`.
pub(crate) fn install(builder: &mut WasiCtxBuilder, tape: &Tape) {
    builder
        .wall_clock(TapedWall {
            tape: tape.clone(),
            real: WallClock::new(),
        })
        .monotonic_clock(TapedMonotonic {
            tape: tape.clone(),
            real: MonotonicClock::new(),
        })
        .secure_random(TapedRandom {
            tape: tape.clone(),
            source: RandomSource::Secure,
            real: wasmtime_wasi::thread_rng(),
        })
        .insecure_random(TapedRandom {
            tape: tape.clone(),
            source: RandomSource::Insecure,
            real: wasmtime_wasi::thread_rng(),
        })
        .insecure_random_seed(tape.insecure_seed());
}

struct TapedWall {
    tape: Tape,
    real: WallClock,
}

impl HostWallClock for TapedWall {
    fn resolution(&self) -> Duration {
        self.real.resolution()
    }

    fn now(&self) -> Duration {
        let nanos = self.tape.clock(ClockKind::Wall, || {
            u64::try_from(self.real.now().as_nanos()).unwrap_or(u64::MAX)
        });
        Duration::from_nanos(nanos)
    }
}

struct TapedMonotonic {
    tape: Tape,
    real: MonotonicClock,
}

impl HostMonotonicClock for TapedMonotonic {
    fn resolution(&self) -> u64 {
        self.real.resolution()
    }

    fn now(&self) -> u64 {
        self.tape.clock(ClockKind::Monotonic, || self.real.now())
    }
}

struct TapedRandom {
    tape: Tape,
    source: RandomSource,
    real: Box<dyn Rng + Send>,
}

impl TapedRandom {
    fn fill(&mut self, buf: &mut [u8]) {
        if !self.tape.is_replay() {
            self.real.fill_bytes(buf);
            self.tape.push(Event::Random {
                source: self.source,
                bytes: buf.to_vec(),
            });
            return;
        }
        let got = Event::Random {
            source: self.source,
            bytes: vec![0; buf.len()],
        };
        let answer = self.tape.answer(&got, |event| {
            matches!(event, Event::Random { source, bytes }
                if *source == self.source && bytes.len() == buf.len())
        });
        match answer {
            Some(Event::Random { bytes, .. }) => buf.copy_from_slice(&bytes),
            // Diverged: zeros, the same on every replay.
            _ => buf.fill(0),
        }
    }
}

impl TryRng for TapedRandom {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let mut bytes = [0; 4];
        self.fill(&mut bytes);
        Ok(u32::from_le_bytes(bytes))
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut bytes = [0; 8];
        self.fill(&mut bytes);
        Ok(u64::from_le_bytes(bytes))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.fill(dst);
        Ok(())
    }
}
