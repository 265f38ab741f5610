//! In-process calls in a loop, for instruction counts
//! (`scripts/mcp-server-cpu.py --callgrind`): `Host::call` of `sha256` on a
//! host of one plugin slot with no instances made ahead, or the bare-wasmtime
//! floor call ([`Floor`]) of the same component on an engine of one plugin
//! slot (so that valgrind can reserve either pool). No timing: the caller
//! counts the whole process, once for a few calls and once for more, and
//! takes the difference. The bench re-executes itself as this loop when
//! [`ENV`] is set to `host,N,PATH` or `floor,N,PATH` (N calls of the
//! component at PATH).

use std::path::PathBuf;

use corral::{CallOptions, PoolConfig};
use corral_test_support::Floor;

use crate::calls::{SHA256, host_pool, runtime};

/// The environment variable that makes the bench this loop.
pub const ENV: &str = "CORRAL_BENCH_CALL_LOOP";

/// Whether `corral`'s `Host::call` (else the floor's) runs, how many
/// times, and the component's path; `None` when [`ENV`] is not set.
///
/// # Panics
/// When [`ENV`] is set but not `host,N,PATH` or `floor,N,PATH`.
pub fn requested() -> Option<(bool, usize, PathBuf)> {
    let value = std::env::var(ENV).ok()?;
    let mut parts = value.splitn(3, ',');
    let (Some(kind), Some(n), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("{ENV} must be host,N,PATH or floor,N,PATH, not {value:?}")
    };
    let n = n
        .parse()
        .unwrap_or_else(|_| panic!("{ENV}: {n:?} is not a number of calls"));
    match kind {
        "host" => Some((true, n, PathBuf::from(path))),
        "floor" => Some((false, n, PathBuf::from(path))),
        other => panic!("{ENV}: {other:?} is neither host nor floor"),
    }
}

/// Runs the loop: `n` calls of `sha256` of "abc", each checked to succeed.
pub fn run(corral: bool, n: usize, path: PathBuf) {
    let rt = runtime();
    let pool = PoolConfig::default()
        .with_max_concurrent_instances(1)
        .with_prepared(0, 0);
    let (tool, args) = SHA256;
    if corral {
        let (host, _dir) = host_pool(&rt, &[path], pool);
        rt.block_on(async {
            let options = CallOptions::default();
            for _ in 0..n {
                host.call(tool, args, &options).await.expect("call");
            }
        });
    } else {
        let engine = corral::Engine::new(pool).expect("engine");
        let floor = Floor::new(&engine, &path);
        rt.block_on(async {
            for _ in 0..n {
                assert!(floor.call(tool, args).await.contains("sha256"));
            }
        });
    }
}
