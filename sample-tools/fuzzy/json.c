/* See json.h. */
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *p, *end;
  const char *error;
  int depth;
} parser;

static void skip_ws(parser *ps) {
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static bool fail(parser *ps, const char *message) {
  if (!ps->error) ps->error = message;
  return false;
}

static void put_utf8(json_buf *b, unsigned cp) {
  char out[4];
  size_t n;
  if (cp < 0x80) { out[0] = (char)cp; n = 1; }
  else if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
  else if (cp < 0x10000) { out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[2] = (char)(0x80 | (cp & 0x3F)); n = 3; }
  else { out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F)); n = 4; }
  buf_put(b, out, n);
}

static bool hex4(parser *ps, unsigned *out) {
  if (ps->end - ps->p < 4) return fail(ps, "truncated \\u escape");
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = *ps->p++;
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return fail(ps, "bad hex digit in \\u escape");
  }
  *out = v;
  return true;
}

static bool parse_string(parser *ps, char **out, size_t *len) {
  json_buf b = {0};
  ps->p++; /* opening quote */
  while (ps->p < ps->end && *ps->p != '"') {
    char c = *ps->p++;
    if ((unsigned char)c < 0x20) { free(b.data); return fail(ps, "control character in string"); }
    if (c != '\\') { buf_put(&b, &c, 1); continue; }
    if (ps->p >= ps->end) break;
    char e = *ps->p++;
    switch (e) {
      case '"': case '\\': case '/': buf_put(&b, &e, 1); break;
      case 'b': buf_puts(&b, "\b"); break;
      case 'f': buf_puts(&b, "\f"); break;
      case 'n': buf_puts(&b, "\n"); break;
      case 'r': buf_puts(&b, "\r"); break;
      case 't': buf_puts(&b, "\t"); break;
      case 'u': {
        unsigned cp;
        if (!hex4(ps, &cp)) { free(b.data); return false; }
        if (cp >= 0xD800 && cp < 0xDC00 && ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u') {
          unsigned lo;
          ps->p += 2;
          if (!hex4(ps, &lo)) { free(b.data); return false; }
          if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          else cp = 0xFFFD;
        } else if (cp >= 0xD800 && cp < 0xE000) {
          cp = 0xFFFD;
        }
        put_utf8(&b, cp);
        break;
      }
      default: free(b.data); return fail(ps, "unknown escape in string");
    }
  }
  if (ps->p >= ps->end) { free(b.data); return fail(ps, "unterminated string"); }
  ps->p++; /* closing quote */
  buf_put(&b, "", 1);
  *out = b.data;
  *len = b.len - 1;
  return true;
}

static bool parse_value(parser *ps, json *v);

static bool push(json **items, char ***keys, size_t *len, size_t *cap, bool with_keys) {
  if (*len == *cap) {
    *cap = *cap ? *cap * 2 : 4;
    *items = realloc(*items, *cap * sizeof **items);
    if (with_keys) *keys = realloc(*keys, *cap * sizeof **keys);
  }
  memset(&(*items)[*len], 0, sizeof **items);
  return true;
}

static bool parse_container(parser *ps, json *v, bool object) {
  size_t cap = 0;
  char close = object ? '}' : ']';
  v->kind = object ? J_OBJECT : J_ARRAY;
  if (++ps->depth > 64) return fail(ps, "nested more than 64 levels deep");
  ps->p++;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == close) { ps->p++; ps->depth--; return true; }
  for (;;) {
    push(&v->items, &v->keys, &v->length, &cap, object);
    if (object) {
      skip_ws(ps);
      size_t klen;
      if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "expected a string key");
      if (!parse_string(ps, &v->keys[v->length], &klen)) return false;
      skip_ws(ps);
      if (ps->p >= ps->end || *ps->p != ':') { v->length++; return fail(ps, "expected ':' after a key"); }
      ps->p++;
    }
    bool ok = parse_value(ps, &v->items[v->length]);
    v->length++;
    if (!ok) return false;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
    if (ps->p < ps->end && *ps->p == close) { ps->p++; ps->depth--; return true; }
    return fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static bool literal(parser *ps, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return fail(ps, "unexpected character");
  ps->p += n;
  return true;
}

static bool parse_value(parser *ps, json *v) {
  skip_ws(ps);
  if (ps->p >= ps->end) return fail(ps, "unexpected end of input");
  switch (*ps->p) {
    case '{': return parse_container(ps, v, true);
    case '[': return parse_container(ps, v, false);
    case '"': v->kind = J_STRING; return parse_string(ps, &v->string, &v->length);
    case 't': v->kind = J_BOOL; v->boolean = true; return literal(ps, "true");
    case 'f': v->kind = J_BOOL; v->boolean = false; return literal(ps, "false");
    case 'n': v->kind = J_NULL; return literal(ps, "null");
    default: {
      char tmp[64];
      size_t n = 0;
      while (ps->p + n < ps->end && n < sizeof tmp - 1 && strchr("+-0123456789.eE", ps->p[n])) n++;
      if (n == 0) return fail(ps, "unexpected character");
      memcpy(tmp, ps->p, n);
      tmp[n] = 0;
      char *endp;
      v->kind = J_NUMBER;
      v->number = strtod(tmp, &endp);
      if (endp != tmp + n) return fail(ps, "malformed number");
      ps->p += n;
      return true;
    }
  }
}

static void free_inner(json *v) {
  if (v->kind == J_STRING) free(v->string);
  if (v->kind == J_ARRAY || v->kind == J_OBJECT) {
    for (size_t i = 0; i < v->length; i++) {
      free_inner(&v->items[i]);
      if (v->kind == J_OBJECT) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
  }
}

json *json_parse(const char *text, size_t len, const char **error) {
  parser ps = {text, text + len, NULL, 0};
  json *v = calloc(1, sizeof *v);
  bool ok = parse_value(&ps, v);
  skip_ws(&ps);
  if (ok && ps.p != ps.end) ok = fail(&ps, "trailing characters after the value");
  if (!ok) {
    *error = ps.error;
    free_inner(v);
    free(v);
    return NULL;
  }
  return v;
}

void json_free(json *value) {
  if (!value) return;
  free_inner(value);
  free(value);
}

const json *json_get(const json *object, const char *key) {
  if (!object || object->kind != J_OBJECT) return NULL;
  for (size_t i = 0; i < object->length; i++) {
    if (object->keys[i] && strcmp(object->keys[i], key) == 0) return &object->items[i];
  }
  return NULL;
}

void buf_put(json_buf *b, const char *s, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2 + 16;
    b->data = realloc(b->data, b->cap);
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
}

void buf_puts(json_buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_printf(json_buf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) buf_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void buf_json_string(json_buf *b, const char *s, size_t n) {
  buf_put(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"') buf_puts(b, "\\\"");
    else if (c == '\\') buf_puts(b, "\\\\");
    else if (c == '\n') buf_puts(b, "\\n");
    else if (c == '\r') buf_puts(b, "\\r");
    else if (c == '\t') buf_puts(b, "\\t");
    else if (c < 0x20) buf_printf(b, "\\u%04x", c);
    else buf_put(b, (const char *)&c, 1);
  }
  buf_put(b, "\"", 1);
}
