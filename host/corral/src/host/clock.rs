//! The host's clock knob ([`HostBuilder::clock`]).

use super::HostBuilder;
use crate::call::resilience::clock::Clock;

impl HostBuilder {
    /// The clock the result cache reads for its TTL (`[resilience] cache`):
    /// [`Clock::system`] by default. A [`Clock::manual`] one (keep a clone)
    /// lets a test or a simulation move time with [`Clock::advance`]
    /// instead of sleeping it out.
    #[must_use]
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }
}
