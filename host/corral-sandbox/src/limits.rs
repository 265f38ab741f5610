//! Resource limits: what one call may consume, how a plugin's policy and a
//! call change that ([`effective`], the one rule every call path uses), and how
//! big the engine's instance pool is.
//!
//! [`Limits`] applies to every call (and to each plugin's `describe` at load);
//! there is no way to run guest code without them. [`PoolConfig`] sizes the
//! pooling instance allocator once per engine.

use std::time::Duration;

/// Per-call limits, modelled on wasmtime's `StoreLimitsBuilder`: every knob has a
/// unit and a default, and every call of every tool runs under all of them.
///
/// | knob | unit | default |
/// |---|---|---|
/// | [`fuel`](Self::fuel) | fuel units (about one per wasm instruction) | 1 000 000 000 |
/// | [`timeout_ms`](Self::timeout_ms) | milliseconds of wall-clock time | 10 000 |
/// | [`memory_bytes`](Self::memory_bytes) | bytes of linear memory per instance | 64 MiB |
/// | [`output_bytes`](Self::output_bytes) | bytes of the tool's result text | 1 MiB |
/// | [`stdio_bytes`](Self::stdio_bytes) | bytes kept of stdout and of stderr, each | 64 KiB |
/// | [`resources`](Self::resources) | host resources (streams, pollables, HTTP fields and requests) alive at once | 10 000 |
///
/// A plugin's `describe` at load runs under the same knobs with a shorter
/// deadline: [`Limits::DEFAULT_DESCRIBE_TIMEOUT_MS`].
///
/// A trivial call uses about 9 000 to 30 000 fuel; the default fuel lasts about
/// 170 ms of a tight loop in a release host, so the deadline rarely fires before
/// the fuel runs out for code spinning in wasm. Output past `stdio_bytes` is discarded (the guest does not notice) and
/// the truncation is logged.
///
/// Serializes as an object of its knobs under their field names
/// (`{"fuel", "timeout_ms", "memory_bytes", ...}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Limits {
    /// Fuel budget of one call. Exhausting it is [`CallError::OutOfFuel`](crate::CallError::OutOfFuel).
    pub fuel: u64,
    /// Wall-clock deadline of one call in milliseconds, enforced both by epoch
    /// interruption (guest code spinning in wasm) and by an async timeout (a guest
    /// blocked in a host call such as a WASI sleep). Exceeding it is
    /// [`CallError::Timeout`](crate::CallError::Timeout).
    pub timeout_ms: u64,
    /// Cap on the linear memory of one instance, in bytes. A `memory.grow` past it
    /// fails inside the guest; if the guest then traps, the call is
    /// [`CallError::MemoryLimit`](crate::CallError::MemoryLimit). Must not exceed
    /// [`PoolConfig::max_memory_bytes`].
    pub memory_bytes: usize,
    /// Cap on the result text, in bytes. A larger result is
    /// [`CallError::OutputTooLarge`](crate::CallError::OutputTooLarge).
    pub output_bytes: usize,
    /// How many bytes of the guest's stdout, and separately of its stderr, are kept
    /// for the log. The rest is discarded.
    pub stdio_bytes: usize,
    /// How many host resources (WASI streams and pollables, `wasi:http`
    /// fields, requests and responses) one call may hold at once. Each costs
    /// host memory outside the guest's memory cap; past the cap, creating one
    /// more fails inside the guest.
    pub resources: usize,
}

impl Limits {
    /// Default fuel per call: 1e9 units.
    pub const DEFAULT_FUEL: u64 = 1_000_000_000;
    /// Default wall-clock deadline: 10 000 ms.
    pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
    /// Default memory cap: 64 MiB.
    pub const DEFAULT_MEMORY_BYTES: usize = 64 << 20;
    /// Default result cap: 1 MiB.
    pub const DEFAULT_OUTPUT_BYTES: usize = 1 << 20;
    /// Default stdout/stderr capture: 64 KiB each.
    pub const DEFAULT_STDIO_BYTES: usize = 64 << 10;
    /// Default number of host resources one call may hold: 10 000.
    pub const DEFAULT_RESOURCES: usize = 10_000;
    /// Default wall-clock deadline of a plugin's `describe` at load: 2 000 ms,
    /// much shorter than a call's, since `describe` only returns constants.
    /// A plugin's policy can change it (`[describe] timeout_ms`).
    pub const DEFAULT_DESCRIBE_TIMEOUT_MS: u64 = 2_000;

    /// The default ceiling of what a plugin's policy may grant
    /// (`corral::HostBuilder::max_limits`): 1e10
    /// fuel, 300 000 ms, 1 GiB of memory (capped by the pool), 16 MiB of
    /// output, 1 MiB of stdio, 100 000 resources.
    pub const DEFAULT_MAX: Limits = Limits {
        fuel: 10_000_000_000,
        timeout_ms: 300_000,
        memory_bytes: 1 << 30,
        output_bytes: 16 << 20,
        stdio_bytes: 1 << 20,
        resources: 100_000,
    };

    /// The smaller of each knob of `self` and `other`: what a per-call
    /// override does to the plugin's limits (it can tighten, never loosen).
    #[must_use]
    pub fn min(&self, other: &Limits) -> Limits {
        Limits {
            fuel: self.fuel.min(other.fuel),
            timeout_ms: self.timeout_ms.min(other.timeout_ms),
            memory_bytes: self.memory_bytes.min(other.memory_bytes),
            output_bytes: self.output_bytes.min(other.output_bytes),
            stdio_bytes: self.stdio_bytes.min(other.stdio_bytes),
            resources: self.resources.min(other.resources),
        }
    }

    /// These limits with the fuel budget set to `fuel` units.
    #[must_use]
    pub fn with_fuel(mut self, fuel: u64) -> Self {
        self.fuel = fuel;
        self
    }

    /// These limits with the wall-clock deadline set to `timeout_ms`
    /// milliseconds.
    #[must_use]
    pub fn with_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeout_ms = timeout_ms;
        self
    }

    /// These limits with the memory cap set to `memory_bytes` bytes.
    #[must_use]
    pub fn with_memory_bytes(mut self, memory_bytes: usize) -> Self {
        self.memory_bytes = memory_bytes;
        self
    }

    /// These limits with the result cap set to `output_bytes` bytes.
    #[must_use]
    pub fn with_output_bytes(mut self, output_bytes: usize) -> Self {
        self.output_bytes = output_bytes;
        self
    }

    /// These limits with at most `resources` host resources per call.
    #[must_use]
    pub fn with_resources(mut self, resources: usize) -> Self {
        self.resources = resources;
        self
    }

    /// The default limits of a plugin's `describe`: [`Limits::default`] with
    /// a deadline of [`Limits::DEFAULT_DESCRIBE_TIMEOUT_MS`].
    pub fn describe_default() -> Self {
        Self::default().with_timeout_ms(Self::DEFAULT_DESCRIBE_TIMEOUT_MS)
    }

    /// These limits with `stdio_bytes` bytes kept of stdout and of stderr.
    #[must_use]
    pub fn with_stdio_bytes(mut self, stdio_bytes: usize) -> Self {
        self.stdio_bytes = stdio_bytes;
        self
    }

    /// Every knob at its largest value: the identity of [`Limits::min`], for a
    /// per-call override that tightens only one knob.
    pub const LOOSEST: Limits = Limits {
        fuel: u64::MAX,
        timeout_ms: u64::MAX,
        memory_bytes: usize::MAX,
        output_bytes: usize::MAX,
        stdio_bytes: usize::MAX,
        resources: usize::MAX,
    };

    /// The wall-clock deadline as a [`Duration`].
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// Bytes of host memory one transfer across the component boundary may
    /// make the host allocate in a call of a component of another world
    /// (wasmtime's "hostcall fuel", `Store::set_hostcall_fuel`; other plugins
    /// keep wasmtime's 128 MiB): [`Self::TRANSFER_PER_OUTPUT_BYTE`] times
    /// `output_bytes`, at least [`Self::MIN_TRANSFER_BYTES`]; 32 MiB with the
    /// default output cap. It bounds what lifting a component's result costs
    /// the host: wasmtime charges a list 40 bytes per element (its `Val`),
    /// so without it a 60 MiB `list<u8>` result would take 2.4 GiB of host
    /// memory before the output cap could refuse it. 32 bytes per output
    /// byte covers a result whose JSON fits the output cap in the usual
    /// shapes (base64 `list<u8>` costs 30 per byte of JSON); a result that
    /// costs more per byte of its JSON (a list of records whose fields are
    /// mostly `none`, which JSON leaves out) can be refused below the output
    /// cap, with an error that says so. The JSON text itself is then written
    /// under the output cap, never longer. Derived, not a knob: raise
    /// `output_bytes` to raise it.
    pub fn transfer_bytes(&self) -> usize {
        self.output_bytes
            .saturating_mul(Self::TRANSFER_PER_OUTPUT_BYTE)
            .max(Self::MIN_TRANSFER_BYTES)
    }

    /// See [`Self::transfer_bytes`]: host bytes allowed per output byte.
    pub const TRANSFER_PER_OUTPUT_BYTE: usize = 32;

    /// See [`Self::transfer_bytes`]: its floor, 4 MiB.
    pub const MIN_TRANSFER_BYTES: usize = 4 << 20;

    /// The first knob set to zero, which would fail every call: `fuel`,
    /// `timeout_ms`, `memory_bytes` or `output_bytes` (the stdio capture and
    /// the resource count may be zero).
    pub fn zero_knob(&self) -> Option<&'static str> {
        [
            ("fuel", self.fuel == 0),
            ("timeout_ms", self.timeout_ms == 0),
            ("memory_bytes", self.memory_bytes == 0),
            ("output_bytes", self.output_bytes == 0),
        ]
        .into_iter()
        .find_map(|(name, zero)| zero.then_some(name))
    }

    /// Checks the limits against the pool they will run in.
    ///
    /// # Errors
    /// [`LimitsError`] when a limit is zero or the memory cap exceeds the pool's
    /// slot size.
    pub fn validate(&self, pool: &PoolConfig) -> Result<(), LimitsError> {
        if let Some(name) = self.zero_knob() {
            return Err(LimitsError::Zero { name });
        }
        if self.memory_bytes > pool.max_memory_bytes {
            return Err(LimitsError::MemoryAbovePool {
                requested: self.memory_bytes,
                pool: pool.max_memory_bytes,
            });
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            fuel: Self::DEFAULT_FUEL,
            timeout_ms: Self::DEFAULT_TIMEOUT_MS,
            memory_bytes: Self::DEFAULT_MEMORY_BYTES,
            output_bytes: Self::DEFAULT_OUTPUT_BYTES,
            stdio_bytes: Self::DEFAULT_STDIO_BYTES,
            resources: Self::DEFAULT_RESOURCES,
        }
    }
}

/// Limit overrides of one plugin, from its policy's `[limits]`; `None` keeps
/// the host's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct LimitOverrides {
    /// Fuel units per call.
    pub fuel: Option<u64>,
    /// Wall-clock deadline per call, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Linear-memory cap per instance, in bytes.
    pub memory_bytes: Option<usize>,
    /// Result-text cap, in bytes.
    pub output_bytes: Option<usize>,
}

impl LimitOverrides {
    /// `base` with these overrides applied.
    pub fn apply(&self, base: Limits) -> Limits {
        Limits {
            fuel: self.fuel.unwrap_or(base.fuel),
            timeout_ms: self.timeout_ms.unwrap_or(base.timeout_ms),
            memory_bytes: self.memory_bytes.unwrap_or(base.memory_bytes),
            output_bytes: self.output_bytes.unwrap_or(base.output_bytes),
            ..base
        }
    }

    /// The first override above `max`, as `(knob, value, maximum)`, with
    /// memory in MiB as the policy file writes it.
    pub fn above(&self, max: &Limits) -> Option<(&'static str, u64, u64)> {
        let checks = [
            ("fuel", self.fuel, max.fuel),
            ("timeout_ms", self.timeout_ms, max.timeout_ms),
            (
                "memory_mib",
                self.memory_bytes.map(|b| (b >> 20) as u64),
                (max.memory_bytes >> 20) as u64,
            ),
            (
                "output_bytes",
                self.output_bytes.map(|b| b as u64),
                max.output_bytes as u64,
            ),
        ];
        checks
            .into_iter()
            .find_map(|(name, value, max)| value.filter(|v| *v > max).map(|v| (name, v, max)))
    }
}

/// The limits one call of a plugin's tool runs under. This is the only place
/// the rule is written; the direct call, MCP, plan steps, pipeline steps and
/// retries all get their limits here.
///
/// Precedence, lowest first:
/// 1. `host`: the host's defaults (`corral::HostBuilder::limits`).
/// 2. `policy`: the plugin's policy file (`[limits]`); each knob it sets
///    replaces the host's default. The loader has already refused a policy
///    above the host's maximums
///    (`corral::HostBuilder::max_limits`).
/// 3. `call`: the per-call override
///    (`corral::CallOptions::limits`), which can only
///    tighten: each knob is the smaller of the override and step 2. A plan
///    uses it to cut a step's deadline to what is left of the plan's.
///
/// To raise a limit, change the host's defaults or the plugin's policy: a
/// caller (a model, an MCP client, a plan) can never loosen what the operator
/// set.
pub fn effective(host: &Limits, policy: &LimitOverrides, call: Option<&Limits>) -> Limits {
    tighten(&policy.apply(*host), call)
}

/// Step 3 of [`effective`] on its own: `plugin` (steps 1 and 2, which a
/// catalog computes once per tool) tightened by a per-call override, knob by
/// knob. It can never loosen.
pub fn tighten(plugin: &Limits, call: Option<&Limits>) -> Limits {
    match call {
        Some(call) => plugin.min(call),
        None => *plugin,
    }
}

/// A set of [`Limits`] that cannot be enforced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitsError {
    /// A limit of zero would fail every call.
    #[error("limit `{name}` is 0, which would fail every call; use a positive value")]
    Zero {
        /// Which field.
        name: &'static str,
    },
    /// The per-call memory cap is larger than a pool slot.
    #[error(
        "memory limit of {requested} bytes exceeds the instance pool's slot size of {pool} bytes; \
         lower the memory limit or raise PoolConfig::max_memory_bytes"
    )]
    MemoryAbovePool {
        /// The requested cap in bytes.
        requested: usize,
        /// The pool's slot size in bytes.
        pool: usize,
    },
}

/// Sizing of the pooling instance allocator, fixed when the engine is created.
///
/// corral uses wasmtime's pooling allocator with `*_keep_resident` set and the
/// Linux `PAGEMAP_SCAN` reset (kernel 6.7 or later), because it instantiates on
/// every call (see the README's design decisions). When a call ends, wasmtime
/// finds the pages of each linear memory the call wrote and restores just
/// those, up to `keep_resident_bytes` of them, with `memset` and a copy of the
/// data segment; anything beyond goes back to the kernel with `madvise`. The
/// reset so costs what the guest dirtied, not the size of the resident region,
/// and no system call at all when the guest dirties less than
/// `keep_resident_bytes`. On older kernels wasmtime resets the first
/// `keep_resident_bytes` of each memory with `memset` and the rest with
/// `madvise`.
///
/// The default is 4 MiB. Against 64 KiB (both with `PAGEMAP_SCAN`), the
/// bundled JavaScript sample's calls took about 30 % less time and 8
/// concurrent callers of a Rust tool made about 40 % more calls; 16 and 64 MiB
/// were no faster for the Python and JavaScript samples (BENCHMARKS.md,
/// "Concurrent callers and `keep_resident_bytes`"). The price is reserved
/// virtual address space per slot, and resident memory of up to
/// `keep_resident_bytes` per memory slot a call has used (the pages guests
/// actually wrote, not the whole amount).
///
/// | knob | unit | default |
/// |---|---|---|
/// | [`max_concurrent_instances`](Self::max_concurrent_instances) | component instances alive at once | 64 |
/// | [`max_memory_bytes`](Self::max_memory_bytes) | bytes, the largest memory any call may be granted | 1 GiB |
/// | [`keep_resident_bytes`](Self::keep_resident_bytes) | bytes of each memory, table and stack slot kept mapped and reset in place between uses | 4 MiB |
/// | [`prepared_per_plugin`](Self::prepared_per_plugin) | instances made ahead of calls, per plugin called recently | 2 |
/// | [`prepared_total`](Self::prepared_total) | instances made ahead of calls, in all (at most half the slots) | 16 |
/// | [`prepared_idle_ms`](Self::prepared_idle_ms) | ms an unused instance made ahead is kept | 60 000 |
///
/// Calls beyond `max_concurrent_instances` wait in line (first come, first
/// served) for a free slot rather than fail. The wait does not count against
/// the call's [`Limits::timeout_ms`], which budgets the guest's own run from
/// instantiation to teardown on every path, so a call's limits mean the same
/// under load as when idle; a caller bounds the whole wait by dropping the
/// call's future (an MCP client's cancellation does), which leaves the line.
/// An I/O-bound call holds its slot while it waits on the network: the
/// report in BENCHMARKS.md has 1 000 `fetch_url` calls in flight against a
/// server that answers after 1 s, at 64 slots and at 1 024, with peak RSS.
/// Each slot reserves address space for its memories (about 16 GiB: 4
/// memories of wasmtime's 4 GiB reservation), not resident memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolConfig {
    /// Component instances that may be alive at once, i.e. concurrent calls.
    pub max_concurrent_instances: u32,
    /// Slot size for linear memories, in bytes: the upper bound for any
    /// [`Limits::memory_bytes`].
    pub max_memory_bytes: usize,
    /// Bytes of each linear memory, table and async stack slot that stay resident
    /// between instances: written pages up to this many are reset in place
    /// (`memset`, data-segment copy) instead of returned with `madvise`.
    pub keep_resident_bytes: usize,
    /// Instances made ahead of calls, per plugin called recently
    /// (`sandbox::prepared`); 0 turns making them ahead off.
    pub prepared_per_plugin: u32,
    /// Instances made ahead of calls, over every plugin; never more than
    /// half of [`max_concurrent_instances`](Self::max_concurrent_instances).
    pub prepared_total: u32,
    /// Milliseconds an instance made ahead waits unused before it is
    /// dropped (and a plugin stops being "called recently").
    pub prepared_idle_ms: u64,
}

impl PoolConfig {
    /// This pool with room for `instances` component instances at once.
    #[must_use]
    pub fn with_max_concurrent_instances(mut self, instances: u32) -> Self {
        self.max_concurrent_instances = instances;
        self
    }

    /// This pool with linear-memory slots of `bytes` bytes.
    #[must_use]
    pub fn with_max_memory_bytes(mut self, bytes: usize) -> Self {
        self.max_memory_bytes = bytes;
        self
    }

    /// This pool making up to `per_plugin` instances ahead of calls per
    /// plugin called recently and `total` in all; `(0, 0)` turns it off.
    #[must_use]
    pub fn with_prepared(mut self, per_plugin: u32, total: u32) -> Self {
        self.prepared_per_plugin = per_plugin;
        self.prepared_total = total;
        self
    }

    /// This pool dropping an instance made ahead after `ms` milliseconds
    /// unused.
    #[must_use]
    pub fn with_prepared_idle_ms(mut self, ms: u64) -> Self {
        self.prepared_idle_ms = ms;
        self
    }

    /// This pool keeping `bytes` bytes of each slot resident between uses.
    #[must_use]
    pub fn with_keep_resident_bytes(mut self, bytes: usize) -> Self {
        self.keep_resident_bytes = bytes;
        self
    }
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            max_concurrent_instances: 64,
            max_memory_bytes: 1 << 30,
            keep_resident_bytes: 4 << 20,
            prepared_per_plugin: 2,
            prepared_total: 16,
            prepared_idle_ms: 60_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_override_tightens_but_never_loosens() {
        let host = Limits::default();
        let policy = LimitOverrides {
            fuel: Some(50_000),
            timeout_ms: Some(20_000),
            ..LimitOverrides::default()
        };
        let plugin = effective(&host, &policy, None);
        assert_eq!(plugin.fuel, 50_000);
        assert_eq!(plugin.timeout_ms, 20_000);
        assert_eq!(plugin.memory_bytes, host.memory_bytes);

        // A looser override changes nothing; a tighter one wins per knob.
        let loose = Limits::DEFAULT_MAX;
        assert_eq!(effective(&host, &policy, Some(&loose)), plugin);
        let tight = Limits::default().with_timeout_ms(5);
        let both = effective(&host, &policy, Some(&tight));
        assert_eq!((both.fuel, both.timeout_ms), (50_000, 5));
    }
}
