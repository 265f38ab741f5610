/* The `fuzzy` sample plugin, in C: edit distance and "did you mean"
 * matching over Unicode text. Bindings: guest-sdk/c (`wit-bindgen c` for the
 * `corral:tool/plugin@0.3.0` world, wit/, and the helpers of corral_tool.h);
 * the core module is built
 * with zig's clang for wasm32-wasi and wrapped into a component with
 * `jco new --wasi-reactor` (see scripts/build-guests.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral_tool.h"
#include "json.h"

#define MAX_CHARS 10000
#define MAX_CANDIDATES 100000

/* ---- describe ---------------------------------------------------------- */

static const char *EDIT_DISTANCE_SCHEMA =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"a\",\"b\"],"
    "\"properties\":{"
    "\"a\":{\"type\":\"string\",\"maxLength\":10000,\"description\":\"First text.\"},"
    "\"b\":{\"type\":\"string\",\"maxLength\":10000,\"description\":\"Second text.\"},"
    "\"ignore_case\":{\"type\":\"boolean\",\"default\":false,\"description\":\"Compare ASCII letters case-insensitively.\"}}}";

static const char *CLOSEST_SCHEMA =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"word\",\"candidates\"],"
    "\"properties\":{"
    "\"word\":{\"type\":\"string\",\"maxLength\":10000,\"description\":\"The misspelt or partial word.\"},"
    "\"candidates\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1,\"maxItems\":100000,"
    "\"description\":\"Known words to match against.\"},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"default\":3,\"description\":\"How many matches to return.\"},"
    "\"ignore_case\":{\"type\":\"boolean\",\"default\":true,\"description\":\"Compare ASCII letters case-insensitively.\"}}}";

static void spec(corral_tool_types_tool_spec_t *s, const char *name, const char *description,
                 const char *schema, const char *keyword) {
  memset(s, 0, sizeof *s);
  corral_spec_defaults(&s->metadata);
  plugin_string_dup(&s->name, name);
  plugin_string_dup(&s->description, description);
  plugin_string_dup(&s->parameters, schema);
  plugin_string_dup(&s->metadata.category, "text");
  s->metadata.keywords.len = 2;
  s->metadata.keywords.ptr = calloc(2, sizeof(plugin_string_t));
  plugin_string_dup(&s->metadata.keywords.ptr[0], "fuzzy");
  plugin_string_dup(&s->metadata.keywords.ptr[1], keyword);
  plugin_string_dup(&s->metadata.version, "0.1.0");
  s->metadata.idempotent = true;
  s->metadata.parallelizable = true;
  s->metadata.latency = CORRAL_TOOL_TYPES_LATENCY_HINT_FAST;
  s->metadata.requires_approval = false;
  s->metadata.return_behavior = CORRAL_TOOL_TYPES_RETURN_BEHAVIOR_TO_LLM;
}

void exports_corral_tool_tool_describe(exports_corral_tool_tool_list_tool_spec_t *ret) {
  ret->len = 2;
  ret->ptr = calloc(2, sizeof(corral_tool_types_tool_spec_t));
  spec(&ret->ptr[0], "edit_distance",
       "Levenshtein edit distance between two texts (insertions, deletions and substitutions of "
       "Unicode characters), with a similarity ratio from 0 to 1.",
       EDIT_DISTANCE_SCHEMA, "levenshtein");
  spec(&ret->ptr[1], "closest_match",
       "Find the candidates closest to a word by edit distance (\"did you mean\"): for a misspelt "
       "command, file name or identifier. Returns the best matches, nearest first.",
       CLOSEST_SCHEMA, "suggest");
}

/* ---- host imports -------------------------------------------------------- */

static void host_log(corral_tool_host_log_level_t level, const char *message) {
  plugin_string_t s;
  plugin_string_set(&s, message);
  corral_tool_host_log(level, &s);
}

static void host_progress(const char *message) {
  plugin_string_t s;
  plugin_string_set(&s, message);
  corral_tool_host_progress(&s);
}

/* ---- the work ------------------------------------------------------------ */

/* Decodes UTF-8 into code points (invalid bytes become U+FFFD). Returns the
 * count, or -1 when there are more than `max`. */
static long decode_utf8(const char *s, size_t n, unsigned *out, size_t max, bool fold) {
  size_t count = 0;
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    unsigned cp;
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > n) { cp = 0xFFFD; len = 1; }
    else if (len == 1) cp = c;
    else {
      cp = c & (0xFF >> (len + 1));
      for (size_t k = 1; k < len; k++) cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3F);
    }
    if (fold && cp >= 'A' && cp <= 'Z') cp += 'a' - 'A';
    if (count == max) return -1;
    out[count++] = cp;
    i += len;
  }
  return (long)count;
}

/* Levenshtein distance with two rows: O(len(a) * len(b)) time, O(len(b)) memory. */
static size_t levenshtein(const unsigned *a, size_t na, const unsigned *b, size_t nb, size_t *row) {
  for (size_t j = 0; j <= nb; j++) row[j] = j;
  for (size_t i = 1; i <= na; i++) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      size_t above = row[j];
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t best = diagonal + cost;
      if (above + 1 < best) best = above + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diagonal = above;
    }
  }
  return row[nb];
}

static double similarity(size_t distance, size_t na, size_t nb) {
  size_t longest = na > nb ? na : nb;
  return longest == 0 ? 1.0 : 1.0 - (double)distance / (double)longest;
}

/* The result of a tool: output JSON or an error, with its message. */
typedef struct {
  json_buf out;
  int error_tag; /* -1: success */
  char message[256];
} outcome;

static void invalid(outcome *o, const char *message) {
  o->error_tag = CORRAL_TOOL_TYPES_TOOL_ERROR_INVALID_ARGUMENTS;
  strncpy(o->message, message, sizeof o->message - 1);
}

static bool flag(const json *args, const char *key, bool fallback) {
  const json *v = json_get(args, key);
  return v && v->kind == J_BOOL ? v->boolean : fallback;
}

static const json *string_arg(const json *args, const char *key, outcome *o) {
  const json *v = json_get(args, key);
  if (!v || v->kind != J_STRING) {
    char m[96];
    strcpy(m, "missing or non-string argument '");
    strncat(m, key, 40);
    strcat(m, "'");
    invalid(o, m);
    return NULL;
  }
  return v;
}

static void edit_distance(const json *args, outcome *o) {
  const json *a = string_arg(args, "a", o), *b = a ? string_arg(args, "b", o) : NULL;
  if (!b) return;
  bool fold = flag(args, "ignore_case", false);
  unsigned *ca = malloc(sizeof(unsigned) * MAX_CHARS), *cb = malloc(sizeof(unsigned) * MAX_CHARS);
  long na = decode_utf8(a->string, a->length, ca, MAX_CHARS, fold);
  long nb = decode_utf8(b->string, b->length, cb, MAX_CHARS, fold);
  if (na < 0 || nb < 0) {
    invalid(o, "texts are limited to 10000 characters each");
  } else {
    size_t *row = malloc(sizeof(size_t) * ((size_t)nb + 1));
    size_t d = levenshtein(ca, (size_t)na, cb, (size_t)nb, row);
    free(row);
    buf_printf(&o->out, "{\"distance\":%zu,\"similarity\":%.4f,\"length_a\":%ld,\"length_b\":%ld}",
               d, similarity(d, (size_t)na, (size_t)nb), na, nb);
  }
  free(ca);
  free(cb);
}

typedef struct {
  size_t index, distance;
  double similarity;
} match;

static int by_distance(const void *x, const void *y) {
  const match *a = x, *b = y;
  if (a->distance != b->distance) return a->distance < b->distance ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

static void closest_match(const json *args, outcome *o) {
  const json *word = string_arg(args, "word", o);
  if (!word) return;
  const json *candidates = json_get(args, "candidates");
  if (!candidates || candidates->kind != J_ARRAY || candidates->length == 0) {
    invalid(o, "candidates must be a non-empty array of strings");
    return;
  }
  if (candidates->length > MAX_CANDIDATES) {
    invalid(o, "at most 100000 candidates");
    return;
  }
  const json *limit_arg = json_get(args, "limit");
  size_t limit = limit_arg && limit_arg->kind == J_NUMBER ? (size_t)limit_arg->number : 3;
  if (limit < 1 || limit > 100) {
    invalid(o, "limit must be between 1 and 100");
    return;
  }
  bool fold = flag(args, "ignore_case", true);
  unsigned *cw = malloc(sizeof(unsigned) * MAX_CHARS), *cc = malloc(sizeof(unsigned) * MAX_CHARS);
  size_t *row = malloc(sizeof(size_t) * (MAX_CHARS + 1));
  match *matches = calloc(candidates->length, sizeof(match));
  long nw = decode_utf8(word->string, word->length, cw, MAX_CHARS, fold);
  if (nw < 0) {
    invalid(o, "word is limited to 10000 characters");
    goto done;
  }
  for (size_t i = 0; i < candidates->length; i++) {
    const json *c = &candidates->items[i];
    if (c->kind != J_STRING) {
      invalid(o, "every candidate must be a string");
      goto done;
    }
    long nc = decode_utf8(c->string, c->length, cc, MAX_CHARS, fold);
    if (nc < 0) {
      invalid(o, "candidates are limited to 10000 characters each");
      goto done;
    }
    size_t d = levenshtein(cw, (size_t)nw, cc, (size_t)nc, row);
    matches[i] = (match){i, d, similarity(d, (size_t)nw, (size_t)nc)};
    if ((i + 1) % 10000 == 0) {
      char m[64];
      snprintf(m, sizeof m, "compared %zu of %zu candidates", i + 1, candidates->length);
      host_progress(m);
    }
  }
  qsort(matches, candidates->length, sizeof(match), by_distance);
  if (limit > candidates->length) limit = candidates->length;
  buf_puts(&o->out, "{\"matches\":[");
  for (size_t i = 0; i < limit; i++) {
    const json *c = &candidates->items[matches[i].index];
    if (i) buf_puts(&o->out, ",");
    buf_puts(&o->out, "{\"candidate\":");
    buf_json_string(&o->out, c->string, c->length);
    buf_printf(&o->out, ",\"distance\":%zu,\"similarity\":%.4f}", matches[i].distance, matches[i].similarity);
  }
  buf_printf(&o->out, "],\"compared\":%zu}", candidates->length);
  host_log(CORRAL_TOOL_TYPES_LOG_LEVEL_DEBUG, "closest_match: done");
done:
  free(cw);
  free(cc);
  free(row);
  free(matches);
}

/* ---- call ---------------------------------------------------------------- */

bool exports_corral_tool_tool_call(plugin_string_t *name, plugin_string_t *arguments,
                                   exports_corral_tool_tool_context_t *context,
                                   exports_corral_tool_tool_tool_output_t *ret,
                                   exports_corral_tool_tool_tool_error_t *err) {
  outcome o = {.error_tag = -1};
  const char *parse_error = NULL;
  json *args = json_parse((const char *)arguments->ptr, arguments->len, &parse_error);
  if (!args) {
    invalid(&o, "arguments are not valid JSON");
  } else if (args->kind != J_OBJECT) {
    invalid(&o, "arguments must be a JSON object");
  } else if (name->len == 13 && memcmp(name->ptr, "edit_distance", 13) == 0) {
    edit_distance(args, &o);
  } else if (name->len == 13 && memcmp(name->ptr, "closest_match", 13) == 0) {
    closest_match(args, &o);
  } else {
    invalid(&o, "unknown tool; this plugin has edit_distance and closest_match");
  }
  json_free(args);
  plugin_string_free(name);
  plugin_string_free(arguments);
  exports_corral_tool_tool_context_free(context);

  if (o.error_tag >= 0) {
    free(o.out.data);
    corral_error(err, o.error_tag == CORRAL_TOOL_TYPES_TOOL_ERROR_INVALID_ARGUMENTS, o.message);
    return false;
  }
  /* One JSON part: the structured result. */
  corral_output_json(ret, o.out.data, o.out.len);
  free(o.out.data);
  return true;
}
