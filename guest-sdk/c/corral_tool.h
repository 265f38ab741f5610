/* corral_tool.h: helpers over the generated bindings of
 * `corral:tool/plugin@0.3.0` (plugin.h, from scripts/c-bindings.sh) for
 * tools written in C.
 *
 * - corral_spec_defaults: a tool spec's metadata with the Rust SDK's
 *   defaults (priority 50, parallelizable, fast, to the model, no output
 *   schema or resilience hints); set what differs afterwards.
 * - corral_output / corral_part_*: a result of parts (text, the structured
 *   JSON part, an image, audio, a resource link, an embedded resource),
 *   each part taking copies of what it is given; corral_output_json is the
 *   common case, one JSON part.
 * - corral_error: the tool-error of a failed call.
 * - corral_elicit, corral_sample and corral_roots: ask the MCP client that
 *   made the call,
 *   as the plugin's policy (`[client]`) allows. Each returns 0 on an answer
 *   and -1 on a client-error, whose kind (CORRAL_TOOL_CLIENT_CLIENT_ERROR_*)
 *   and message it writes. A stateless (MCP 2026-07-28) client outside a
 *   task is asked by a retry that runs the tool again from the start: ask
 *   before acting, the same things in the same order each run.
 *
 * The generated functions of plugin.h stay available for everything else
 * (sampling, several requests at once with corral_tool_client_ask).
 */
#ifndef CORRAL_TOOL_H
#define CORRAL_TOOL_H

#include <stdlib.h>
#include <string.h>

#include "plugin.h"

/* Metadata with the SDK's defaults; the spec's strings are left empty. */
static inline void corral_spec_defaults(corral_tool_types_tool_metadata_t *m) {
  memset(m, 0, sizeof *m);
  m->parallelizable = true;
  m->latency = CORRAL_TOOL_TYPES_LATENCY_HINT_FAST;
  m->return_behavior = CORRAL_TOOL_TYPES_RETURN_BEHAVIOR_TO_LLM;
  m->priority = 50;
}

/* Room for `count` parts in `ret`, zeroed; returns the first. */
static inline corral_tool_types_part_t *corral_output(exports_corral_tool_tool_tool_output_t *ret,
                                                      size_t count) {
  ret->len = count;
  ret->ptr = calloc(count ? count : 1, sizeof(corral_tool_types_part_t));
  return ret->ptr;
}

static inline void corral__bytes(plugin_list_u8_t *to, const uint8_t *data, size_t len) {
  to->len = len;
  to->ptr = malloc(len ? len : 1);
  if (len) memcpy(to->ptr, data, len);
}

/* Text for the model or the person. */
static inline void corral_part_text(corral_tool_types_part_t *part, const char *text) {
  part->content.tag = CORRAL_TOOL_TYPES_CONTENT_TEXT;
  plugin_string_dup(&part->content.val.text, text);
}

/* The structured result: `len` bytes of JSON text (at most one per result). */
static inline void corral_part_json(corral_tool_types_part_t *part, const char *json, size_t len) {
  part->content.tag = CORRAL_TOOL_TYPES_CONTENT_JSON;
  part->content.val.json.len = len;
  part->content.val.json.ptr = malloc(len ? len : 1);
  if (len) memcpy(part->content.val.json.ptr, json, len);
}

/* An image (`image/png`, ...) or, with `audio` true, audio. */
static inline void corral_part_media(corral_tool_types_part_t *part, bool audio,
                                     const char *mime_type, const uint8_t *data, size_t len) {
  part->content.tag = audio ? CORRAL_TOOL_TYPES_CONTENT_AUDIO : CORRAL_TOOL_TYPES_CONTENT_IMAGE;
  corral_tool_types_media_t *media = audio ? &part->content.val.audio : &part->content.val.image;
  plugin_string_dup(&media->mime_type, mime_type);
  corral__bytes(&media->data, data, len);
}

/* A link to `uri` (https://, or a corral:// resource this result embeds). */
static inline void corral_part_link(corral_tool_types_part_t *part, const char *uri,
                                    const char *name, const char *mime_type) {
  part->content.tag = CORRAL_TOOL_TYPES_CONTENT_RESOURCE_LINK;
  corral_tool_types_resource_link_t *link = &part->content.val.resource_link;
  plugin_string_dup(&link->uri, uri);
  plugin_string_dup(&link->name, name);
  plugin_string_dup(&link->description, "");
  if (mime_type) {
    link->mime_type.is_some = true;
    plugin_string_dup(&link->mime_type.val, mime_type);
  }
}

/* A resource of text carried in the result. */
static inline void corral_part_resource_text(corral_tool_types_part_t *part, const char *uri,
                                             const char *mime_type, const char *text) {
  part->content.tag = CORRAL_TOOL_TYPES_CONTENT_EMBEDDED_RESOURCE;
  corral_tool_types_embedded_resource_t *r = &part->content.val.embedded_resource;
  plugin_string_dup(&r->uri, uri);
  if (mime_type) {
    r->mime_type.is_some = true;
    plugin_string_dup(&r->mime_type.val, mime_type);
  }
  r->contents.tag = CORRAL_TOOL_TYPES_RESOURCE_CONTENTS_TEXT;
  plugin_string_dup(&r->contents.val.text, text);
}

/* The common result: one JSON part holding `len` bytes of `json`. */
static inline void corral_output_json(exports_corral_tool_tool_tool_output_t *ret,
                                      const char *json, size_t len) {
  corral_part_json(corral_output(ret, 1), json, len);
}

/* A failed call: invalid arguments (`invalid` true) or a failure. */
static inline void corral_error(exports_corral_tool_tool_tool_error_t *err, bool invalid,
                                const char *message) {
  memset(err, 0, sizeof *err);
  err->tag = invalid ? CORRAL_TOOL_TYPES_TOOL_ERROR_INVALID_ARGUMENTS
                     : CORRAL_TOOL_TYPES_TOOL_ERROR_EXECUTION_FAILED;
  /* Both cases carry an error-info at the same place in the union. */
  plugin_string_dup(&err->val.invalid_arguments.message, message);
}

/* A client-error's kind and a copy of its message (free it). */
static inline int corral__client_error(corral_tool_client_client_error_t *err, int *kind,
                                       char **message) {
  *kind = err->tag;
  plugin_string_t *text = &err->val.denied; /* every case carries a string */
  *message = malloc(text->len + 1);
  memcpy(*message, text->ptr, text->len);
  (*message)[text->len] = 0;
  corral_tool_client_client_error_free(err);
  return -1;
}

/* Asks the person: `schema` is JSON text of a flat object schema. On an
 * answer returns 0 with `*action` 0 accept (then `*answers` is the JSON text
 * of the answers, checked by the host; free it), 1 decline or 2 cancel. */
static inline int corral_elicit(const char *message, const char *schema, int *action,
                                char **answers, int *kind, char **error) {
  plugin_string_t m, s;
  plugin_string_set(&m, message);
  plugin_string_set(&s, schema);
  corral_tool_client_elicit_answer_t answer;
  corral_tool_client_client_error_t err;
  *answers = NULL;
  if (!corral_tool_client_elicit(&m, &s, &answer, &err)) return corral__client_error(&err, kind, error);
  *action = answer.tag;
  if (answer.tag == CORRAL_TOOL_CLIENT_ELICIT_ANSWER_ACCEPT) {
    *answers = malloc(answer.val.accept.len + 1);
    memcpy(*answers, answer.val.accept.ptr, answer.val.accept.len);
    (*answers)[answer.val.accept.len] = 0;
  }
  corral_tool_client_elicit_answer_free(&answer);
  return 0;
}

/* Asks the client's model to continue `prompt` (one user message) in at
 * most `max_tokens` tokens: returns 0 and the model's text in `*text` (free
 * it; untrusted). Needs `[client] sampling`. */
static inline int corral_sample(const char *prompt, uint32_t max_tokens, char **text, int *kind,
                                char **error) {
  corral_tool_client_sampling_message_t message;
  memset(&message, 0, sizeof message);
  message.role = CORRAL_TOOL_TYPES_ROLE_USER;
  message.content.tag = CORRAL_TOOL_CLIENT_SAMPLING_CONTENT_TEXT;
  plugin_string_dup(&message.content.val.text, prompt);
  corral_tool_client_list_sampling_message_t messages = {.ptr = &message, .len = 1};
  corral_tool_client_sampled_t sampled;
  corral_tool_client_client_error_t err;
  bool ok = corral_tool_client_sample(&messages, NULL, max_tokens, &sampled, &err);
  plugin_string_free(&message.content.val.text);
  if (!ok) return corral__client_error(&err, kind, error);
  *text = malloc(sampled.text.len + 1);
  memcpy(*text, sampled.text.ptr, sampled.text.len);
  (*text)[sampled.text.len] = 0;
  corral_tool_client_sampled_free(&sampled);
  return 0;
}

/* The client's workspace roots (untrusted text; they grant no access):
 * returns 0 and the list, which the caller frees with
 * corral_tool_client_list_root_free. */
static inline int corral_roots(corral_tool_client_list_root_t *roots, int *kind, char **error) {
  corral_tool_client_client_error_t err;
  if (!corral_tool_client_roots(roots, &err)) return corral__client_error(&err, kind, error);
  return 0;
}

#endif
