// The tool-name rule of the corral host, for the JavaScript helper.
//
// The `corral-names` crate is the rule's one source; the host's tests run
// `nameProblem` on the same names as the crate's `check_name` and fail when the
// two disagree. This module imports nothing from the component's world, so
// those tests can run it on a plain Node.

export const NAME = /^[A-Za-z0-9_]{1,64}$/;
export const RESERVED = ['execute_tool_plan', 'tool_search', 'execute_code'];

/** What is wrong with `name` as a tool name, or `null` when it is valid. */
export function nameProblem(name) {
  if (typeof name !== 'string' || !NAME.test(name)) {
    return `tool name '${name}' is invalid: use 1 to 64 of [A-Za-z0-9_]`;
  }
  if (RESERVED.includes(name)) {
    return `tool name '${name}' is reserved for a corral built-in tool; rename it`;
  }
  return null;
}
