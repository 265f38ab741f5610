/* {{name}}: a corral tool in C. `describe` declares the tool (its
 * description is what the model reads, its schema the JSON Schema of its
 * arguments); `call` runs it. Bindings: corral's guest-sdk/c (./build.sh);
 * json.c is a small JSON reader and writer. */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "plugin.h"

static const char *SCHEMA =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"text\"],"
    "\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"The text to reverse.\"}}}";

void exports_corral_tool_tool_describe(exports_corral_tool_tool_list_tool_spec_t *ret) {
  ret->len = 1;
  ret->ptr = calloc(1, sizeof(corral_tool_types_tool_spec_t));
  corral_tool_types_tool_spec_t *s = &ret->ptr[0];
  plugin_string_dup(&s->name, "{{tool}}");
  plugin_string_dup(&s->description, "Reverse a text, character by character.");
  plugin_string_dup(&s->parameters, SCHEMA);
  plugin_string_dup(&s->metadata.category, "text");
  s->metadata.idempotent = true;
  s->metadata.parallelizable = true;
}

static bool invalid(exports_corral_tool_tool_tool_error_t *err, const char *message) {
  memset(err, 0, sizeof *err);
  err->tag = CORRAL_TOOL_TYPES_TOOL_ERROR_INVALID_ARGUMENTS;
  plugin_string_dup(&err->val.invalid_arguments.message, message);
  return false;
}

bool exports_corral_tool_tool_call(plugin_string_t *name, plugin_string_t *arguments,
                                   exports_corral_tool_tool_context_t *context, plugin_string_t *ret,
                                   exports_corral_tool_tool_tool_error_t *err) {
  const char *parse_error = NULL;
  json *args = json_parse((const char *)arguments->ptr, arguments->len, &parse_error);
  plugin_string_free(name);
  plugin_string_free(arguments);
  exports_corral_tool_tool_context_free(context);
  const json *text = json_get(args, "text");
  if (!text || text->kind != J_STRING || text->length == 0) {
    json_free(args);
    return invalid(err, "`text` is empty: give some text to reverse");
  }
  /* Reverse by code point: a UTF-8 sequence is a lead byte and the
   * continuation bytes (10xxxxxx) after it. */
  char *reversed = malloc(text->length);
  size_t out = 0, characters = 0;
  for (size_t end = text->length; end > 0;) {
    size_t start = end - 1;
    while (start > 0 && ((unsigned char)text->string[start] & 0xC0) == 0x80) start--;
    memcpy(reversed + out, text->string + start, end - start);
    out += end - start;
    end = start;
    characters++;
  }
  json_buf result = {0};
  buf_puts(&result, "{\"reversed\":");
  buf_json_string(&result, reversed, out);
  buf_printf(&result, ",\"characters\":%zu}", characters);
  free(reversed);
  json_free(args);
  ret->ptr = (uint8_t *)result.data;
  ret->len = result.len;
  return true;
}
