//! The wasmtime engine every plugin runs on: component model, fuel metering,
//! epoch interruption with a background ticker, the pooling allocator, and
//! deterministic floats (canonical NaNs, deterministic relaxed SIMD) so that
//! a recorded run replays the same on any machine.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::limits::PoolConfig;

/// How often the ticker advances the engine's epoch. A deadline is rounded up
/// to whole ticks, so a call overruns its timeout by at most one tick.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Instances of code mode's runner that may be alive at once: 4, or the
/// pool's [`PoolConfig::max_concurrent_instances`] plugin instances if that
/// is fewer ([`Engine::script_instances`]). The pool holds them beside its
/// plugin instances, so a script waiting for its tool calls never holds a
/// slot those calls need; one more script waits for a free one.
pub const SCRIPT_INSTANCES: u32 = 4;

/// The runner slots of a pool: [`SCRIPT_INSTANCES`], never more than its
/// plugin slots (at least 1). A pool of one call at a time then reserves 2
/// slots' address space (about 32 GiB), not 5: small enough for tools that
/// cap it, such as valgrind (`scripts/mcp-server-cpu.py --callgrind`).
fn script_slots(pool: &PoolConfig) -> u32 {
    SCRIPT_INSTANCES.min(pool.max_concurrent_instances.max(1))
}

/// A configured wasmtime engine plus the thread that drives its epoch.
///
/// Cloning is cheap and shares both; the ticker stops when the last clone is
/// dropped.
#[derive(Clone)]
pub struct Engine {
    inner: wasmtime::Engine,
    pool: PoolConfig,
    _ticker: Arc<Ticker>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("pool", &self.pool).finish()
    }
}

struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Engine {
    /// Creates an engine with fuel, epochs and a pooling allocator sized by
    /// `pool`, plus [`Engine::script_instances`] slots for code mode's
    /// runner.
    ///
    /// # Errors
    /// When wasmtime rejects the configuration, for example when the machine
    /// cannot reserve the pool's address space (`ulimit -v`).
    pub fn new(pool: PoolConfig) -> Result<Self, wasmtime::Error> {
        Self::with_floats(pool, true)
    }

    /// [`Engine::new`], with deterministic floats on or off: off only to
    /// measure what they cost (BENCHMARKS.md); a host always has them on.
    ///
    /// # Errors
    /// As [`Engine::new`].
    #[doc(hidden)]
    pub fn with_floats(pool: PoolConfig, deterministic: bool) -> Result<Self, wasmtime::Error> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.consume_fuel(true);
        config.epoch_interruption(true);
        config.parallel_compilation(true);
        // Replays are faithful on any machine (corral::replay): a NaN's bits
        // and relaxed SIMD's results are the same on every ISA. One engine
        // for calls, recording and replay, so one component cache; the cost
        // on float-heavy guests is in BENCHMARKS.md ("Record and replay").
        config.cranelift_nan_canonicalization(deterministic);
        config.relaxed_simd_deterministic(deterministic);

        let instances = pool.max_concurrent_instances + script_slots(&pool);
        let mut pooling = PoolingAllocationConfig::new();
        pooling.total_component_instances(instances);
        // Rust components have one core instance with one memory; componentize-py
        // and componentize-js ones have a dozen core instances and a few memories.
        pooling.max_core_instances_per_component(64);
        pooling.max_memories_per_component(8);
        pooling.max_tables_per_component(64);
        pooling.total_core_instances(instances * 16);
        pooling.total_memories(instances * 4);
        pooling.total_tables(instances * 16);
        pooling.total_stacks(instances);
        pooling.max_memory_size(pool.max_memory_bytes);
        pooling.max_component_instance_size(4 << 20);
        pooling.max_core_instance_size(4 << 20);
        pooling.linear_memory_keep_resident(pool.keep_resident_bytes);
        pooling.table_keep_resident(pool.keep_resident_bytes);
        pooling.async_stack_keep_resident(pool.keep_resident_bytes);
        // Reset only the pages a call dirtied (Linux 6.7+; older kernels fall back
        // to resetting the first `keep_resident_bytes`). Measured in BENCHMARKS.md:
        // the per-call reset then scales with the guest's working set.
        pooling.pagemap_scan(wasmtime::Enabled::Auto);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));

        let inner = wasmtime::Engine::new(&config)?;
        let stop = Arc::new(AtomicBool::new(false));
        let ticker_engine = inner.weak();
        let ticker_stop = stop.clone();
        std::thread::Builder::new()
            .name("corral-epoch".into())
            .spawn(move || {
                while !ticker_stop.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    match ticker_engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|err| wasmtime::Error::msg(format!("cannot start the epoch ticker: {err}")))?;
        Ok(Self {
            inner,
            pool,
            _ticker: Arc::new(Ticker { stop }),
        })
    }

    /// The underlying wasmtime engine.
    pub fn wasmtime(&self) -> &wasmtime::Engine {
        &self.inner
    }

    /// Instances of code mode's runner this engine's pool holds beside its
    /// plugin instances: [`SCRIPT_INSTANCES`] (4), fewer when the pool has
    /// fewer plugin slots.
    pub fn script_instances(&self) -> u32 {
        script_slots(&self.pool)
    }

    /// The pool this engine was created with.
    pub fn pool(&self) -> &PoolConfig {
        &self.pool
    }

    /// Epoch ticks that cover `timeout`, rounded up, at least one.
    pub fn deadline_ticks(timeout: Duration) -> u64 {
        let tick = EPOCH_TICK.as_micros().max(1);
        (timeout.as_micros().div_ceil(tick)).max(1) as u64
    }
}
