// modules/detect/body_window.hpp — which part of an HTTP body an update inspects (Suricata's
// body inspection windows).
//
// Suricata does not inspect a body whole at every packet: it waits until the body has its minimal
// inspect size (request-body-minimal-inspect-size, response-body-minimal-inspect-size), is complete,
// reached its body limit, or the stream ended; then it inspects all of it, and afterwards, at each
// packet that brought more, only the new bytes with some of the old before them: at least the
// inspect window (request-body-inspect-window, response-body-inspect-window) in all, or, when more
// than a window is new, a quarter window of the old. What it inspected is remembered per body.
// The detection engine follows that here, for the same reasons: a pattern is looked for near the
// bytes that are new, and a long body is not scanned again from its start for every segment.
//
// Two variants, as Suricata has two: the response body (file_data to the client; its
// FiledataGetDataCallback) windows from its second inspection on; the request body
// (http.request_body, file_data to the server; HttpRequestBodyGetDataCallback) only once more
// than the minimal size was inspected. Inline (http-body-inline), bodies are inspected at every
// update, from their start until they have the minimal size.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gaspp {

struct BodyWindowCfg {
  uint64_t min_size, window;
  bool request;      // the request body's variant
  bool body_inline;  // http-body-inline
};

struct BodyWindow {
  bool inspect = false;  // false: this update inspects nothing of the body
  uint64_t offset = 0;   // the inspected bytes are body[offset, size)
};

// size: the body's bytes so far; done: the message is complete (or its stream ended); cut: the
// body reached its limit. inspected: what earlier updates inspected (read and advanced).
inline BodyWindow body_window(const BodyWindowCfg& c, uint64_t size, bool done, bool cut, uint64_t& inspected) {
  BodyWindow w;
  if (size == 0 || inspected >= size) return w;  // nothing new
  if (!c.body_inline && !cut && size < c.min_size && !done) return w;  // wait for more
  if (c.request) {
    if (inspected > c.min_size) {
      const uint64_t fresh = size - inspected;
      w.offset = fresh < c.window ? (inspected < c.window - fresh ? 0 : inspected - (c.window - fresh))
                                  : (c.window / 4 <= inspected ? inspected - c.window / 4 : 0);
    }
    inspected = size;
  } else {
    if (inspected != 0) {
      const uint64_t fresh = size - inspected;
      if (fresh < c.window) w.offset = inspected < c.window - fresh ? 0 : inspected - (c.window - fresh);
      else w.offset = c.window / 4 <= inspected ? inspected - c.window / 4 : 0;
    }
    // Inline, a body under the minimal size is inspected from its start again next time.
    if (!(c.body_inline && size < c.min_size)) inspected = size;
  }
  w.inspect = true;
  return w;
}

}  // namespace gaspp
