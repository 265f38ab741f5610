// Write corral tools in JavaScript.
//
// A tool is a function over one arguments object, described by `defineTool`;
// `plugin` turns a list of tools into the `tool` interface of the
// `corral:tool/plugin@0.1.0` world (wit/v0.1.0/corral-tool.wit), with `describe` and
// `call` generated:
//
//   import { defineTool, plugin, InvalidArguments } from 'corral-tool';
//
//   const shout = defineTool({
//     name: 'shout',
//     description: 'Upper-case a text.',
//     parameters: { text: { type: 'string', description: 'The text.' } },
//     idempotent: true,
//   }, ({ text }) => ({ text: text.toUpperCase() }));
//
//   export const tool = plugin(shout);
//
// Build: bundle the module into one file (esbuild, with `corral:*` and `wasi:*`
// external), then make the component with one of two engines:
// - QuickJS, the default: `componentize-qjs --sync --wit wit/v0.1.0 -n plugin
//   --js bundle.js -o x.wasm`. A 2 MB component whose interpreter state is
//   snapshotted at build time; a call costs about a quarter of SpiderMonkey's
//   (BENCHMARKS.md). Handlers must be synchronous, and there is no `fetch()`.
// - SpiderMonkey: `componentize-js --wit wit/v0.1.0 -n plugin -d fetch-event
//   -o x.wasm bundle.js`. For async handlers and `fetch()`, which works for the
//   hosts the plugin's policy allows.
// The same module builds with either; an async handler fails the QuickJS build
// with a message saying so.
//
// What `plugin` does for you:
// - `describe` lists every tool with its JSON Schema (built from `parameters`)
//   and metadata, with the defaults of the Rust SDK.
// - `call` dispatches by name, parses the arguments, checks required and
//   unknown fields (the host has validated them against the schema already;
//   this guards the tool against a host that did not), fills in defaults,
//   runs the function (awaiting it when it returns a promise) and returns its
//   result as JSON text.
// - `InvalidArguments` and `ExecutionFailed` thrown by the function become the
//   contract's `tool-error` cases. Anything else thrown is a bug: it propagates
//   and the guest traps, which the host reports as a crash of the tool and
//   survives.

import {
  log as hostLog,
  progress as hostProgress,
  requestApproval as hostRequestApproval,
} from 'corral:tool/host@0.1.0';
import { nameProblem } from './names.js';

const LATENCY = ['fast', 'medium', 'slow'];
const RETURN_BEHAVIOR = { to_llm: 'to-llm', immediate: 'immediate' };

// QuickJS built with `componentize-qjs --sync` has no event loop (and no
// `fetch()`): an export must return its value, not a promise.
const SYNC_ONLY = typeof globalThis.fetch !== 'function';

/** Base class of the errors a tool reports through the contract. */
export class ToolError extends Error {
  /**
   * @param {string} message what went wrong and how to fix it; shown to the model
   * @param {number} [code] a tool-defined code (a 32-bit signed integer)
   */
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

/** The arguments cannot be used; the caller should fix them (WIT `invalid-arguments`). */
export class InvalidArguments extends ToolError {}

/** The work failed (WIT `execution-failed`). */
export class ExecutionFailed extends ToolError {}

/**
 * Describes one tool.
 *
 * `spec` fields (only `name`, `description` and `parameters` are required):
 * - `name`: `[A-Za-z0-9_]{1,64}`, unique across all plugins of a host, and not
 *   `execute_tool_plan`, `tool_search` or `execute_code` (reserved for corral's
 *   built-in tools).
 * - `description`: what the tool does, for the model.
 * - `parameters`: either a JSON Schema of the arguments object
 *   (`{type: 'object', ...}`), or a map of field name to the field's schema;
 *   a field is required unless it has `default` or `optional: true`.
 * - `category` (default `''`), `keywords` (`[]`), `version` (`''`),
 *   `idempotent` (`false`), `parallelizable` (`true`), `latency`
 *   (`'fast'`, or `'medium'`, `'slow'`), `requiresApproval` (`false`),
 *   `returnBehavior` (`'to_llm'`, or `'immediate'`).
 *
 * `handler(args, context)` gets the arguments object (defaults filled in) and
 * the call context as a plain object of the keys the host let through; it
 * returns any JSON-serializable value (or, with SpiderMonkey, a promise of one).
 *
 * Throws a `TypeError` naming the tool for an invalid name, a missing
 * description, an unknown option, or an `async` handler in an engine without
 * an event loop (QuickJS), when the module is first evaluated (that is, at
 * build time).
 */
export function defineTool(spec, handler) {
  const known = new Set(['name', 'description', 'parameters', 'category', 'keywords', 'version',
    'idempotent', 'parallelizable', 'latency', 'requiresApproval', 'returnBehavior']);
  for (const key of Object.keys(spec)) {
    if (!known.has(key)) throw new TypeError(`tool '${spec.name}': unknown option '${key}'; known: ${[...known].join(', ')}`);
  }
  const problem = nameProblem(spec.name);
  if (problem !== null) throw new TypeError(problem);
  if (typeof spec.description !== 'string' || spec.description.trim() === '') {
    throw new TypeError(`tool '${spec.name}' needs a description: the model reads it to decide when to call the tool`);
  }
  if (typeof handler !== 'function') throw new TypeError(`tool '${spec.name}': the handler must be a function`);
  if (SYNC_ONLY && handler.constructor.name === 'AsyncFunction') {
    throw new TypeError(`tool '${spec.name}': its handler is async, which the QuickJS engine cannot run; make it synchronous, or build with the SpiderMonkey engine (componentize-js), which has an event loop and fetch()`);
  }
  const latency = spec.latency ?? 'fast';
  if (!LATENCY.includes(latency)) throw new TypeError(`tool '${spec.name}': latency must be one of ${LATENCY.join(', ')}`);
  const returnBehavior = RETURN_BEHAVIOR[spec.returnBehavior ?? 'to_llm'];
  if (!returnBehavior) throw new TypeError(`tool '${spec.name}': returnBehavior must be 'to_llm' or 'immediate'`);
  const schema = objectSchema(spec.name, spec.parameters ?? {});
  return {
    name: spec.name,
    handler,
    schema,
    spec: {
      name: spec.name,
      description: spec.description,
      parameters: JSON.stringify(schema),
      metadata: {
        category: spec.category ?? '',
        keywords: spec.keywords ?? [],
        version: spec.version ?? '',
        idempotent: spec.idempotent ?? false,
        parallelizable: spec.parallelizable ?? true,
        latency,
        requiresApproval: spec.requiresApproval ?? false,
        returnBehavior,
      },
    },
  };
}

function objectSchema(tool, parameters) {
  if (parameters.type === 'object') return parameters;
  const properties = {};
  const required = [];
  for (const [field, fieldSchema] of Object.entries(parameters)) {
    const { optional, ...rest } = fieldSchema;
    properties[field] = rest;
    if (!optional && !('default' in rest)) required.push(field);
  }
  return { type: 'object', properties, required, additionalProperties: false };
}

/**
 * The `tool` interface export for these tools: `export const tool = plugin(a, b)`.
 * Throws a `TypeError` at build time if two tools share a name.
 */
export function plugin(...tools) {
  const byName = new Map();
  for (const t of tools) {
    if (byName.has(t.name)) throw new TypeError(`two tools are named '${t.name}'; names must be unique`);
    byName.set(t.name, t);
  }
  return {
    describe() {
      return tools.map((t) => t.spec);
    },
    // Synchronous unless the handler returns a promise: QuickJS exports
    // must return a value, SpiderMonkey's may return a promise.
    call(name, argumentsJson, context) {
      const t = byName.get(name);
      if (!t) {
        throw witError(new InvalidArguments(`unknown tool '${name}'; this plugin has: ${[...byName.keys()].join(', ')}`));
      }
      let result;
      try {
        result = t.handler(decodeArguments(t, argumentsJson), Object.fromEntries(context));
      } catch (e) {
        throw toWit(e);
      }
      if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
        if (SYNC_ONLY) {
          throw toWit(new TypeError(`tool '${name}' returned a promise, which the QuickJS engine cannot await; return the value, or build with the SpiderMonkey engine (componentize-js)`));
        }
        return result.then(encodeResult, (e) => { throw toWit(e); });
      }
      return encodeResult(result);
    },
  };
}

function decodeArguments(t, argumentsJson) {
  let args;
  try {
    args = JSON.parse(argumentsJson);
  } catch (e) {
    throw new InvalidArguments(`arguments are not valid JSON: ${e.message}`);
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    throw new InvalidArguments('arguments must be a JSON object');
  }
  const { properties = {}, required = [] } = t.schema;
  for (const field of required) {
    if (!(field in args)) throw new InvalidArguments(`missing argument '${field}'`);
  }
  if (t.schema.additionalProperties === false) {
    for (const field of Object.keys(args)) {
      if (!(field in properties)) throw new InvalidArguments(`unknown argument '${field}'; expected one of: ${Object.keys(properties).join(', ')}`);
    }
  }
  for (const [field, fieldSchema] of Object.entries(properties)) {
    // A copy, so a handler that changes it cannot change the next default
    // (JSON: QuickJS has no structuredClone; defaults are JSON anyway).
    if (!(field in args) && 'default' in fieldSchema) args[field] = JSON.parse(JSON.stringify(fieldSchema.default));
  }
  return args;
}

// A tool that returns nothing succeeds with the empty string
// (AgentEnsemble's result contract), not "null".
function encodeResult(result) {
  return result === undefined ? '' : JSON.stringify(result);
}

// The contract's `tool-error` for the SDK's errors; anything else is a bug
// and propagates, so the guest traps. QuickJS reports only an exception's
// message, so its name goes into the message.
function toWit(e) {
  if (e instanceof ToolError) return witError(e);
  if (SYNC_ONLY && e instanceof Error && !e.message.startsWith(`${e.name}: `)) {
    e.message = `${e.name}: ${e.message}`;
  }
  return e;
}

function witError(e) {
  const tag = e instanceof InvalidArguments ? 'invalid-arguments' : 'execution-failed';
  return { tag, val: { message: e.message, code: e.code ?? null } };
}

/** Writes to the host's log, tagged with the plugin and tool. */
export const log = Object.fromEntries(
  ['trace', 'debug', 'info', 'warn', 'error'].map((level) => [level, (message) => hostLog(level, String(message))]),
);

/** Reports progress of the current call (MCP progress notifications when asked for). */
export function progress(message) {
  hostProgress(String(message));
}

/**
 * Asks a reviewer before a dangerous action (WIT `request-approval`). Returns
 * `{decision: 'continue'}`, `{decision: 'exit-early', reason}` or
 * `{decision: 'edit', arguments}` (the revised arguments object, already
 * validated by the host).
 */
export function requestApproval(description) {
  const d = hostRequestApproval(String(description));
  switch (d.tag) {
    case 'continue':
      return { decision: 'continue' };
    case 'exit-early':
      return { decision: 'exit-early', reason: d.val };
    default:
      return { decision: 'edit', arguments: JSON.parse(d.val) };
  }
}
