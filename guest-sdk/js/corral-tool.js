// Write corral tools in JavaScript.
//
// A tool is a function over one arguments object, described by `defineTool`;
// `plugin` turns a list of tools into the `tool` interface of the
// `corral:tool/plugin@0.3.0` world (wit/corral-tool.wit), with `describe` and
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
// - QuickJS, the default: `componentize-qjs --sync --wit wit -n plugin
//   --js bundle.js -o x.wasm`. A 2 MB component whose interpreter state is
//   snapshotted at build time; a call costs about a quarter of SpiderMonkey's
//   (BENCHMARKS.md). Handlers must be synchronous, and there is no `fetch()`.
// - SpiderMonkey: `componentize-js --wit wit -n plugin -d fetch-event
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
//   result: `undefined` as no part, an `Output` (or a `Part`) as its parts,
//   anything else as one JSON part (the structured result plans reference).
// - `InvalidArguments` and `ExecutionFailed` thrown by the function become the
//   contract's `tool-error` cases. Anything else thrown is a bug: it propagates
//   and the guest traps, which the host reports as a crash of the tool and
//   survives.
// - `log`, `progress` and `requestApproval` call the host; `elicit`,
//   `sample`, `roots` and `ask` ask the MCP client that made the call, as
//   the plugin's policy (`[client]`) allows. A stateless (MCP 2026-07-28)
//   client outside a task is asked by a retry that runs the tool again from
//   the start: ask before acting, the same things in the same order.

import {
  log as hostLog,
  progress as hostProgress,
  requestApproval as hostRequestApproval,
} from 'corral:tool/host@0.3.0';
import {
  ask as clientAsk,
  elicit as clientElicit,
  roots as clientRoots,
  sample as clientSample,
} from 'corral:tool/client@0.3.0';
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
   * @param {boolean} [retryable] the same call may succeed if tried again
   *   (the host retries only idempotent tools, and only such errors)
   */
  constructor(message, code, retryable = false) {
    super(message);
    this.code = code;
    this.retryable = retryable;
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
 *   `returnBehavior` (`'to_llm'`, or `'immediate'`), `priority` (0 to 100
 *   among similar tools, `50`), `dependsOn` (the tools whose results this
 *   one usually consumes, `[]`), `outputSchema` (a JSON Schema object the
 *   host checks every structured result against; none).
 *
 * `handler(args, context)` gets the arguments object (defaults filled in) and
 * the call context as a plain object of the keys the host let through; it
 * returns an `Output` or a `Part`, or any JSON-serializable value (one JSON
 * part), or nothing (or, with SpiderMonkey, a promise of one).
 *
 * Throws a `TypeError` naming the tool for an invalid name, a missing
 * description, an unknown option, or an `async` handler in an engine without
 * an event loop (QuickJS), when the module is first evaluated (that is, at
 * build time).
 */
export function defineTool(spec, handler) {
  const known = new Set(['name', 'description', 'parameters', 'category', 'keywords', 'version',
    'idempotent', 'parallelizable', 'latency', 'requiresApproval', 'returnBehavior', 'priority',
    'dependsOn', 'outputSchema']);
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
  const priority = spec.priority ?? 50;
  if (!Number.isInteger(priority) || priority < 0 || priority > 100) {
    throw new TypeError(`tool '${spec.name}': priority must be an integer from 0 to 100`);
  }
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
        priority,
        dependsOn: spec.dependsOn ?? [],
        outputSchema: spec.outputSchema === undefined ? null : JSON.stringify(spec.outputSchema),
        resilience: null,
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

// A tool that returns nothing succeeds with no part: the empty result
// (AgentEnsemble's result contract), not "null".
function encodeResult(result) {
  if (result === undefined) return [];
  if (result instanceof Output) return result.parts.map((p) => p.wit());
  if (result instanceof Part) return [result.wit()];
  return [Part.json(result).wit()];
}

/**
 * One piece of a result (contract 0.3.0): make it with `Part.text`,
 * `Part.json`, `Part.image`, `Part.audio`, `Part.link`, `Part.resourceText`
 * or `Part.resourceBlob`, then annotate it with `forAudience('user')` and
 * `withPriority(0.8)`. The host checks the parts (at most 64, one JSON part,
 * image bytes that match their type, `https://` or `corral://` URIs,
 * priority 0 to 1, every part's bytes against the output cap).
 */
export class Part {
  constructor(content) {
    this.content = content;
    this.audience = [];
    this.priority = null;
  }

  /** Text for the model or the person. */
  static text(text) { return new Part({ tag: 'text', val: String(text) }); }

  /** The structured result (at most one per result): `value` as JSON. */
  static json(value) { return new Part({ tag: 'json', val: JSON.stringify(value) }); }

  /** An image: PNG, JPEG, GIF or WebP bytes (`Uint8Array`) of `mimeType`. */
  static image(mimeType, data) { return new Part({ tag: 'image', val: { mimeType, data: bytes(data) } }); }

  /** Audio bytes of `mimeType`. */
  static audio(mimeType, data) { return new Part({ tag: 'audio', val: { mimeType, data: bytes(data) } }); }

  /**
   * A link the client can fetch: `https://...`, or `corral://...` for a
   * resource this result also embeds (an MCP client then gets the link alone
   * and reads the contents with `resources/read`, for an hour, as the same
   * tenant). `more`: `{description, mimeType, size}`.
   */
  static link(uri, name, more = {}) {
    return new Part({
      tag: 'resource-link',
      val: { uri, name, description: more.description ?? '', mimeType: more.mimeType ?? null, size: more.size ?? null },
    });
  }

  /** A resource of text carried in the result. */
  static resourceText(uri, text, mimeType = null) {
    return new Part({ tag: 'embedded-resource', val: { uri, mimeType, contents: { tag: 'text', val: String(text) } } });
  }

  /** A resource of bytes carried in the result. */
  static resourceBlob(uri, data, mimeType = null) {
    return new Part({ tag: 'embedded-resource', val: { uri, mimeType, contents: { tag: 'blob', val: bytes(data) } } });
  }

  /** Who the part is for: `'user'`, `'assistant'` or both. */
  forAudience(...roles) {
    for (const role of roles) {
      if (role !== 'user' && role !== 'assistant') throw new TypeError(`audience '${role}' is not 'user' or 'assistant'`);
    }
    this.audience = roles;
    return this;
  }

  /** How important the part is, 0 (least) to 1 (most). */
  withPriority(priority) {
    this.priority = Number(priority);
    return this;
  }

  wit() {
    const annotated = this.audience.length > 0 || this.priority !== null;
    return {
      content: this.content,
      annotations: annotated ? { audience: this.audience, priority: this.priority } : null,
    };
  }
}

/** A result of several parts, in the order a client shows them: `new Output(Part.text(...), ...)`. */
export class Output {
  constructor(...parts) { this.parts = parts; }

  /** Appends `part`; returns the output. */
  add(part) { this.parts.push(part); return this; }
}

function bytes(data) {
  return data instanceof Uint8Array ? data : new Uint8Array(data);
}

/**
 * Why the client could not answer: `kind` is `denied` (no grant; the message
 * names it), `unsupported` (no client can answer, or it lacks the
 * capability), `over-budget` (a sampling limit) or `failed` (the client
 * failed, the answer did not fit, or the wait ran out).
 */
export class ClientError extends Error {
  constructor(kind, message) {
    super(`${kind}: ${message}`);
    this.kind = kind;
    this.detail = message;
  }
}

// The client-error an import threw: QuickJS throws the payload itself,
// SpiderMonkey (jco) a ComponentError carrying it.
function clientError(e) {
  const err = e && typeof e === 'object' && 'payload' in e ? e.payload : e;
  if (err && typeof err === 'object' && typeof err.tag === 'string') return new ClientError(err.tag, String(err.val ?? ''));
  throw e;
}

function elicited(answer) {
  if (answer.tag === 'accept') return { action: 'accept', content: JSON.parse(answer.val) };
  return { action: answer.tag };
}

function messagesOf(messages) {
  const list = typeof messages === 'string' ? [['user', messages]] : messages;
  return list.map(([role, text]) => {
    if (role !== 'user' && role !== 'assistant') throw new TypeError(`role '${role}' is not 'user' or 'assistant'`);
    return { role, content: { tag: 'text', val: String(text) } };
  });
}

function sampledOf(s) {
  return { text: s.text, model: s.model, stopReason: s.stopReason ?? null };
}

/**
 * Asks the person for input: `schema` is a JSON Schema object of an object
 * whose properties are strings, numbers, integers, booleans or string enums
 * (MCP's form elicitation). Returns `{action: 'accept', content}` (checked
 * against `schema` by the host), `{action: 'decline'}` or
 * `{action: 'cancel'}`. Needs `[client] elicitation = true`; throws a
 * `ClientError` otherwise, or when no one can answer.
 */
export function elicit(message, schema) {
  try {
    return elicited(clientElicit(String(message), JSON.stringify(schema)));
  } catch (e) {
    throw clientError(e);
  }
}

/**
 * Asks the client's model to continue `messages` (a text, or `[role, text]`
 * pairs) in at most `maxTokens` tokens; returns `{text, model, stopReason}`.
 * Needs `[client] sampling`; throws a `ClientError` (`over-budget` past its
 * limits).
 */
export function sample(messages, maxTokens) {
  try {
    return sampledOf(clientSample(messagesOf(messages), null, maxTokens));
  } catch (e) {
    throw clientError(e);
  }
}

/** The client's workspace roots, `[{uri, name}]` (untrusted; they grant nothing). Needs `[client] roots = true`. */
export function roots() {
  try {
    return clientRoots().map((r) => ({ uri: r.uri, name: r.name ?? null }));
  } catch (e) {
    throw clientError(e);
  }
}

/** Requests for `ask`; `key` names one (an MCP 2026-07-28 client sees it as the key of `inputRequests`). */
export const Request = {
  elicit: (message, schema, key = null) => ({ key, request: { tag: 'elicit', val: { message: String(message), requestedSchema: JSON.stringify(schema) } } }),
  sample: (messages, maxTokens, key = null) => ({ key, request: { tag: 'sample', val: { messages: messagesOf(messages), preferences: null, maxTokens } } }),
  roots: (key = null) => ({ key, request: { tag: 'roots' } }),
};

/**
 * Asks several requests at once (at most 8); returns an answer per request,
 * in order: what `elicit`, `sample` or `roots` would return, or the
 * `ClientError` it would throw.
 */
export function ask(requests) {
  return clientAsk(requests).map((result) => {
    if (result.tag === 'err') return new ClientError(result.val.tag, String(result.val.val ?? ''));
    const answer = result.val;
    if (answer.tag === 'elicited') return elicited(answer.val);
    if (answer.tag === 'sampled') return sampledOf(answer.val);
    return answer.val.map((r) => ({ uri: r.uri, name: r.name ?? null }));
  });
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
  return { tag, val: { message: e.message, code: e.code ?? null, retryable: e.retryable ?? false } };
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
