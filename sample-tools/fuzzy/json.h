/* A small JSON reader and writer for the `fuzzy` sample plugin.
 *
 * The host validates every call's arguments against the tool's schema before
 * the guest runs, so the reader only has to be correct, not forgiving: it
 * parses standard JSON (RFC 8259) into a tree and reports the first syntax
 * error. Strings are kept as UTF-8 with escapes decoded.
 */
#ifndef FUZZY_JSON_H
#define FUZZY_JSON_H

#include <stddef.h>
#include <stdbool.h>

typedef enum { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT } json_kind;

typedef struct json {
  json_kind kind;
  bool boolean;
  double number;
  char *string;          /* J_STRING: NUL-terminated UTF-8 (may contain no NULs) */
  size_t length;         /* J_STRING: bytes; J_ARRAY/J_OBJECT: entries */
  struct json *items;    /* J_ARRAY/J_OBJECT: values */
  char **keys;           /* J_OBJECT: keys, parallel to items */
} json;

/* Parses `text` (`len` bytes). Returns NULL and sets `*error` to a static
 * message on malformed input. Free with json_free. */
json *json_parse(const char *text, size_t len, const char **error);
void json_free(json *value);

/* The member `key` of an object, or NULL. */
const json *json_get(const json *object, const char *key);

/* A growable byte buffer for building output. */
typedef struct {
  char *data;
  size_t len, cap;
} json_buf;

void buf_put(json_buf *b, const char *s, size_t n);
void buf_puts(json_buf *b, const char *s);
void buf_printf(json_buf *b, const char *fmt, ...);
/* Appends `s` as a JSON string literal (quoted, escaped). */
void buf_json_string(json_buf *b, const char *s, size_t n);

#endif
