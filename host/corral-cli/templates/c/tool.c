/* {{name}}: a corral tool in C. `describe` declares the tool (its
 * description is what the model reads, its schema the JSON Schema of its
 * arguments); `call` runs it and returns its parts. Bindings: corral's
 * guest-sdk/c (./build.sh), with the helpers of corral_tool.h; json.c is a
 * small JSON reader and writer. */
#include <stdlib.h>
#include <string.h>

#include "corral_tool.h"
#include "json.h"

static const char *SCHEMA =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"text\"],"
    "\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"The text to reverse.\"}}}";

void exports_corral_tool_tool_describe(exports_corral_tool_tool_list_tool_spec_t *ret) {
  ret->len = 1;
  ret->ptr = calloc(1, sizeof(corral_tool_types_tool_spec_t));
  corral_tool_types_tool_spec_t *s = &ret->ptr[0];
  corral_spec_defaults(&s->metadata);
  plugin_string_dup(&s->name, "{{tool}}");
  plugin_string_dup(&s->description, "Reverse a text, character by character.");
  plugin_string_dup(&s->parameters, SCHEMA);
  plugin_string_dup(&s->metadata.category, "text");
  s->metadata.idempotent = true;
}

static bool invalid(exports_corral_tool_tool_tool_error_t *err, const char *message) {
  corral_error(err, true, message);
  return false;
}

bool exports_corral_tool_tool_call(plugin_string_t *name, plugin_string_t *arguments,
                                   exports_corral_tool_tool_context_t *context,
                                   exports_corral_tool_tool_tool_output_t *ret,
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
  /* A result of parts: a sentence for the model, and the structured data
   * (which plans reference with $ref). */
  corral_tool_types_part_t *parts = corral_output(ret, 2);
  corral_part_text(&parts[0], "Reversed the text.");
  corral_part_json(&parts[1], result.data, result.len);
  free(result.data);
  return true;
}
