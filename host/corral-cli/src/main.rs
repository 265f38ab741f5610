//! The `corral` command line: list, describe and call sandboxed tools.
//!
//! Exit codes: 0 success; 1 the tool failed (invalid arguments, a tool error, a
//! limit, a trap); 2 corral failed (bad usage, unreadable plugin directory,
//! unknown tool, I/O).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
