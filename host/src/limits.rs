//! Resource limits: what one call may consume, and how big the engine's instance
//! pool is.
//!
//! [`Limits`] applies to every call (and to each plugin's `describe` at load);
//! there is no way to run guest code without them. [`PoolConfig`] sizes the
//! pooling instance allocator once per [`Engine`](crate::engine::Engine).

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
///
/// A trivial call uses about 9 000 to 30 000 fuel; the default fuel lasts about
/// 170 ms of a tight loop in a release host, so the deadline rarely fires before
/// the fuel runs out for code spinning in wasm. Output past `stdio_bytes` is discarded (the guest does not notice) and
/// the truncation is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

    /// The default ceiling of what a plugin's policy may grant
    /// ([`HostBuilder::max_limits`](crate::HostBuilder::max_limits)): 1e10
    /// fuel, 300 000 ms, 1 GiB of memory (capped by the pool), 16 MiB of
    /// output, 1 MiB of stdio.
    pub const DEFAULT_MAX: Limits = Limits {
        fuel: 10_000_000_000,
        timeout_ms: 300_000,
        memory_bytes: 1 << 30,
        output_bytes: 16 << 20,
        stdio_bytes: 1 << 20,
    };

    /// The wall-clock deadline as a [`Duration`].
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// Checks the limits against the pool they will run in.
    ///
    /// # Errors
    /// [`LimitsError`] when a limit is zero or the memory cap exceeds the pool's
    /// slot size.
    pub fn validate(&self, pool: &PoolConfig) -> Result<(), LimitsError> {
        let zero = [
            ("fuel", self.fuel == 0),
            ("timeout_ms", self.timeout_ms == 0),
            ("memory_bytes", self.memory_bytes == 0),
            ("output_bytes", self.output_bytes == 0),
        ];
        if let Some((name, _)) = zero.iter().find(|(_, is_zero)| *is_zero) {
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
        }
    }
}

/// A set of [`Limits`] that cannot be enforced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
/// corral uses wasmtime's pooling allocator with `*_keep_resident` set, because
/// it instantiates on every call (see the README's design decisions). The
/// `call` benchmark measured a fresh instance plus a trivial call of a sample
/// tool at 57.5 µs with no resident bytes, 48.9 µs with 64 KiB and 74.9 µs with
/// 1 MiB (the `memset` then costs more than the page faults it saves). The
/// price is reserved virtual address space per slot and up to `keep_resident`
/// bytes of resident memory per used slot.
///
/// | knob | unit | default |
/// |---|---|---|
/// | [`max_concurrent_instances`](Self::max_concurrent_instances) | component instances alive at once | 64 |
/// | [`max_memory_bytes`](Self::max_memory_bytes) | bytes, the largest memory any call may be granted | 1 GiB |
/// | [`keep_resident_bytes`](Self::keep_resident_bytes) | bytes of each memory, table and stack slot kept mapped and zeroed by `memset` between uses | 64 KiB |
///
/// Calls beyond `max_concurrent_instances` wait for a free slot rather than fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Component instances that may be alive at once, i.e. concurrent calls.
    pub max_concurrent_instances: u32,
    /// Slot size for linear memories, in bytes: the upper bound for any
    /// [`Limits::memory_bytes`].
    pub max_memory_bytes: usize,
    /// Bytes of each linear memory, table and async stack slot that stay resident
    /// between instances (reset with `memset` instead of `madvise`).
    pub keep_resident_bytes: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            max_concurrent_instances: 64,
            max_memory_bytes: 1 << 30,
            keep_resident_bytes: 64 << 10,
        }
    }
}
