/* Build-time only: makes a Wizer snapshot reproducible.
 *
 * componentize-qjs pre-initialises the runner with Wizer, inside the Node
 * process that builds it, and the snapshot keeps what the runtime read during
 * initialisation: hash-map seeds from getrandom(2) and the wall and monotonic
 * clocks. scripts/build-runner.sh preloads this library (LD_PRELOAD) so that
 * those reads return fixed values and two builds from the same sources and
 * toolchain give the same bytes. Nothing that runs later depends on them:
 * the runner replaces Math.random and Date before each script. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

static unsigned long long state = 0x9E3779B97F4A7C15ULL;

/* A fixed xorshift stream instead of the kernel's entropy. */
ssize_t getrandom(void *buf, size_t len, unsigned int flags) {
  (void)flags;
  unsigned char *p = buf;
  for (size_t i = 0; i < len; i++) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    p[i] = (unsigned char)(state >> 24);
  }
  return (ssize_t)len;
}

/* Every clock stands still: 2023-11-14T22:13:20Z, and 1000 s of uptime. */
int clock_gettime(clockid_t id, struct timespec *ts) {
  static int (*real)(clockid_t, struct timespec *);
  switch (id) {
  case CLOCK_REALTIME:
  case CLOCK_REALTIME_COARSE:
    ts->tv_sec = 1700000000;
    ts->tv_nsec = 0;
    return 0;
  case CLOCK_MONOTONIC:
  case CLOCK_MONOTONIC_RAW:
  case CLOCK_MONOTONIC_COARSE:
  case CLOCK_BOOTTIME:
    ts->tv_sec = 1000;
    ts->tv_nsec = 0;
    return 0;
  default:
    if (!real) {
      real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    }
    return real(id, ts);
  }
}
