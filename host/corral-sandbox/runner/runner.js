// corral's code-mode runner: runs a script a model wrote (the body of an
// async JavaScript function) with `tools` and `console`, and nothing else.
//
// It is built with componentize-qjs --sync --stub-wasi
// (scripts/build-runner.sh), so the component imports corral:code/tools and
// nothing more: every WASI function it was linked against traps. What would
// reach WASI is replaced before a script runs: Math.random (seeded from the
// run's seed), Date and performance.now (the run's start time, plus 1 ms a
// read), so a run repeated with the same seed and start sees the same values.
//
// The sync runtime never runs QuickJS's job queue inside an export, so a
// native `await` would never settle. Tool calls are synchronous imports and a
// script has no timers or I/O of its own, so nothing needs to wait: the
// script is rewritten before it runs (acorn). Every `await x` becomes
// `$await(x)`, which unwraps a settled promise at once; every async function
// becomes a plain function returning a settled promise; and `Promise` is
// SyncPromise, whose callbacks run as soon as it settles.

import { Parser } from 'acorn';
import * as walk from 'acorn-walk';
import { call, parallel, log } from 'corral:code/tools@0.1.0';

// ---- Promises that settle synchronously -------------------------------

const PENDING = 0;
const FULFILLED = 1;
const REJECTED = 2;

function isThenable(value) {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof value.then === 'function'
  );
}

class SyncPromise {
  constructor(executor) {
    if (typeof executor !== 'function') {
      throw new TypeError('Promise resolver is not a function');
    }
    this._state = PENDING;
    this._value = undefined;
    this._reactions = [];
    let done = false;
    const resolve = (value) => {
      if (!done) {
        done = true;
        this._resolve(value);
      }
    };
    const reject = (reason) => {
      if (!done) {
        done = true;
        this._settle(REJECTED, reason);
      }
    };
    try {
      executor(resolve, reject);
    } catch (err) {
      reject(err);
    }
  }

  _resolve(value) {
    if (value === this) {
      this._settle(REJECTED, new TypeError('a promise cannot resolve to itself'));
      return;
    }
    if (isThenable(value)) {
      let called = false;
      try {
        value.then(
          (v) => {
            if (!called) {
              called = true;
              this._resolve(v);
            }
          },
          (e) => {
            if (!called) {
              called = true;
              this._settle(REJECTED, e);
            }
          },
        );
      } catch (err) {
        if (!called) {
          called = true;
          this._settle(REJECTED, err);
        }
      }
      return;
    }
    this._settle(FULFILLED, value);
  }

  _settle(state, value) {
    if (this._state !== PENDING) return;
    this._state = state;
    this._value = value;
    const reactions = this._reactions;
    this._reactions = [];
    for (const react of reactions) react();
  }

  then(onFulfilled, onRejected) {
    return new SyncPromise((resolve, reject) => {
      const react = () => {
        const handler = this._state === FULFILLED ? onFulfilled : onRejected;
        if (typeof handler !== 'function') {
          (this._state === FULFILLED ? resolve : reject)(this._value);
          return;
        }
        try {
          resolve(handler(this._value));
        } catch (err) {
          reject(err);
        }
      };
      if (this._state === PENDING) this._reactions.push(react);
      else react();
    });
  }

  catch(onRejected) {
    return this.then(undefined, onRejected);
  }

  finally(onFinally) {
    return this.then(
      (value) => SyncPromise.resolve(onFinally()).then(() => value),
      (reason) =>
        SyncPromise.resolve(onFinally()).then(() => {
          throw reason;
        }),
    );
  }

  static resolve(value) {
    if (value instanceof SyncPromise) return value;
    return new SyncPromise((resolve) => resolve(value));
  }

  static reject(reason) {
    return new SyncPromise((_, reject) => reject(reason));
  }

  static all(values) {
    return SyncPromise.resolve().then(() => Array.from(values, (v) => $await(v)));
  }

  static allSettled(values) {
    return SyncPromise.resolve().then(() =>
      Array.from(values, (v) => {
        try {
          return { status: 'fulfilled', value: $await(v) };
        } catch (reason) {
          return { status: 'rejected', reason };
        }
      }),
    );
  }

  static race(values) {
    return SyncPromise.resolve().then(() => {
      for (const v of values) return $await(v);
      return $await(new SyncPromise(() => {}));
    });
  }

  static any(values) {
    return SyncPromise.resolve().then(() => {
      const errors = [];
      for (const v of values) {
        try {
          return $await(v);
        } catch (err) {
          errors.push(err);
        }
      }
      throw new AggregateError(errors, 'All promises were rejected');
    });
  }
}

// `await value`: a settled promise's value (or its reason, thrown) at once.
function $await(value) {
  const promise = value instanceof SyncPromise ? value : isThenable(value) ? SyncPromise.resolve(value) : null;
  if (promise === null) return value;
  if (promise._state === FULFILLED) return promise._value;
  if (promise._state === REJECTED) throw promise._value;
  throw new Error(
    'this promise never settles: in code mode tool calls finish before they return, and there are no timers or events to wait for',
  );
}

// An async function's body, run now: its result as a settled promise.
function $async(body) {
  try {
    return SyncPromise.resolve(body());
  } catch (err) {
    return SyncPromise.reject(err);
  }
}

// ---- Rewriting the script ---------------------------------------------

// A script error the runner reports itself (syntax, unsupported feature).
class ScriptSyntaxError extends Error {
  constructor(message, offset) {
    super(message);
    this.name = 'SyntaxError';
    this.offset = offset;
  }
}

// The script rewritten as described at the top, with a map from positions
// in the rewritten text back to the script's own.
function rewrite(code) {
  let ast;
  try {
    ast = Parser.parse(code, {
      ecmaVersion: 'latest',
      sourceType: 'script',
      allowReturnOutsideFunction: true,
      allowAwaitOutsideFunction: true,
      locations: false,
    });
  } catch (err) {
    throw new ScriptSyntaxError(String(err.message).replace(/ \(\d+:\d+\)$/, ''), err.pos ?? 0);
  }
  // Edits: [position in the script, characters removed, text inserted].
  // At one position, insertions go before removals (a wrap opens before
  // the `await` or `async` it wraps is replaced), and otherwise in the order
  // they were made: inner constructs first (the walks visit children first),
  // so nested wraps close in order.
  const edits = [];
  const blankAsync = (at) => {
    if (code.startsWith('async', at)) edits.push([at, 5, '     ']);
  };
  // `async m() {}` in a class or an object: the keyword is before the key,
  // outside the function node.
  const methods = new Set();
  walk.full(ast, (node) => {
    if (node.type === 'AwaitExpression') {
      edits.push([node.start, 5, '$await(']);
      edits.push([node.end, 0, ')']);
    } else if (node.type === 'ForOfStatement' && node.await) {
      throw new ScriptSyntaxError(
        '`for await` is not supported in code mode: tool calls return their results directly, so use `for ... of`',
        node.start,
      );
    } else if (
      (node.type === 'MethodDefinition' || (node.type === 'Property' && node.method)) &&
      node.value.async
    ) {
      blankAsync(code.lastIndexOf('async', node.key.start));
      methods.add(node.value);
    }
  });
  walk.full(ast, (node) => {
    const fn =
      node.type === 'FunctionDeclaration' ||
      node.type === 'FunctionExpression' ||
      node.type === 'ArrowFunctionExpression';
    if (!fn || !node.async) return;
    if (node.generator) {
      throw new ScriptSyntaxError(
        'async generators are not supported in code mode: tool calls return their results directly, so a plain generator or loop does the same',
        node.start,
      );
    }
    if (!methods.has(node)) blankAsync(node.start);
    if (node.body.type === 'BlockStatement') {
      edits.push([node.body.start + 1, 0, 'return $async(() => {']);
      edits.push([node.body.end - 1, 0, '});']);
    } else {
      edits.push([node.body.start, 0, '$async(() => (']);
      edits.push([node.body.end, 0, '))']);
    }
  });
  const order = edits.map((edit, i) => [edit, i]);
  order.sort((a, b) => a[0][0] - b[0][0] || (a[0][1] > 0) - (b[0][1] > 0) || a[1] - b[1]);
  let out = '';
  let pos = 0;
  const map = []; // [offset in output, offset in script]
  for (const [[at, remove, insert]] of order) {
    out += code.slice(pos, at);
    map.push([out.length, at]);
    out += insert;
    pos = Math.max(pos, at + remove);
    map.push([out.length, pos]);
  }
  out += code.slice(pos);
  const original = (offset) => {
    let best = [0, 0];
    for (const entry of map) {
      if (entry[0] <= offset) best = entry;
      else break;
    }
    return best[1] + (offset - best[0]);
  };
  return { text: out, original };
}

// 1-based line and column of `offset` in `text`.
function lineColumn(text, offset) {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

// ---- What a script sees -----------------------------------------------

class ToolError extends Error {
  constructor(tool, kind, code, message) {
    super(message);
    this.name = 'ToolError';
    this.tool = tool;
    this.kind = kind;
    this.code = code ?? null;
  }
}

// componentize-qjs's convention for `result`: an import returns its ok
// value and throws an Error whose `payload` is its error value; inside a
// list, each result is `{ tag: 'ok' | 'err', val }`.
function toolFailure(tool, failure) {
  const f = failure instanceof Error && failure.payload !== undefined ? failure.payload : failure;
  if (f !== null && typeof f === 'object' && typeof f.kind === 'string') {
    return new ToolError(tool, f.kind, f.code, f.message);
  }
  return failure;
}

function value(out) {
  return out.tag === 'json' ? JSON.parse(out.val) : out.val;
}

function callOne(tool, args) {
  let out;
  try {
    out = call(tool, args);
  } catch (failure) {
    throw toolFailure(tool, failure);
  }
  return value(out);
}

function argumentsText(tool, args) {
  const value = args === undefined ? {} : args;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ToolError(tool, 'invalid_arguments', null, `the arguments of ${tool} must be an object`);
  }
  return JSON.stringify(value);
}

function makeTools() {
  const batch = (calls) => {
    if (!Array.isArray(calls)) {
      return SyncPromise.reject(
        new TypeError('tools.parallel takes an array of [name, arguments] pairs'),
      );
    }
    try {
      const pairs = calls.map((pair, i) => {
        if (!Array.isArray(pair) || typeof pair[0] !== 'string') {
          throw new TypeError(`tools.parallel: entry ${i} is not a [name, arguments] pair`);
        }
        return [pair[0], argumentsText(pair[0], pair[1])];
      });
      const results = parallel(pairs);
      return SyncPromise.resolve(
        results.map((r, i) => {
          if (r.tag === 'err') throw toolFailure(pairs[i][0], r.val);
          return value(r.val);
        }),
      );
    } catch (err) {
      return SyncPromise.reject(err);
    }
  };
  const target = Object.create(null);
  return new Proxy(target, {
    get(_, name) {
      if (typeof name !== 'string' || name === 'then') return undefined;
      if (name === 'parallel') return batch;
      return (args) => {
        try {
          return SyncPromise.resolve(callOne(name, argumentsText(name, args)));
        } catch (err) {
          return SyncPromise.reject(err);
        }
      };
    },
    set() {
      return false;
    },
    defineProperty() {
      return false;
    },
    setPrototypeOf() {
      return false;
    },
    has(_, name) {
      return typeof name === 'string' && name !== 'then';
    },
  });
}

function text(value) {
  if (typeof value === 'string') return value;
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    const json = JSON.stringify(value);
    return json === undefined ? String(value) : json;
  } catch {
    return String(value);
  }
}

function makeConsole() {
  const at = (level) => (...args) => log(level, args.map(text).join(' '));
  return Object.freeze({
    log: at('info'),
    info: at('info'),
    debug: at('debug'),
    warn: at('warn'),
    error: at('error'),
  });
}

// Math.random from the run's seed: xoshiro128** over the seed's 64 bits.
function seedRandom(seed) {
  let s0 = Number(seed & 0xffffffffn) | 0;
  let s1 = Number((seed >> 32n) & 0xffffffffn) | 0;
  let s2 = 0x9e3779b9 | 0;
  let s3 = 0x243f6a88 | 0;
  const next = () => {
    const result = Math.imul(((Math.imul(s1, 5) << 7) | (Math.imul(s1, 5) >>> 25)), 9);
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = (s3 << 11) | (s3 >>> 21);
    return result >>> 0;
  };
  for (let i = 0; i < 8; i++) next();
  return () => (next() * 2 ** 21 + (next() >>> 11)) / 2 ** 53;
}

// Date, Date.now and performance.now from the run's start: 1 ms a read.
function virtualClock(startMs) {
  const RealDate = Date;
  let clock = Number(startMs);
  const now = () => {
    const t = clock;
    clock += 1;
    return t;
  };
  function VirtualDate(...args) {
    if (!new.target) return new RealDate(now()).toString();
    return Reflect.construct(RealDate, args.length === 0 ? [now()] : args, new.target);
  }
  VirtualDate.prototype = RealDate.prototype;
  VirtualDate.now = now;
  VirtualDate.parse = RealDate.parse;
  VirtualDate.UTC = RealDate.UTC;
  const start = Number(startMs);
  const performance = Object.freeze({ now: () => now() - start, timeOrigin: start });
  return { Date: VirtualDate, performance };
}

// ---- The export -------------------------------------------------------

// Lines before the script's first in the function QuickJS compiles: its
// `function anonymous(...) {` header (two) and the "use strict" line.
const HEADER_LINES = 3;

function failure(err, rewritten) {
  if (err instanceof ScriptSyntaxError) {
    return { message: `SyntaxError: ${err.message}`, ...rewritten.position(err.offset) };
  }
  let message;
  if (err instanceof ToolError) {
    message = `ToolError (${err.kind}${err.code ? `, ${err.code}` : ''}) from ${err.tool}: ${err.message}`;
  } else if (err instanceof Error) {
    message = `${err.name}: ${err.message}`;
  } else {
    message = `uncaught ${text(err)}`;
  }
  // QuickJS: "    at anonymous (<input>:LINE:COLUMN)" in the stack, where
  // the script's first line is line HEADER_LINES + 1.
  let where = {};
  const stack = err && typeof err.stack === 'string' ? err.stack : '';
  const m = /at anonymous \(<input>:(\d+):(\d+)\)/.exec(stack);
  if (m && rewritten.fromGenerated !== undefined && Number(m[1]) > HEADER_LINES) {
    where = rewritten.fromGenerated(Number(m[1]) - HEADER_LINES, Number(m[2]));
  }
  return { message, line: where.line, column: where.column };
}

export function run(code, seed, startMs) {
  const rewritten = { position: (offset) => lineColumn(code, offset) };
  let failed;
  let json;
  try {
    const { text: body, original } = rewrite(code);
    rewritten.text = body;
    // Lines of the body start after the wrapper's first line.
    rewritten.fromGenerated = (line, column) => {
      let offset = 0;
      for (let l = 1; l < line; l++) {
        const nl = body.indexOf('\n', offset);
        if (nl < 0) break;
        offset = nl + 1;
      }
      return lineColumn(code, original(offset + column - 1));
    };
    Math.random = seedRandom(BigInt.asUintN(64, BigInt(seed)));
    const clock = virtualClock(startMs);
    globalThis.Date = clock.Date;
    globalThis.performance = clock.performance;
    globalThis.Promise = SyncPromise;
    const script = new Function(
      'tools',
      'console',
      'Promise',
      '$await',
      '$async',
      'ToolError',
      `"use strict";\n${body}`,
    );
    const value = $await(script(makeTools(), makeConsole(), SyncPromise, $await, $async, ToolError));
    try {
      json = JSON.stringify(value === undefined ? null : value);
    } catch (err) {
      failed = { message: `the script's return value is not JSON: ${err.message}` };
    }
    if (failed === undefined) return json === undefined ? 'null' : json;
  } catch (err) {
    failed = failure(err, rewritten);
  }
  // The export's error (componentize-qjs: a thrown value is the `err` case).
  throw failed;
}
