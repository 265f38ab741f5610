#!/usr/bin/env bash
# The reliability campaigns under load (issue 29), at full size: each prints
# its figures and ends in a one-line verdict (`... : ok` or `... : FAILED`,
# exit status 1). Not part of .ci/run, which runs CI-sized versions as tests
# (tests/all/campaigns.rs); the results go into BENCHMARKS.md, "Reliability".
#
#   scripts/load.sh                load, reload and crash
#   scripts/load.sh load [CALLS]   mixed hostile load: CALLS calls (default
#                                  10 000) through the library and again over
#                                  MCP streamable HTTP, 64 in flight, 10 %
#                                  hostile; benign latency beside a run with
#                                  no hostile calls; RSS after warm-up and at
#                                  the end
#   scripts/load.sh reload [CALLS] reload under load: CALLS calls (default
#                                  5 000), one every 2 ms, while the plugin
#                                  directory changes every 100 ms
#   scripts/load.sh crash [KILLS]  crash safety: KILLS SIGKILLs (default 100)
#                                  of a writer of the audit log and the
#                                  standing approvals
#   scripts/load.sh soak [SECONDS] soak: MCP HTTP at 100 calls/s for SECONDS
#                                  (default 1 800) and a short-lived session
#                                  every second, the server sampled every
#                                  10 s (RSS, fds, threads, instances in use,
#                                  sessions' listeners); not part of the
#                                  default run
#
# Source: host/corral-cli/benches/campaign/ and tests/support/src/load/.
# Release build (about 6 minutes the first time). Run it on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --locked -p corral-cli --bench campaign -- "$@"
