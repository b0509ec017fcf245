// Size caps on what the extension forwards to the server (docs/tools.md, "Sizes").
//
// A page decides how big a CDP event is: a console string of 5 MB, a script URL of 1 MB. One frame to the server may
// hold at most SHARED.maxFrameBytes (4 MiB); a bigger one used to make the server close the link. Events are cut here,
// before they are sent: their longest strings are shortened, each ending with a marker that says how much was cut.
// Pure functions without chrome.* (tests run them under node).

import SHARED from './shared.js';

/** What one event frame may carry, leaving room for the frame's own fields. */
export const EVENT_BUDGET_BYTES = SHARED.maxFrameBytes - 64 * 1024;
/** A URL in a tab event. */
export const URL_MAX_CHARS = 8192;
/** Any one string in an event of the general tools' tabs: the server keeps at most a few thousand characters of any
 * (console text, a source URL, a status text), so more is only traffic. Provider events (an answer's state) are cut
 * only to fit the frame. */
export const GENERAL_STRING_MAX_CHARS = 64 * 1024;

const encoder = new TextEncoder();
const utf8Length = (s) => encoder.encode(s).length;

export function marker(bytes) {
  return `…[truncated ${bytes} bytes]`;
}

/** `s`, or its first `max` chars and the marker when longer. */
export function capString(s, max = URL_MAX_CHARS) {
  if (typeof s !== 'string' || s.length <= max) return s;
  return s.slice(0, max) + marker(utf8Length(s.slice(max)));
}

/** Every string leaf of a JSON value: [holder, key, length]. */
function stringLeaves(value, out = [], depth = 0) {
  if (depth > 64 || value === null || typeof value !== 'object') return out;
  for (const key of Object.keys(value)) {
    const v = value[key];
    if (typeof v === 'string') out.push([value, key, v.length]);
    else if (v !== null && typeof v === 'object') stringLeaves(v, out, depth + 1);
  }
  return out;
}

/**
 * `params` itself when its JSON fits `budget` bytes and no string is longer than `maxString`; else a copy whose long
 * strings are cut (with the marker) to `maxString`, then its longest ones until it fits. Never throws: a value that
 * cannot be cut to fit becomes {truncated: true, bytes}.
 */
export function capEvent(params, budget = EVENT_BUDGET_BYTES, maxString = Infinity) {
  let text;
  try {
    text = JSON.stringify(params);
  } catch {
    return { truncated: true, bytes: null };
  }
  if (text === undefined) return params;
  // A JS char is at most 3 UTF-8 bytes: most events are settled without encoding anything.
  if (text.length * 3 <= budget && text.length <= maxString) return params;
  let size = utf8Length(text);
  let copy = null;
  if (text.length > maxString) {
    copy = JSON.parse(text);
    let cut = false;
    for (const [holder, key, length] of stringLeaves(copy)) {
      if (length <= maxString) continue;
      holder[key] = capString(holder[key], maxString);
      cut = true;
    }
    if (!cut) copy = null;
    else size = utf8Length(JSON.stringify(copy));
  }
  if (size <= budget) return copy ?? params;
  copy ??= JSON.parse(text);
  for (let round = 0; round < 32 && size > budget; round++) {
    const leaves = stringLeaves(copy).sort((a, b) => b[2] - a[2]);
    if (!leaves.length) break;
    const [holder, key] = leaves[0];
    const s = holder[key];
    // Each char removed is at least one byte: cutting `excess` chars (and some room for the marker) is enough
    // unless the string is shorter than that, when it goes to nothing but the marker and the next one is cut.
    const keep = Math.max(0, s.length - (size - budget) - 64);
    holder[key] = s.slice(0, keep) + marker(utf8Length(s.slice(keep)));
    size = utf8Length(JSON.stringify(copy));
  }
  return size <= budget ? copy : { truncated: true, bytes: utf8Length(text) };
}
