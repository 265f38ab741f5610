//! The two per-store meters that are not wasmtime built-ins: the call's
//! wall-clock [`Budget`], which a review of a guest's approval request pauses,
//! and the memory [`Limiter`], which remembers a refused growth so that the
//! trap that usually follows is reported as the memory cap.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::Poll;
use std::time::{Duration, Instant};

use wasmtime::{ResourceLimiter, StoreLimits};

/// The call's wall-clock budget, paused while a reviewer decides a
/// guest-requested approval (or, for code mode's runner, a script's tool
/// call): a person reading a prompt is not the guest using its time. Shared
/// by the epoch callback (inside the store) and the outer timeout (outside
/// it). Reviews may overlap (a script's `tools.parallel` wave): the budget
/// stands still from the first one's start to the last one's end.
#[derive(Debug)]
pub(crate) struct Budget {
    start: Instant,
    timeout: Duration,
    /// Total time spent in finished pauses, the start of the current one,
    /// and how many reviews are running.
    paused: Mutex<(Duration, Option<Instant>, usize)>,
}

impl Budget {
    pub(crate) fn new(timeout: Duration) -> Self {
        Self {
            start: Instant::now(),
            timeout,
            paused: Mutex::new((Duration::ZERO, None, 0)),
        }
    }

    pub(crate) fn pause(&self) {
        if let Ok(mut p) = self.paused.lock() {
            if p.2 == 0 {
                p.1 = Some(Instant::now());
            }
            p.2 += 1;
        }
    }

    pub(crate) fn resume(&self) {
        if let Ok(mut p) = self.paused.lock() {
            p.2 = p.2.saturating_sub(1);
            if p.2 == 0
                && let Some(since) = p.1.take()
            {
                p.0 += since.elapsed();
            }
        }
    }

    /// How much of the budget was used: wall time since the start, without
    /// the reviews (while one runs, what was used when it started).
    pub(crate) fn used(&self) -> Duration {
        let (paused, since) = self
            .paused
            .lock()
            .map(|p| (p.0, p.1))
            .unwrap_or((Duration::ZERO, None));
        let now = since.unwrap_or_else(Instant::now);
        now.saturating_duration_since(self.start)
            .saturating_sub(paused)
    }

    /// How much of the budget is left now. While a review is running this is
    /// what was left when it started: the deadline can only move later.
    pub(crate) fn left(&self) -> Duration {
        self.timeout.saturating_sub(self.used())
    }
}

/// Drives `work` (guest code in a store whose budget is `budget`) to its
/// end, or `None` once the budget is spent. The epoch stops guest code
/// spinning in wasm; the timer here stops a guest parked in an async host
/// call (a WASI sleep, a poll). Waking early is harmless: the budget is
/// read again and the timer armed again.
///
/// `work` is pinned where the caller keeps it (`std::pin::pin!`), so this
/// future holds a pointer to it: taken by value, the work (a guest call's
/// state, kilobytes) was copied into this future and again into its
/// caller's on every call (BENCHMARKS.md, issue 51).
pub(crate) async fn within<F: Future>(budget: &Budget, mut work: Pin<&mut F>) -> Option<F::Output> {
    // Most runs are done in their first poll: they never make the timer (a
    // runtime handle and a clock read).
    let first = std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await;
    match first {
        Poll::Ready(done) => Some(done),
        Poll::Pending => loop {
            let left = budget.left();
            if left.is_zero() {
                break None;
            }
            // `biased`: the work first.
            tokio::select! {
                biased;
                done = &mut work => break Some(done),
                () = tokio::time::sleep(left) => {}
            }
        },
    }
}

/// `StoreLimits` plus a record of whether a growth was refused, so that the
/// trap that usually follows can be reported as a memory-cap failure.
pub(crate) struct Limiter {
    pub(crate) inner: StoreLimits,
    pub(crate) memory_refused: bool,
    /// The largest size a linear memory was allowed to grow to, in bytes.
    pub(crate) memory_peak: u64,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.inner.memory_growing(current, desired, maximum)?;
        if allowed {
            self.memory_peak = self.memory_peak.max(desired as u64);
        } else {
            self.memory_refused = true;
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.inner.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_stops_the_clock() {
        let budget = Budget::new(Duration::from_secs(3600));
        budget.pause();
        let during = budget.left();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(budget.left(), during, "no time passes while paused");
        budget.resume();
        assert!(budget.left() <= during);
    }

    #[test]
    fn overlapping_pauses_keep_the_clock_stopped_until_the_last_ends() {
        let budget = Budget::new(Duration::from_secs(3600));
        budget.pause();
        budget.pause();
        let during = budget.left();
        budget.resume();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(budget.left(), during, "one review still runs");
        budget.resume();
        std::thread::sleep(Duration::from_millis(20));
        assert!(budget.left() < during, "the clock runs again");
    }
}
