// listd.js: a client for listd in one ES module,
// with no dependencies. Works in browsers and in Node 18+ (global fetch).
//
//   import { ListdClient } from "./listd.js";
//   const client = new ListdClient({ baseURL: "http://127.0.0.1:8080", token });
//   await client.patchList("groceries", [{ op: "moveItem", id: "apple", to: 0 }]);
//   const follower = client.follow("groceries", {
//     onSnapshot(snapshot) { render(snapshot); },
//     onChanges({ answer, states }) { animate(states); },  // states[0] before, states[i+1] after stage i
//     onReset(snapshot) { render(snapshot); },
//     onDeleted(list) { showGone(list); },
//   });
//   follower.stop();
//
//   // A view: only the open items, by due date, in sections by owner.
//   client.follow("tasks", { view: { where: { done: false }, order: "due", group: "owner" }, onSnapshot, onChanges });
//
//   // Bound to a UI: React's useSyncExternalStore, or any loop.
//   const todos = client.follow("todos", { signal });
//   const snapshot = useSyncExternalStore(todos.subscribe, todos.getSnapshot);
//   for await (const update of todos) console.log(update.type, todos.state);
//
//   // Offline reads: the last state kept, shown at once (fromCache) on the next
//   // page, then resumed from its version and epoch.
//   new ListdClient({ baseURL, snapshots: new IndexedDBSnapshotStorage() });
//
// Following reads server-sent events with fetch (EventSource cannot send an
// Authorization header, and tokens never go in URLs), and falls back to
// long-polling for a while when the stream is not available; a connection
// silent for three heartbeats is given up and reconnected. Stages are applied with
// exactly SectionDiff's rules (`applyStage`); an answer that does not apply,
// or does not start at the version held, makes the client refetch the
// snapshot rather than show a wrong table.

/** An error from listd: the problem+json fields, or a transport failure. */
export class ListdError extends Error {
  constructor(status, problem, retryAfter) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.name = "ListdError";
    this.status = status;
    this.type = problem?.type;
    this.title = problem?.title;
    this.detail = problem?.detail;
    /** Seconds the server asked to wait (Retry-After), or undefined. */
    this.retryAfter = retryAfter;
  }
}

/** A stage that does not fit the state it was applied to. */
export class StageError extends Error {
  constructor(stage, operation, reason) {
    super(`stage ${stage}, ${operation}: ${reason}`);
    this.name = "StageError";
    this.stage = stage;
    this.operation = operation;
    this.reason = reason;
  }
}

function comparePaths(a, b) {
  return a[0] !== b[0] ? a[0] - b[0] : a[1] - b[1];
}

function isIndex(value) {
  return Number.isInteger(value);
}

/**
 * Applies one stage to `sections` the way UITableView.performBatchUpdates
 * does, with SectionDiff's rules (Sources/SectionDiff/Stage+Apply.swift), and
 * returns the sections after it. `sections` is not modified.
 *
 * Deletes, updates and move sources name positions before the stage; inserts
 * and move targets name positions after it; what is neither removed nor
 * placed keeps its relative order and fills the remaining places.
 * Throws StageError for a position out of range or named twice, an item
 * operation inside a section deleted or inserted in the same stage.
 */
export function applyStage(sections, stage, stageNumber = 0) {
  const fail = (field, entry, reason) => new StageError(stageNumber, `${field}[${entry}]`, reason);
  const sectionDeleted = stage.sectionDeleted || [];
  const sectionInserted = stage.sectionInserted || [];
  const sectionUpdated = stage.sectionUpdated || [];
  const sectionMoved = stage.sectionMoved || [];
  const itemDeleted = stage.itemDeleted || [];
  const itemInserted = stage.itemInserted || [];
  const itemUpdated = stage.itemUpdated || [];
  const itemMoved = stage.itemMoved || [];

  // Sections are copied shallowly; item arrays are replaced, never mutated.
  const work = sections.map((section) => ({ ...section, items: section.items }));
  const before = work.length;
  const role = new Array(before).fill("kept");
  const claim = (index, newRole, field, entry) => {
    if (!isIndex(index) || index < 0 || index >= before) {
      throw fail(field, entry, `section ${index} is out of range: there are ${before} sections before the stage`);
    }
    if (role[index] !== "kept") throw fail(field, entry, `section ${index} is already ${role[index]} in this stage`);
    role[index] = newRole;
  };
  sectionDeleted.forEach((index, entry) => claim(index, "deleted", "sectionDeleted", entry));
  sectionUpdated.forEach((update, entry) => {
    claim(update.at, "updated", "sectionUpdated", entry);
    work[update.at] = { ...work[update.at], model: update.model };
  });
  sectionMoved.forEach((move, entry) => claim(move.from, "moved", "sectionMoved", entry));

  const after = before - sectionDeleted.length + sectionInserted.length;
  const slots = new Array(Math.max(after, 0)).fill(null);
  const place = (index, slot, field, entry) => {
    if (!isIndex(index) || index < 0 || index >= after) {
      throw fail(field, entry, `section ${index} is out of range: there are ${after} sections after the stage`);
    }
    if (slots[index] !== null) throw fail(field, entry, `section position ${index} is already filled in this stage`);
    slots[index] = slot;
  };
  sectionInserted.forEach((insertion, entry) => place(insertion.at, { inserted: entry }, "sectionInserted", entry));
  sectionMoved.forEach((move, entry) => place(move.to, { moved: move.from }, "sectionMoved", entry));

  // Items, before the stage.
  const named = new Map(); // "s,i" -> "deleted" | "updated" | "moved"
  const claimItem = (path, kind, field, entry) => {
    if (!Array.isArray(path) || path.length !== 2 || !isIndex(path[0]) || !isIndex(path[1])) {
      throw fail(field, entry, `${JSON.stringify(path)} is not a [section, item] position`);
    }
    const [section, element] = path;
    if (section < 0 || section >= before) {
      throw fail(field, entry, `section ${section} is out of range: there are ${before} sections before the stage`);
    }
    if (role[section] === "deleted") throw fail(field, entry, `item [${path}] is in a section deleted in the same stage`);
    const count = work[section].items.length;
    if (element < 0 || element >= count) {
      throw fail(field, entry, `item [${path}] is out of range: section ${section} has ${count} items before the stage`);
    }
    const key = `${section},${element}`;
    if (named.has(key)) throw fail(field, entry, `item [${path}] is already ${named.get(key)} in this stage`);
    named.set(key, kind);
  };
  itemDeleted.forEach((path, entry) => claimItem(path, "deleted", "itemDeleted", entry));
  itemUpdated.forEach((update, entry) => {
    claimItem(update.at, "updated", "itemUpdated", entry);
    const [section, element] = update.at;
    const items = work[section].items.slice();
    items[element] = { ...items[element], model: update.model };
    work[section] = { ...work[section], items };
  });
  const movedItems = itemMoved.map((move, entry) => {
    claimItem(move.from, "moved", "itemMoved", entry);
    return work[move.from[0]].items[move.from[1]];
  });
  // Remove deleted and moved-out items.
  const removals = new Map(); // section -> Set of item indexes
  for (const [key, kind] of named) {
    if (kind === "updated") continue;
    const [section, element] = key.split(",").map(Number);
    if (!removals.has(section)) removals.set(section, new Set());
    removals.get(section).add(element);
  }
  for (const [section, gone] of removals) {
    if (role[section] === "deleted") continue;
    work[section] = { ...work[section], items: work[section].items.filter((_, index) => !gone.has(index)) };
  }

  // Assemble the sections after the stage.
  const result = [];
  const isInserted = new Array(Math.max(after, 0)).fill(false);
  let nextStaying = 0;
  for (let index = 0; index < after; index++) {
    const slot = slots[index];
    if (slot && slot.inserted !== undefined) {
      result.push(sectionInserted[slot.inserted].section);
      isInserted[index] = true;
    } else if (slot) {
      result.push(work[slot.moved]);
    } else {
      while (nextStaying < before && (role[nextStaying] === "deleted" || role[nextStaying] === "moved")) nextStaying++;
      if (nextStaying >= before) throw fail("sectionInserted", 0, "the stage's section counts do not add up");
      result.push(work[nextStaying]);
      nextStaying++;
    }
  }

  // Items, after the stage: inserts and move targets, grouped by section.
  const incoming = [];
  itemInserted.forEach((insertion, entry) => {
    if (!Array.isArray(insertion.at) || insertion.at.length !== 2 || !isIndex(insertion.at[0]) || !isIndex(insertion.at[1])) {
      throw fail("itemInserted", entry, `${JSON.stringify(insertion.at)} is not a [section, item] position`);
    }
    incoming.push({ at: insertion.at, item: insertion.item, field: "itemInserted", entry });
  });
  itemMoved.forEach((move, entry) => {
    if (!Array.isArray(move.to) || move.to.length !== 2 || !isIndex(move.to[0]) || !isIndex(move.to[1])) {
      throw fail("itemMoved", entry, `${JSON.stringify(move.to)} is not a [section, item] position`);
    }
    incoming.push({ at: move.to, item: movedItems[entry], field: "itemMoved", entry });
  });
  incoming.sort((a, b) => comparePaths(a.at, b.at));
  let start = 0;
  while (start < incoming.length) {
    const first = incoming[start];
    const section = first.at[0];
    let end = start;
    while (end < incoming.length && incoming[end].at[0] === section) end++;
    if (section < 0 || section >= after) {
      throw fail(first.field, first.entry, `section ${section} is out of range: there are ${after} sections after the stage`);
    }
    if (isInserted[section]) {
      throw fail(first.field, first.entry, `item [${first.at}] is in a section inserted in the same stage`);
    }
    const staying = result[section].items;
    const count = staying.length + (end - start);
    for (let index = start; index < end; index++) {
      const element = incoming[index].at[1];
      if (element < 0 || element >= count) {
        const bad = incoming[index];
        throw fail(bad.field, bad.entry, `item [${bad.at}] is out of range: section ${section} has ${count} items after the stage`);
      }
    }
    const items = [];
    let nextStayingItem = 0;
    let next = start;
    for (let position = 0; position < count; position++) {
      if (next < end && incoming[next].at[1] === position) {
        items.push(incoming[next].item);
        next++;
        if (next < end && incoming[next].at[1] === position) {
          const bad = incoming[next];
          throw fail(bad.field, bad.entry, `item position [${bad.at}] is already filled in this stage`);
        }
      } else {
        items.push(staying[nextStayingItem]);
        nextStayingItem++;
      }
    }
    result[section] = { ...result[section], items };
    start = end;
  }
  return result;
}

/**
 * What one stage does, by id, for a UI that keeps its rows by id (a DOM
 * list, a keyed virtual DOM): `items` and `sections` map the ids found after
 * the stage to "inserted", "updated" or "moved" (what to flash or slide);
 * `deletedItems` and `deletedSections` list the ids that leave (what to fade
 * out before the stage). `before` and `after` are the states around the stage
 * (`states[i]` and `states[i + 1]` of an answer). The inspector animates
 * with it.
 */
export function stageMarks(before, stage, after) {
  const itemBefore = (path) => before[path[0]]?.items[path[1]];
  const itemAfter = (path) => after[path[0]]?.items[path[1]];
  const marks = { items: {}, sections: {}, deletedItems: [], deletedSections: [] };
  for (const path of stage.itemDeleted || []) if (itemBefore(path)) marks.deletedItems.push(itemBefore(path).id);
  for (const index of stage.sectionDeleted || []) if (before[index]) marks.deletedSections.push(before[index].id);
  for (const entry of stage.itemInserted || []) if (itemAfter(entry.at)) marks.items[itemAfter(entry.at).id] = "inserted";
  for (const entry of stage.itemUpdated || []) if (itemBefore(entry.at)) marks.items[itemBefore(entry.at).id] = "updated";
  for (const entry of stage.itemMoved || []) if (itemBefore(entry.from)) marks.items[itemBefore(entry.from).id] = "moved";
  for (const entry of stage.sectionInserted || []) if (after[entry.at]) marks.sections[after[entry.at].id] = "inserted";
  for (const entry of stage.sectionUpdated || []) if (before[entry.at]) marks.sections[before[entry.at].id] = "updated";
  for (const entry of stage.sectionMoved || []) if (before[entry.from]) marks.sections[before[entry.from].id] = "moved";
  return marks;
}

/** What `applyStageToDOM` rendered into a container: elements by id, and what each last showed. */
const domLists = new WeakMap();

/**
 * Drives a DOM list: puts `container` in the state `sections` (a snapshot's,
 * or `states[i + 1]` after stage i of a "changes" update), reusing each
 * section's and item's element by id, so a moved row is the same node
 * (a CSS transition or a FLIP animation can slide it) and only what changed is
 * rendered again.
 *
 * `item(item, element, {pending})` makes an item's element (`element`
 * undefined) or renders it again (an item whose model changed, or whose
 * pending flag did: `pending` lists the ids of items still pending, such as
 * `getSnapshot().pending`); it returns the element to show. With `section`
 * (same shape; `pendingSections` its pending ids), each section gets an element in `container` and its items go
 * in `itemsOf(sectionElement)` (default: the section's element); without it,
 * the items of every section go straight into `container`. Children the
 * helper did not make (a header row) stay where they are, before its own.
 * Elements of ids no longer shown are removed. `stageMarks` says what to
 * flash or fade. Returns `container`.
 */
export function applyStageToDOM(container, sections, { item, section, itemsOf, pending, pendingSections } = {}) {
  if (typeof item !== "function") throw new TypeError("applyStageToDOM: item(item, element, {pending}) makes an item's element");
  let state = domLists.get(container);
  if (!state) {
    state = { items: new Map(), sections: new Map(), made: new WeakSet() };
    domLists.set(container, state);
  }
  const pendingIDs = new Set(pending || []);
  const pendingSectionIDs = new Set(pendingSections || []);
  const shownItems = new Set();
  const itemElement = (value) => {
    shownItems.add(value.id);
    const entry = state.items.get(value.id);
    const isPending = pendingIDs.has(value.id);
    if (entry && entry.value === value && entry.pending === isPending) return entry.element;
    const element = item(value, entry?.element, { pending: isPending });
    if (entry && entry.element !== element) entry.element.remove();
    state.made.add(element);
    state.items.set(value.id, { element, value, pending: isPending });
    return element;
  };
  // Places `elements` in order among the parent's made children; what else it made there goes.
  const order = (parent, elements) => {
    const nextMade = (node) => {
      while (node && !state.made.has(node)) node = node.nextSibling;
      return node;
    };
    let cursor = nextMade(parent.firstChild);
    for (const element of elements) {
      if (cursor === element) {
        cursor = nextMade(cursor.nextSibling);
      } else {
        parent.insertBefore(element, cursor);
      }
    }
    while (cursor) {
      const next = nextMade(cursor.nextSibling);
      cursor.remove();
      cursor = next;
    }
  };
  const shownSections = new Set();
  if (typeof section === "function") {
    order(container, sections.map((value) => {
      shownSections.add(value.id);
      const entry = state.sections.get(value.id);
      const isPending = pendingSectionIDs.has(value.id);
      let element = entry?.element;
      if (!entry || entry.model !== value.model || entry.pending !== isPending) {
        element = section(value, entry?.element, { pending: isPending });
        if (entry && entry.element !== element) entry.element.remove();
        state.made.add(element);
        state.sections.set(value.id, { element, model: value.model, pending: isPending });
      }
      order(itemsOf ? itemsOf(element) : element, value.items.map(itemElement));
      return element;
    }));
  } else {
    order(container, sections.flatMap((value) => value.items.map(itemElement)));
  }
  for (const [id, entry] of state.items) {
    if (!shownItems.has(id)) { entry.element.remove(); state.items.delete(id); }
  }
  for (const [id, entry] of state.sections) {
    if (!shownSections.has(id)) { entry.element.remove(); state.sections.delete(id); }
  }
  return container;
}

/**
 * Applies a change answer's stages to a snapshot (which must be at
 * `answer.from`, of `answer.epoch`) and returns every state: `states[0]` is
 * the sections before, `states[i + 1]` after stage i. Throws StageError.
 */
export function applyAnswer(snapshot, answer) {
  if (answer.reset) throw new StageError(0, "reset", "a reset carries a snapshot, not stages");
  // An answer of an epoch applies only to a snapshot of that epoch: one without
  // an epoch cannot be shown to be of the same list (it may be of a deleted one).
  if (answer.epoch !== undefined && snapshot.epoch !== answer.epoch) {
    throw new StageError(0, "epoch", snapshot.epoch === undefined
      ? `the answer is for epoch ${answer.epoch}, the snapshot has no epoch`
      : `the answer is for epoch ${answer.epoch}, the snapshot is of ${snapshot.epoch}`);
  }
  if (snapshot.version !== answer.from) {
    throw new StageError(0, "from", `the answer starts at version ${answer.from}, the snapshot is at ${snapshot.version}`);
  }
  const states = [snapshot.sections];
  (answer.stages || []).forEach((stage, index) => {
    states.push(applyStage(states[states.length - 1], stage, index));
  });
  return states;
}

/** Reads a `text/event-stream` body: calls `onEvent({event, data, id})` per event. */
export class EventStreamParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buffer = "";
    this.event = "";
    this.data = [];
    this.id = undefined;
    this.retry = undefined;
  }

  /** Feeds decoded text. */
  push(text) {
    this.buffer += text;
    let newline;
    while ((newline = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, newline);
      const width = this.buffer.startsWith("\r\n", newline) ? 2 : 1;
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (width === 1 && this.buffer[newline] === "\r" && newline === this.buffer.length - 1) break;
      this.buffer = this.buffer.slice(newline + width);
      this.line(line);
    }
  }

  line(line) {
    if (line === "") {
      if (this.data.length > 0) {
        this.onEvent({ event: this.event || "message", data: this.data.join("\n"), id: this.id });
      }
      this.event = "";
      this.data = [];
      return;
    }
    if (line.startsWith(":")) return; // a comment: the heartbeat
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.id = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
  }
}

/**
 * A view of a list (the contract's "Views"): which items (`where`, `q`), in
 * what order (`order`, `-path` descending), grouped by which value (`group`),
 * cut to what window (`limit`).
 * @typedef {object} ViewSpec
 * @property {Record<string, unknown> | Array<[string, unknown]>} [where] path → value conditions, all of
 *   which must hold (`{done: false}`; a pair list repeats a path: `[["tags.0", "a"], ["owner", 42]]`)
 * @property {string} [q] text some string of the model holds (case-insensitive)
 * @property {string} [order] the path the items are ordered by; `-path` for descending
 * @property {string} [group] the path whose values make the sections
 * @property {number} [limit] the window: the view's first N items
 */

/**
 * A view's query text, as the server's canonical query writes it: the
 * `where`s sorted (by their UTF-8 text) without repeats, then `q`, `order`,
 * `group`, `limit`, each value percent-encoded with only `A-Z a-z 0-9 - . _ ~`
 * left as they are. A `where` string stays bare when the server would read it
 * back as that string (`owner:ann`) and is written as JSON otherwise
 * (`code:"42"`), so a string never turns into a number or a boolean.
 * A string view is taken as a query text already written (a leading `?` dropped).
 * @param {ViewSpec | string | null | undefined} view
 * @returns {string} the query text, empty for the whole list
 */
export function viewQuery(view) {
  if (view === undefined || view === null) return "";
  if (typeof view === "string") return view.replace(/^\?/, "");
  const where = view.where ?? {};
  const entries = Array.isArray(where) ? where : Object.entries(where);
  const encoder = new TextEncoder();
  const conditions = entries
    .map(([path, value]) => `${path}:${whereValue(value)}`)
    .map((text) => ({ text, bytes: encoder.encode(text) }))
    .sort((a, b) => compareBytes(a.bytes, b.bytes))
    .filter((entry, index, sorted) => index === 0 || sorted[index - 1].text !== entry.text);
  const pairs = conditions.map(({ text }) => `where=${encodeQueryValue(text)}`);
  if (view.q) pairs.push(`q=${encodeQueryValue(view.q)}`);
  if (view.order) pairs.push(`order=${encodeQueryValue(view.order)}`);
  if (view.group) pairs.push(`group=${encodeQueryValue(view.group)}`);
  if (view.limit !== undefined && view.limit !== null) pairs.push(`limit=${encodeQueryValue(String(view.limit))}`);
  return pairs.join("&");
}

/**
 * A `where` value as text: a string bare when it does not read as a JSON
 * scalar (so the server takes it as that string), everything else as JSON.
 * @param {unknown} value
 * @returns {string}
 */
function whereValue(value) {
  if (typeof value !== "string") return JSON.stringify(value);
  let parsed;
  try { parsed = JSON.parse(value); } catch { return value; }
  // An array or object literal is read as a string by the server (null is a scalar).
  if (parsed !== null && typeof parsed === "object") return value;
  return JSON.stringify(value);
}

/** @param {Uint8Array} a @param {Uint8Array} b @returns {number} */
function compareBytes(a, b) {
  const count = Math.min(a.length, b.length);
  for (let index = 0; index < count; index++) if (a[index] !== b[index]) return a[index] - b[index];
  return a.length - b.length;
}

/**
 * Every UTF-8 byte outside `A-Z a-z 0-9 - . _ ~` as `%XX` (encodeURIComponent leaves `!'()*`).
 * @param {string} text
 * @returns {string}
 */
function encodeQueryValue(text) {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * `path` with the view's query added to what `query` holds.
 * @param {string} path
 * @param {string} query the other parameters, already encoded (may be empty)
 * @param {string} view a view's query text (may be empty)
 * @returns {string}
 */
function withQuery(path, query, view) {
  const text = [query, view].filter(Boolean).join("&");
  return text ? `${path}?${text}` : path;
}

/**
 * Timers and time, injectable so tests (and apps with their own scheduling)
 * can drive the follow's deadlines and back-off without waiting.
 * @typedef {object} Clock
 * @property {() => number} now milliseconds
 * @property {(callback: () => void, ms: number) => unknown} setTimeout
 * @property {(handle: unknown) => void} clearTimeout
 */

/** @type {Clock} */
export const systemClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle),
};

function abortReason(signal) {
  return signal.reason ?? new DOMException("The operation was aborted", "AbortError");
}

/** Resolves after `ms`, or at once when `signal` aborts; either way no listener stays on `signal`. */
function sleep(ms, signal, clock = systemClock) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clock.clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = clock.setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * `promise`, or a rejection with `signal`'s reason as soon as it aborts: a
 * fetch or a body read that ignores its signal cannot hold the follow.
 */
function abortable(promise, signal) {
  if (!signal) return promise;
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(abortReason(signal));
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => { signal.removeEventListener("abort", onAbort); resolve(value); },
      (error) => { signal.removeEventListener("abort", onAbort); reject(error); });
  });
}

/** Cancels a body nobody will read, so its connection is released. */
function discard(response) {
  try { response?.body?.cancel?.().catch(() => {}); } catch { /* already locked or gone */ }
}

/**
 * One connection of a follow: aborted with the follow, or by its own
 * deadline (`arm`) with a timeout error, whichever comes first.
 */
class Connection {
  constructor(parent, clock) {
    this.controller = new AbortController();
    this.signal = this.controller.signal;
    this.clock = clock;
    this.timer = undefined;
    this.parent = parent;
    this.onParentAbort = () => this.controller.abort(abortReason(parent));
    if (!parent) return;
    if (parent.aborted) this.onParentAbort();
    else parent.addEventListener("abort", this.onParentAbort, { once: true });
  }

  /** (Re)starts the deadline: `ms` from now the connection is aborted with a timeout. */
  arm(ms, detail) {
    this.disarm();
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.controller.abort(new ListdError(0, { title: "timeout", detail }));
    }, ms);
  }

  disarm() {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  close() {
    this.disarm();
    this.parent?.removeEventListener("abort", this.onParentAbort);
  }
}

/**
 * A bearer token, or a function that gives one (sync or async), called once
 * and then again only after the server refused the token it gave (401).
 * @typedef {string | ((context: {refresh: boolean}) => string | undefined | Promise<string | undefined>)} TokenSource
 */

/** A listd server: REST calls and `follow`. */
export class ListdClient {
  /**
   * @param {object} options
   * @param {string} [options.baseURL] the server, e.g. "http://127.0.0.1:8080" (default: this page's origin)
   * @param {string[]} [options.baseURLs] instead of `baseURL`, every instance of a cluster sharing one
   *   store: a follow whose instance stops answering (or answers 5xx) moves to the next and goes on
   *   from the version it holds; single requests (writes) are never retried elsewhere
   * @param {TokenSource} [options.token] a bearer token (sent only in the Authorization header), or a
   *   provider: called for the first request and again whenever the server answers 401 to its token
   * @param {Function} [options.fetch] a fetch implementation (default: the global one)
   * @param {Clock} [options.clock] timers for follows' deadlines and back-off (default: the system's)
   * @param {RetryOptions | false} [options.retry] how writes are retried (default: on, see RetryOptions);
   *   false sends each write once (it still carries an Idempotency-Key)
   * @param {OutboxOptions | boolean} [options.outbox] queue every write in an outbox that sends them
   *   one at a time, in order, retrying until the server answers (default: off)
   * @param {SnapshotStorage} [options.snapshots] where follows keep their last state (default: none;
   *   a follow's own `snapshots` option wins)
   */
  constructor({ baseURL = "", baseURLs, token, fetch: fetchImpl, clock, retry, outbox, snapshots } = {}) {
    const urls = Array.isArray(baseURLs) && baseURLs.length > 0 ? baseURLs : [baseURL];
    this.baseURLs = urls.map((url) => url.replace(/\/$/, ""));
    /** The index in `baseURLs` of the instance requests go to. */
    this.instance = 0;
    this.token = token;
    this.fetchImpl = fetchImpl || globalThis.fetch.bind(globalThis);
    this.clock = clock || systemClock;
    /** The provider's pending or last answer (a promise), when `token` is a function. */
    this.tokenPromise = undefined;
    /** How writes are retried. */
    this.retry = retry === false ? { ...defaultRetry, attempts: 1 } : { ...defaultRetry, ...retry };
    this.listeners = new Set();
    this.directWrites = pendingSnapshot([], "idle", undefined);
    /** The outbox, when the client has one. */
    this.outbox = outbox ? new Outbox(this, outbox === true ? {} : outbox) : undefined;
    /** The follows' default snapshot storage. */
    this.snapshots = snapshots;
    this.subscribe = this.subscribe.bind(this);
  }

  /**
   * The writes not yet answered by the server: `{count, ids, state, error}`
   * (`ids` are their Idempotency-Keys, oldest first). The same object until
   * they change. Without an outbox, the writes being sent or retried.
   */
  get pendingWrites() {
    return this.outbox ? this.outbox.snapshot : this.directWrites;
  }

  /** Calls `listener()` after every change of `pendingWrites`; returns the unsubscribe (bound). */
  subscribe(listener) {
    const entry = { listener };
    this.listeners.add(entry);
    return () => { this.listeners.delete(entry); };
  }

  notifyPending() {
    for (const entry of [...this.listeners]) {
      if (!this.listeners.has(entry)) continue;
      try { entry.listener(); } catch (error) { console.error("listd: a pendingWrites listener threw", error); }
    }
  }

  /** Stops the outbox's sending (its writes stay in its storage for the next client); no-op without one. */
  close() {
    this.outbox?.close();
  }

  /**
   * One write: with an `Idempotency-Key` (the caller's, or a new one), its
   * body serialized once. Through the outbox when there is one; otherwise
   * sent now and retried (`retry`) on a network error, a timeout, a 502,
   * 503 or 504, with the same key and the same bytes.
   */
  async write(method, path, { body, headers = {}, signal, idempotencyKey: key } = {}) {
    const entry = {
      id: key ?? idempotencyKey(),
      method,
      path,
      body: body === undefined ? undefined : JSON.stringify(body),
      headers,
    };
    if (this.outbox) return this.outbox.add(entry, signal);
    this.trackDirect(entry.id, true);
    try {
      return await this.sendWrite(entry, signal);
    } finally {
      this.trackDirect(entry.id, false);
    }
  }

  trackDirect(id, sending) {
    const ids = this.directWrites.ids.filter((other) => other !== id);
    if (sending) ids.push(id);
    this.directWrites = pendingSnapshot(ids, ids.length ? "sending" : "idle", undefined);
    this.notifyPending();
  }

  /** Sends `entry` until it has an answer, at most `retry.attempts` times. */
  async sendWrite(entry, signal) {
    const { attempts } = this.retry;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attemptWrite(entry, signal);
      } catch (error) {
        if (signal?.aborted || !isRetryable(error) || attempt >= attempts) throw error;
        const delay = this.retryDelay(attempt, error);
        try {
          this.retry.onRetry?.({ id: entry.id, method: entry.method, path: entry.path, attempt, delay, error });
        } catch (thrown) {
          console.error("listd: onRetry threw", thrown); // the app's: the write goes on
        }
        await sleep(delay, signal, this.clock);
        if (signal?.aborted) throw abortReason(signal);
      }
    }
  }

  /**
   * Sends `entry` once, with its key and bytes, under `retry.timeout`.
   * Resolves to the parsed answer; throws ListdError (status 0 for no
   * answer or a timeout), or `signal`'s reason.
   */
  async attemptWrite(entry, signal) {
    const connection = new Connection(signal, this.clock);
    const timeout = this.retry.timeout;
    if (timeout > 0) connection.arm(timeout, `no answer to ${entry.method} ${entry.path} in ${timeout / 1000} s`);
    try {
      const response = await this.send(entry.method, entry.path, {
        bodyText: entry.body,
        headers: { ...entry.headers, "Idempotency-Key": entry.id },
        signal: connection.signal,
      });
      return await readAnswer(response, connection.signal);
    } catch (error) {
      if (signal?.aborted) throw abortReason(signal);
      if (connection.signal.aborted) throw abortReason(connection.signal); // the timeout's ListdError
      if (error instanceof ListdError) throw error;
      throw new ListdError(0, { title: "network error", detail: String(error?.message || error) });
    } finally {
      connection.close();
    }
  }

  /** The wait before retry number `failures` (1, 2, …): jittered exponential, at least what Retry-After says. */
  retryDelay(failures, error) {
    const { minDelay, maxDelay } = this.retry;
    let delay = Math.min(maxDelay, minDelay * 2 ** Math.min(failures - 1, 16));
    delay = delay / 2 + Math.random() * (delay / 2);
    if (error instanceof ListdError && error.retryAfter !== undefined) delay = Math.max(delay, error.retryAfter * 1000);
    return delay;
  }

  /** Where requests go now: the current one of `baseURLs`. */
  get baseURL() { return this.baseURLs[this.instance]; }

  /**
   * Instance `from` failed: requests go to the next one from now on, unless
   * another follow already moved the client (several follows losing one
   * instance at once move it one step, not one each).
   */
  moveOn(from) {
    if (this.baseURLs.length > 1 && this.instance === from) this.instance = (from + 1) % this.baseURLs.length;
  }

  /** The token to send now: the static one, or the provider's current answer. */
  async currentToken() {
    if (typeof this.token !== "function") return this.token;
    if (!this.tokenPromise) this.tokenPromise = this.askProvider(false);
    return this.tokenPromise;
  }

  /**
   * The server refused `refused`: asks the provider again, once for every
   * request refused with that token (ten follows refused at once make one call).
   */
  async renewToken(refused) {
    if (typeof this.token !== "function") return this.token;
    const current = this.tokenPromise;
    if (current) {
      const held = await current.catch(() => undefined);
      if (held !== refused && this.tokenPromise === current) return held;
    }
    if (this.tokenPromise === current) this.tokenPromise = this.askProvider(true);
    return this.tokenPromise;
  }

  askProvider(refresh) {
    const promise = Promise.resolve()
      .then(() => this.token({ refresh }))
      .catch((error) => {
        throw new ListdError(401, { title: "no token", detail: `the token provider failed: ${error?.message || error}` });
      });
    // A failed call is not kept: the next request asks again.
    promise.catch(() => { if (this.tokenPromise === promise) this.tokenPromise = undefined; });
    return promise;
  }

  headers(extra = {}, token = typeof this.token === "function" ? undefined : this.token) {
    const headers = { ...extra };
    if (token) headers.Authorization = `Bearer ${token}`;
    return headers;
  }

  /**
   * Sends one request and returns the Response as it is, whatever its
   * status; with a token provider, a 401 asks it for a new token and sends
   * once more. Throws ListdError(0) for a network failure.
   */
  async send(method, path, { body, bodyText, headers = {}, signal } = {}) {
    let token = await abortable(this.currentToken(), signal);
    // The bytes are fixed once: a retry under an Idempotency-Key must resend exactly them.
    if (bodyText === undefined && body !== undefined) bodyText = JSON.stringify(body);
    for (let attempt = 0; ; attempt++) {
      const init = { method, headers: this.headers(headers, token), signal, cache: "no-store" };
      if (bodyText !== undefined) {
        init.body = bodyText;
        init.headers["Content-Type"] = "application/json";
      }
      let response;
      try {
        response = await abortable(Promise.resolve().then(() => this.fetchImpl(this.baseURL + path, init)), signal);
      } catch (error) {
        if (error?.name === "AbortError" || error instanceof ListdError) throw error;
        throw new ListdError(0, { title: "network error", detail: String(error?.message || error) });
      }
      if (response.status !== 401 || attempt > 0 || typeof this.token !== "function") return response;
      discard(response);
      token = await abortable(this.renewToken(token), signal);
    }
  }

  /** One request; resolves to the parsed JSON body (or null), throws ListdError. */
  async request(method, path, { body, headers = {}, signal } = {}) {
    const response = await this.send(method, path, { body, headers, signal });
    return readAnswer(response, signal);
  }

  listLists({ limit, after, signal } = {}) {
    const query = new URLSearchParams();
    if (limit !== undefined) query.set("limit", String(limit));
    if (after !== undefined) query.set("after", after);
    const text = query.toString();
    return this.request("GET", `/lists${text ? `?${text}` : ""}`, { signal });
  }
  /**
   * The list's snapshot, or with `view` the snapshot of that view of it.
   * @param {string} list
   * @param {{view?: ViewSpec | string, signal?: AbortSignal}} [options]
   */
  getList(list, { view, signal } = {}) {
    return this.request("GET", withQuery(`/lists/${encodeURIComponent(list)}`, "", viewQuery(view)), { signal });
  }
  // Writes: each carries an Idempotency-Key (`idempotencyKey`, or a new one) and is retried or queued (`write`).
  createList(list, { signal, idempotencyKey } = {}) {
    return this.write("POST", "/lists", { body: list, signal, idempotencyKey });
  }
  replaceList(list, snapshot, { ifMatch, signal, idempotencyKey } = {}) {
    return this.write("PUT", `/lists/${encodeURIComponent(list)}`, { body: snapshot, headers: ifMatchHeader(ifMatch), signal, idempotencyKey });
  }
  patchList(list, ops, { ifMatch, signal, idempotencyKey } = {}) {
    return this.write("PATCH", `/lists/${encodeURIComponent(list)}`, { body: { ops }, headers: ifMatchHeader(ifMatch), signal, idempotencyKey });
  }
  deleteList(list, { signal, idempotencyKey } = {}) {
    return this.write("DELETE", `/lists/${encodeURIComponent(list)}`, { signal, idempotencyKey });
  }
  createSection(list, section, { signal, idempotencyKey } = {}) {
    return this.write("POST", `/lists/${encodeURIComponent(list)}/sections`, { body: section, signal, idempotencyKey });
  }
  deleteSection(list, section, { signal, idempotencyKey } = {}) {
    return this.write("DELETE", `/lists/${encodeURIComponent(list)}/sections/${encodeURIComponent(section)}`, { signal, idempotencyKey });
  }
  createItem(list, section, item, { signal, idempotencyKey } = {}) {
    return this.write("POST", `/lists/${encodeURIComponent(list)}/sections/${encodeURIComponent(section)}/items`, { body: item, signal, idempotencyKey });
  }
  getItem(list, item, { signal } = {}) {
    return this.request("GET", `/lists/${encodeURIComponent(list)}/items/${encodeURIComponent(item)}`, { signal });
  }
  deleteItem(list, item, { signal, idempotencyKey } = {}) {
    return this.write("DELETE", `/lists/${encodeURIComponent(list)}/items/${encodeURIComponent(item)}`, { signal, idempotencyKey });
  }
  /**
   * One long-poll: the change since `since` (waits up to `timeout` seconds);
   * with `maxChanges`, a larger change comes as a reset; with `view`, the
   * change of that view (see `viewQuery`).
   */
  changes(list, since, { epoch, timeout = 30, maxChanges, view, signal } = {}) {
    const query = new URLSearchParams({ since: String(since), timeout: String(timeout) });
    if (epoch) query.set("epoch", epoch);
    if (maxChanges !== undefined) query.set("maxChanges", String(maxChanges));
    return this.request("GET", withQuery(`/lists/${encodeURIComponent(list)}/changes`, query.toString(), viewQuery(view)), { signal });
  }

  /**
   * Follows a list live. Returns a `Follower`: `stop()`, `snapshot`, `state`,
   * `error`, `done`, `subscribe(listener)` and `getSnapshot()` (React's
   * `useSyncExternalStore`), and `updates()` / `for await` over it.
   *
   * Callbacks (all optional): `onSnapshot(snapshot)` once the first snapshot
   * is known; `onChanges({answer, states, snapshot})` per change answer,
   * `states[0]` the sections before and `states[i+1]` after stage i;
   * `onReset(snapshot, reason)` when the data is replaced (reason "server": a
   * server reset; "mismatch": a refetch after an answer that did not apply;
   * "recreated"; "listener-error": `onChanges` threw, so the UI may not hold
   * what the next change starts from); `onDeleted(list)`; `onState(state,
   * detail)` with the states of `Follower.state`; `onError(error)` for an
   * error that ends the follow (400, such as a malformed view; 401 with a
   * static token; 403; 404 for a list that never existed);
   * `onListenerError(error, name)` when a callback or listener throws
   * (default: console.error).
   *
   * Options: `since`, `epoch` and `sections` (all three: start from a
   * snapshot held; no first snapshot is fetched unless the stream resets),
   * `transport` ("auto": events, else long-poll for a while; "events";
   * "poll"), `minDelay`/`maxDelay` (ms) of the jittered back-off,
   * `maxChanges` (a change naming more sections and items than this arrives
   * as a reset with the snapshot), `onFailover({list, from, to, error})` each
   * time the follow moves to another of `baseURLs`, `signal` (an AbortSignal
   * that stops the follow), `heartbeatTimeout` (ms without a byte on the
   * event stream before it is given up and reconnected, default 45000: three
   * of the server's 15 s heartbeats), `pollTimeout` (s the server holds a
   * long-poll, default 30; the client gives up 15 s after), `requestTimeout`
   * (ms for a snapshot, default 60000), `streamRetryInterval` (ms of
   * long-polling after the server answered the stream with something else,
   * before trying the stream again, default 60000), `clock`.
   *
   * `view` follows a view of the list instead of all of it: a `ViewSpec`
   * (`{where: {done: false}, order: "-due", group: "owner", limit: 50}`) or a
   * query text (`"where=done:false&order=-due"`). The snapshot, every stream
   * connection and every long-poll carry it (`viewQuery`); the states and
   * stages are the view's, with its own sections and positions. A write that
   * leaves the view alone calls nothing: the version held moves on silently.
   * @param {string} list
   * @param {object} [options]
   * @param {ViewSpec | string} [options.view]
   */
  follow(list, options = {}) {
    return new Follower(this, list, options);
  }
}

function ifMatchHeader(version) {
  return version === undefined ? {} : { "If-Match": `"${version}"` };
}

function retryAfter(response) {
  const value = response.headers.get("Retry-After");
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

/**
 * How writes are retried: `attempts` in all (the first included), a
 * jittered exponential back-off from `minDelay` to `maxDelay` ms (at least
 * what a Retry-After asks), `timeout` ms per attempt before it is given up
 * as lost (0: none), `onRetry` told of each retry.
 * @typedef {object} RetryOptions
 * @property {number} [attempts]
 * @property {number} [minDelay]
 * @property {number} [maxDelay]
 * @property {number} [timeout]
 * @property {(retry: {id: string, method: string, path: string, attempt: number, delay: number, error: ListdError}) => void} [onRetry]
 */
const defaultRetry = { attempts: 6, minDelay: 250, maxDelay: 30000, timeout: 30000, onRetry: undefined };

/**
 * Whether a write may be sent again: no answer (a network error, a
 * timeout), or a 502, 503 or 504 (a proxy or a server that did not take it).
 * Never a 4xx: the server answered, and would answer the same.
 */
function isRetryable(error) {
  return error instanceof ListdError && (error.status === 0 || error.status === 502 || error.status === 503 || error.status === 504);
}

/** A retry found the write applied but its answer not recorded (409): the write is done. */
function isAnswerMissing(error) {
  return error instanceof ListdError && error.status === 409 && /\/idempotency-answer-missing$/.test(error.type || "");
}

/** A response's JSON body (or null); throws ListdError for a status that is not 2xx. */
async function readAnswer(response, signal) {
  const text = await abortable(response.text(), signal);
  let value = null;
  if (text) {
    try { value = JSON.parse(text); } catch { value = null; }
  }
  if (!response.ok) throw new ListdError(response.status, value, retryAfter(response));
  return value;
}

let lastKeyTime = -1;
let keyCounter = 0;

/**
 * A new Idempotency-Key: a UUIDv7 (RFC 9562) from `crypto.getRandomValues`,
 * time-ordered: 48 bits of Unix milliseconds, then a 12-bit counter for keys
 * made in the same millisecond (so keys made later sort after), then 62
 * random bits.
 * @returns {string}
 */
export function idempotencyKey() {
  const crypto = globalThis.crypto;
  if (!crypto?.getRandomValues) {
    throw new TypeError("listd: Idempotency-Keys need crypto.getRandomValues (any browser; Node 19+, or Node 18 with --experimental-global-webcrypto)");
  }
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  let time = Date.now();
  if (time <= lastKeyTime) {
    time = lastKeyTime;
    keyCounter += 1;
    if (keyCounter > 0xfff) { time += 1; keyCounter = 0; }
  } else {
    keyCounter = 0;
  }
  lastKeyTime = time;
  for (let index = 5; index >= 0; index--) {
    bytes[index] = time % 256;
    time = Math.floor(time / 256);
  }
  bytes[6] = 0x70 | (keyCounter >> 8);
  bytes[7] = keyCounter & 0xff;
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const hex = [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** `pendingWrites`: frozen, so one object stands for one state. */
function pendingSnapshot(ids, state, error) {
  return Object.freeze({ count: ids.length, ids: Object.freeze([...ids]), state, error });
}

const bySeq = (a, b) => a.seq - b.seq;

/**
 * Keeps the outbox's writes in memory: what a node process has. Shared by
 * two clients (one after the other), it stands for a store that outlives a
 * client.
 */
export class MemoryOutboxStorage {
  constructor() {
    /** @type {Map<string, object>} */
    this.records = new Map();
  }
  async load() { return [...this.records.values()].map((record) => ({ ...record })).sort(bySeq); }
  async put(record) { this.records.set(record.id, { ...record, headers: { ...record.headers } }); }
  async delete(id) { this.records.delete(id); }
}

/** One object store of an IndexedDB database, opened on first use: the outbox's and the snapshots' storages. */
class IndexedDBStore {
  constructor(name, factory, store, keyPath, durability, instead) {
    if (!factory) throw new TypeError(`listd: IndexedDB is not available here (use ${instead})`);
    this.name = name;
    this.factory = factory;
    this.store = store;
    this.keyPath = keyPath;
    this.durability = durability;
    this.database = undefined;
  }

  open() {
    if (!this.database) {
      this.database = new Promise((resolve, reject) => {
        const request = this.factory.open(this.name, 1);
        request.onupgradeneeded = () => request.result.createObjectStore(this.store, this.keyPath ? { keyPath: this.keyPath } : undefined);
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
      });
      this.database.catch(() => { this.database = undefined; });
    }
    return this.database;
  }

  async transaction(mode, work) {
    const database = await this.open();
    return new Promise((resolve, reject) => {
      const transaction = database.transaction(this.store, mode, mode === "readwrite" ? { durability: this.durability } : undefined);
      const request = work(transaction.objectStore(this.store));
      transaction.oncomplete = () => resolve(request.result);
      transaction.onerror = () => reject(transaction.error);
      transaction.onabort = () => reject(transaction.error || new Error("listd: the IndexedDB transaction was aborted"));
    });
  }

  /** Closes the database (the next use opens it again). */
  async close() {
    const database = await this.database?.catch(() => undefined);
    database?.close();
    this.database = undefined;
  }
}

/**
 * Keeps the outbox's writes in IndexedDB (database `name`, store `writes`),
 * so they outlive the page: a reload, a closed tab, a crash. Each write is
 * stored with strict durability before it is sent.
 */
export class IndexedDBOutboxStorage extends IndexedDBStore {
  constructor(name = "listd-outbox", factory = globalThis.indexedDB) {
    super(name, factory, "writes", "id", "strict", "MemoryOutboxStorage");
  }

  async load() { return (await this.transaction("readonly", (store) => store.getAll())).sort(bySeq); }
  async put(record) { await this.transaction("readwrite", (store) => store.put(record)); }
  async delete(id) { await this.transaction("readwrite", (store) => store.delete(id)); }
}

/**
 * Keeps each followed list's last state in memory (a follow's option
 * `snapshots`): shared by two follows (one after the other), it stands for a
 * store that outlives a page. Records are kept as given, not copied.
 */
export class MemorySnapshotStorage {
  constructor() {
    /** @type {Map<string, object>} */
    this.records = new Map();
  }
  async get(key) { return this.records.get(key); }
  async put(key, record) { this.records.set(key, record); }
  async delete(key) { this.records.delete(key); }
}

/**
 * Keeps each followed list's last state in IndexedDB (database `name`,
 * store `snapshots`, keyed by list and view), so a page opened offline shows
 * it at once. A cache: written with relaxed durability.
 */
export class IndexedDBSnapshotStorage extends IndexedDBStore {
  constructor(name = "listd-snapshots", factory = globalThis.indexedDB) {
    super(name, factory, "snapshots", undefined, "relaxed", "MemorySnapshotStorage");
  }

  get(key) { return this.transaction("readonly", (store) => store.get(key)); }
  async put(key, record) { await this.transaction("readwrite", (store) => store.put(record, key)); }
  async delete(key) { await this.transaction("readwrite", (store) => store.delete(key)); }
}

function defaultOutboxStorage() {
  return globalThis.indexedDB ? new IndexedDBOutboxStorage() : new MemoryOutboxStorage();
}

/**
 * The client's outbox (`ListdClient` option `outbox`): every write is stored
 * (`storage`) before it is sent, and the writes are sent one at a time, in
 * the order they were made, each until the server answers it: a network
 * error, a timeout, a 502-504 or a 401 keeps it and retries after a back-off
 * (the client's `retry` delays, without its attempt limit; at once on the
 * browser's `online` event or `flush()`). A 2xx or a 4xx removes it (a 4xx
 * rejects its promise and calls `onWriteRejected`). A new client over the
 * same storage sends what is left with the same keys, so a write the server
 * applied before the restart is answered from its record, not applied again.
 */
class Outbox {
  constructor(client, { storage, onWriteRejected } = {}) {
    this.client = client;
    this.storage = storage || defaultOutboxStorage();
    this.onWriteRejected = onWriteRejected;
    /** In order: `{record, saved, resolve?, reject?, cancelled?}`. */
    this.entries = [];
    this.nextSeq = 0;
    this.state = "idle";
    this.error = undefined;
    this.failures = 0;
    this.closed = false;
    this.running = false;
    this.sending = undefined;
    this.attempt = undefined;
    this.wake = undefined;
    this.snapshot = pendingSnapshot([], "idle", undefined);
    this.ready = Promise.resolve().then(() => this.storage.load()).then((records) => {
      // What an earlier client left: first, in its order.
      const loaded = [...records].sort(bySeq).map((record) => ({ record, saved: Promise.resolve() }));
      this.entries.unshift(...loaded);
      for (const { record } of loaded) this.nextSeq = Math.max(this.nextSeq, record.seq + 1);
      this.publish();
      this.kick();
    });
    this.ready.catch((error) => { this.error = error; this.publish(); });
    this.onOnline = () => this.flush();
    globalThis.addEventListener?.("online", this.onOnline);
  }

  /** Stores `record` and sends it in its turn; resolves to the server's answer. */
  async add(record, signal) {
    if (signal?.aborted) throw abortReason(signal);
    await this.ready;
    if (this.closed) throw closedError();
    const stored = { ...record, seq: this.nextSeq++, createdAt: Date.now() };
    const entry = { record: stored, saved: undefined };
    const done = new Promise((resolve, reject) => { entry.resolve = resolve; entry.reject = reject; });
    entry.saved = Promise.resolve().then(() => this.storage.put(stored));
    this.entries.push(entry);
    if (signal) {
      const onAbort = () => this.cancel(entry, abortReason(signal));
      signal.addEventListener("abort", onAbort, { once: true });
      done.then(() => signal.removeEventListener("abort", onAbort), () => signal.removeEventListener("abort", onAbort));
    }
    this.publish();
    this.kick();
    return done;
  }

  /** Drops `entry` (its signal aborted): at once if waiting, by aborting its attempt if being sent. */
  cancel(entry, reason) {
    entry.cancelled = reason;
    if (this.sending === entry) {
      this.attempt?.abort(reason);
      return;
    }
    const head = this.entries[0] === entry;
    void this.finish(entry, false, reason);
    if (head) this.wake?.(); // the drain waits for it: go on with the next
  }

  /** Sends now what waits for a back-off (the network is back, says the app or the browser). */
  flush() {
    this.wake?.();
    this.kick();
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    globalThis.removeEventListener?.("online", this.onOnline);
    this.attempt?.abort(closedError());
    this.wake?.();
    for (const entry of this.entries) entry.reject?.(closedError());
    this.setState("closed");
  }

  kick() {
    if (this.running || this.closed) return;
    this.running = true;
    this.drain().catch((error) => console.error("listd: the outbox stopped", error));
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.publish();
  }

  publish() {
    this.snapshot = pendingSnapshot(this.entries.map((entry) => entry.record.id), this.state, this.error);
    this.client.notifyPending();
  }

  async drain() {
    for (;;) {
      // Checked and cleared in one synchronous step: an `add` after it starts a new drain.
      if (this.closed || this.entries.length === 0) {
        this.running = false;
        if (!this.closed) this.setState("idle");
        return;
      }
      const entry = this.entries[0];
      try {
        await entry.saved;
      } catch (error) {
        await this.finish(entry, false, error); // never stored: never sent
        continue;
      }
      if (entry.cancelled) { await this.finish(entry, false, entry.cancelled); continue; }
      this.sending = entry;
      this.attempt = new AbortController();
      this.setState("sending");
      let value;
      let failure;
      let answered = false;
      try {
        value = await this.client.attemptWrite(entry.record, this.attempt.signal);
        answered = true;
      } catch (error) {
        failure = error;
      }
      this.sending = undefined;
      this.attempt = undefined;
      if (this.closed) { this.running = false; return; }
      if (entry.cancelled) { await this.finish(entry, false, entry.cancelled); continue; }
      if (answered || isAnswerMissing(failure)) {
        this.failures = 0;
        this.error = undefined;
        await this.finish(entry, true, answered ? value : null);
        continue;
      }
      if (isRetryable(failure) || failure?.status === 401) {
        this.failures += 1;
        this.error = failure;
        const delay = this.client.retryDelay(this.failures, failure);
        const { id, method, path } = entry.record;
        try {
          this.client.retry.onRetry?.({ id, method, path, attempt: this.failures, delay, error: failure });
        } catch (thrown) {
          console.error("listd: onRetry threw", thrown); // the app's: the write goes on
        }
        this.setState(failure.status === 401 ? "needs-auth" : "waiting");
        this.publish();
        await this.pause(delay);
        continue;
      }
      this.failures = 0;
      try { this.onWriteRejected?.(failure, { ...entry.record }); } catch (error) { console.error("listd: onWriteRejected threw", error); }
      await this.finish(entry, false, failure);
    }
  }

  /** Removes `entry` from the storage and the queue, then settles its promise. */
  async finish(entry, ok, result) {
    // A delete that fails leaves a record the next client resends: with its key, it is answered, not applied again.
    try { await this.storage.delete(entry.record.id); } catch { /* see above */ }
    const index = this.entries.indexOf(entry);
    if (index >= 0) this.entries.splice(index, 1);
    this.publish();
    if (ok) entry.resolve?.(result);
    else entry.reject?.(result);
  }

  pause(ms) {
    return new Promise((resolve) => {
      const clock = this.client.clock;
      const done = () => {
        clock.clearTimeout(timer);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const timer = clock.setTimeout(done, ms);
      this.wake = done;
    });
  }
}

function closedError() {
  return new ListdError(0, { title: "closed", detail: "the client was closed; the write stays in the outbox for the next client over its storage" });
}

/** The operations `Follower.patch` shows before the server answers. */
const optimisticOps = new Set([
  "insertSection", "updateSection", "moveSection", "deleteSection",
  "insertItem", "updateItem", "moveItem", "deleteItem",
]);

/** Why `op` cannot be shown before the server answers, or null when it can. */
function unshowable(op) {
  if (!optimisticOps.has(op?.op)) return "not a list operation";
  if (op.op === "insertItem" && typeof op.item?.id !== "string") return "insertItem needs the item's id";
  if (op.op === "insertSection") {
    if (typeof op.section?.id !== "string") return "insertSection needs the section's id";
    if ((op.section.items || []).some((item) => typeof item?.id !== "string")) return "insertSection needs every item's id";
  }
  return null;
}

/** The ids an operation touches: `{items, sections}`. */
function opIDs(op) {
  switch (op.op) {
    case "insertItem": return { items: [op.item.id], sections: [] };
    case "updateItem": case "moveItem": case "deleteItem": return { items: [op.id], sections: [] };
    case "insertSection": return { items: (op.section.items || []).map((item) => item.id), sections: [op.section.id] };
    default: return { items: [], sections: [op.id] };
  }
}

/** Whether two JSON values are equal (object keys in any order). */
function sameJSON(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((value, index) => sameJSON(value, b[index]));
  const keys = Object.keys(a).filter((key) => a[key] !== undefined);
  const other = Object.keys(b).filter((key) => b[key] !== undefined);
  return keys.length === other.length && keys.every((key) => sameJSON(a[key], b[key]));
}

function findItem(sections, id) {
  for (let section = 0; section < sections.length; section++) {
    const index = sections[section].items.findIndex((item) => item.id === id);
    if (index >= 0) return [section, index];
  }
  return null;
}

/**
 * Operations replayed over `sections` as the server applies them, one stage
 * each with the stage that undoes it. An operation that does not apply (its
 * item or section is there already, or gone, or its position is out of
 * range) is left out: it is the server's to accept or refuse, and replaying
 * an applied write changes nothing.
 */
function replayOps(sections, ops) {
  const steps = [];
  const sectionIndex = (id) => sections.findIndex((candidate) => candidate.id === id);
  for (const op of ops) {
    let step = null;
    if (op.op === "insertSection") {
      const count = sections.length;
      const index = op.at ?? count;
      const items = (op.section.items || []).map((item) => ({ id: item.id, model: item.model ?? {} }));
      const ids = new Set(items.map((item) => item.id));
      if (sectionIndex(op.section.id) < 0 && ids.size === items.length && items.every((item) => !findItem(sections, item.id))
        && isIndex(index) && index >= 0 && index <= count) {
        const section = { id: op.section.id, model: op.section.model ?? {}, items };
        step = { stage: { sectionInserted: [{ at: index, section }] }, inverse: { sectionDeleted: [index] } };
      }
    } else if (op.op === "updateSection") {
      const at = sectionIndex(op.id);
      if (at >= 0 && !sameJSON(sections[at].model, op.model)) {
        step = { stage: { sectionUpdated: [{ at, model: op.model }] }, inverse: { sectionUpdated: [{ at, model: sections[at].model }] } };
      }
    } else if (op.op === "moveSection") {
      const from = sectionIndex(op.id);
      if (from >= 0 && isIndex(op.to) && op.to >= 0 && op.to < sections.length && op.to !== from) {
        step = { stage: { sectionMoved: [{ from, to: op.to }] }, inverse: { sectionMoved: [{ from: op.to, to: from }] } };
      }
    } else if (op.op === "deleteSection") {
      const at = sectionIndex(op.id);
      if (at >= 0) step = { stage: { sectionDeleted: [at] }, inverse: { sectionInserted: [{ at, section: sections[at] }] } };
    } else if (op.op === "insertItem") {
      const section = sectionIndex(op.section);
      const count = section >= 0 ? sections[section].items.length : -1;
      const index = op.at ?? count;
      if (section >= 0 && !findItem(sections, op.item.id) && isIndex(index) && index >= 0 && index <= count) {
        const item = { id: op.item.id, model: op.item.model ?? {} };
        step = { stage: { itemInserted: [{ at: [section, index], item }] }, inverse: { itemDeleted: [[section, index]] } };
      }
    } else {
      const at = findItem(sections, op.id);
      if (at && op.op === "updateItem") {
        const old = sections[at[0]].items[at[1]];
        if (!sameJSON(old.model, op.model)) {
          step = { stage: { itemUpdated: [{ at, model: op.model }] }, inverse: { itemUpdated: [{ at, model: old.model }] } };
        }
      } else if (at && op.op === "deleteItem") {
        const old = sections[at[0]].items[at[1]];
        step = { stage: { itemDeleted: [at] }, inverse: { itemInserted: [{ at, item: old }] } };
      } else if (at && op.op === "moveItem") {
        const section = op.section === undefined ? at[0] : sectionIndex(op.section);
        const count = section >= 0 ? sections[section].items.length - (section === at[0] ? 1 : 0) : -1;
        if (section >= 0 && isIndex(op.to) && op.to >= 0 && op.to <= count && !(section === at[0] && op.to === at[1])) {
          const to = [section, op.to];
          step = { stage: { itemMoved: [{ from: at, to }] }, inverse: { itemMoved: [{ from: to, to: at }] } };
        }
      }
    }
    if (!step) continue;
    sections = applyStage(sections, step.stage);
    steps.push(step);
  }
  return { sections, steps };
}

// MARK: Views, evaluated in the client (optimistic writes in a followed view)

/**
 * A view's query text (`viewQuery`'s canonical form, or any the server
 * takes) read as the server reads it (API.md, Views): `{conditions: [{path,
 * value}], q, order: {path, descending} | null, group: path | null, limit}`.
 */
export function parseView(text) {
  const view = { conditions: [], q: null, order: null, group: null, limit: null };
  const decode = (part) => decodeURIComponent(part.replace(/\+/g, " "));
  for (const pair of String(text).replace(/^\?/, "").split("&")) {
    if (!pair) continue;
    const equals = pair.indexOf("=");
    const name = decode(equals < 0 ? pair : pair.slice(0, equals));
    const value = equals < 0 ? "" : decode(pair.slice(equals + 1));
    if (name === "where") {
      const colon = value.indexOf(":");
      if (colon < 0) throw new TypeError(`view: where must be path:value, got ${JSON.stringify(value)}`);
      const raw = value.slice(colon + 1);
      let literal;
      try { literal = JSON.parse(raw); } catch { literal = raw; }
      if (literal !== null && typeof literal === "object") literal = raw; // arrays and objects are read as text
      view.conditions.push({ path: value.slice(0, colon).split("."), value: literal });
    } else if (name === "q") view.q = value;
    else if (name === "order") {
      const descending = value.startsWith("-");
      view.order = { path: (descending ? value.slice(1) : value).split("."), descending };
    } else if (name === "group") view.group = value.split(".");
    else if (name === "limit") view.limit = Number(value);
  }
  return view;
}

/** The value at `path` in a model (`tags.0` indexes an array), or undefined when missing. */
function valueAt(model, path) {
  let current = model;
  for (const component of path) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]{0,17})$/.test(component) || Number(component) >= current.length) return undefined;
      current = current[Number(component)];
    } else if (current !== null && typeof current === "object" && Object.prototype.hasOwnProperty.call(current, component)) {
      current = current[component];
    } else {
      return undefined;
    }
  }
  return current;
}

/** Canonical JSON text: object keys sorted by code point, no white space (a view group's section id). */
function canonicalText(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalText).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).filter((key) => value[key] !== undefined).sort(compareCodePoints);
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalText(value[key])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Strings by Unicode code points (UTF-16 units order surrogates below U+E000; this does not). */
function compareCodePoints(a, b) {
  const count = Math.min(a.length, b.length);
  for (let index = 0; index < count; index++) {
    const x = a.charCodeAt(index);
    const y = b.charCodeAt(index);
    if (x === y) continue;
    const lift = (unit) => (unit >= 0xd800 && unit <= 0xdfff ? unit + 0x2000 : unit >= 0xe000 ? unit - 0x800 : unit);
    return lift(x) - lift(y);
  }
  return a.length - b.length;
}

const valueRank = (value) => (value === undefined || value === null ? 0 : value === false ? 1 : value === true ? 2
  : typeof value === "number" ? 3 : typeof value === "string" ? 4 : Array.isArray(value) ? 5 : 6);

/** The contract's order on JSON values: null < false < true < numbers < strings < arrays < objects. */
function compareValues(a, b) {
  const ranks = valueRank(a) - valueRank(b);
  if (ranks !== 0) return ranks;
  if (typeof a === "number") return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === "string") return compareCodePoints(a, b);
  if (Array.isArray(a)) {
    for (let index = 0; index < Math.min(a.length, b.length); index++) {
      const order = compareValues(a[index], b[index]);
      if (order !== 0) return order;
    }
    return a.length - b.length;
  }
  if (a !== null && typeof a === "object") {
    const x = Object.keys(a).sort(compareCodePoints);
    const y = Object.keys(b).sort(compareCodePoints);
    for (let index = 0; index < Math.min(x.length, y.length); index++) {
      const keys = compareCodePoints(x[index], y[index]);
      if (keys !== 0) return keys;
      const values = compareValues(a[x[index]], b[y[index]]);
      if (values !== 0) return values;
    }
    return x.length - y.length;
  }
  return 0;
}

/** Whether some string in `value` (keys not included) holds `text`, ignoring case. */
function containsText(value, text) {
  if (typeof value === "string") return value.toLowerCase().includes(text);
  if (Array.isArray(value)) return value.some((element) => containsText(element, text));
  if (value !== null && typeof value === "object") return Object.values(value).some((element) => containsText(element, text));
  return false;
}

/** Whether an item with `model` is in the view (before any window). */
function viewMatches(view, model) {
  for (const { path, value } of view.conditions) {
    const found = valueAt(model, path);
    if (found === undefined || canonicalText(found) !== canonicalText(value)) return false;
  }
  return view.q === null || containsText(model, view.q.toLowerCase());
}

/** The view's order on two items of one section: the order value (ties by id), or 0 without `order`. */
function compareInView(view, a, b) {
  if (!view.order) return 0;
  const x = valueAt(a.model, view.order.path);
  const y = valueAt(b.model, view.order.path);
  const order = view.order.descending ? compareValues(y, x) : compareValues(x, y);
  return order !== 0 ? order : compareCodePoints(a.id, b.id);
}

/**
 * `sections` (a view's) with `item` placed where the view puts it: in its
 * group's section (made when new) or in the list section `sectionID`, by the
 * view's order, or at `at` when the view has none (null: not known here).
 * Returns the new sections, or null when the place cannot be known.
 */
function placeInView(view, sections, item, sectionID, at) {
  let index;
  if (view.group) {
    const value = valueAt(item.model, view.group) ?? null;
    const id = canonicalText(value);
    index = sections.findIndex((section) => section.id === id);
    if (index < 0) {
      index = sections.findIndex((section) => compareValues(section.model?.value ?? null, value) > 0);
      if (index < 0) index = sections.length;
      sections = [...sections.slice(0, index), { id, model: { value }, items: [] }, ...sections.slice(index)];
    }
  } else {
    index = sections.findIndex((section) => section.id === sectionID);
    if (index < 0) return null;
  }
  const items = sections[index].items;
  let position;
  if (view.order) {
    position = items.findIndex((other) => compareInView(view, item, other) < 0);
    if (position < 0) position = items.length;
  } else if (at === "end") position = items.length;
  else if (isIndex(at) && at >= 0 && at <= items.length) position = at;
  else return null;
  const next = sections.slice();
  next[index] = { ...sections[index], items: [...items.slice(0, position), item, ...items.slice(position)] };
  return next;
}

/** `sections` without the item at `path`; a group left empty goes with it. */
function removeFromView(view, sections, path) {
  const next = sections.slice();
  const items = sections[path[0]].items.filter((_, index) => index !== path[1]);
  if (view.group && items.length === 0) next.splice(path[0], 1);
  else next[path[0]] = { ...sections[path[0]], items };
  return next;
}

/**
 * One operation applied to a view's sections as the server would show it,
 * from what the view holds: the new sections (the same object when the view
 * does not change), or null when the view does not hold what it would take
 * to know (an item entering with no order to place it by, a group's items by
 * list position, a section deleted from a grouped view, …).
 */
function viewOp(view, sections, op) {
  const at = op.id === undefined ? null : findItem(sections, op.id);
  switch (op.op) {
    case "insertItem": {
      if (findItem(sections, op.item.id)) return sections; // the server's to refuse
      const item = { id: op.item.id, model: op.item.model ?? {} };
      if (!view.group && !sections.some((section) => section.id === op.section)) return sections;
      if (!viewMatches(view, item.model)) return sections;
      if (view.group && !view.order) return null;
      return placeInView(view, sections, item, op.section, op.at === undefined ? "end" : op.at === 0 ? 0 : null);
    }
    case "updateItem": {
      const item = { id: op.id, model: op.model };
      if (!at) {
        if (!viewMatches(view, item.model)) return sections;
        return view.group && view.order ? placeInView(view, sections, item) : null;
      }
      const old = sections[at[0]].items[at[1]];
      if (sameJSON(old.model, op.model)) return sections;
      const without = removeFromView(view, sections, at);
      if (!viewMatches(view, item.model)) return without;
      if (view.order) return placeInView(view, without, item, sections[at[0]].id);
      if (view.group && canonicalText(valueAt(op.model, view.group) ?? null) !== sections[at[0]].id) return null;
      const next = sections.slice();
      next[at[0]] = { ...sections[at[0]], items: sections[at[0]].items.map((other, index) => (index === at[1] ? item : other)) };
      return next;
    }
    case "deleteItem":
      return at ? removeFromView(view, sections, at) : sections;
    case "moveItem": {
      if (!at) return sections;
      if (view.group) return view.order ? sections : null;
      const target = op.section ?? sections[at[0]].id;
      if (!sections.some((section) => section.id === target)) return sections;
      if (!view.order) return null;
      if (target === sections[at[0]].id) return sections;
      return placeInView(view, removeFromView(view, sections, at), sections[at[0]].items[at[1]], target);
    }
    case "insertSection": {
      const items = (op.section.items || []).map((item) => ({ id: item.id, model: item.model ?? {} }))
        .filter((item) => viewMatches(view, item.model));
      if (view.group) {
        if (items.length && !view.order) return null;
        return items.reduce((next, item) => next && placeInView(view, next, item), sections);
      }
      if (sections.some((section) => section.id === op.section.id)) return sections;
      const index = op.at ?? sections.length;
      if (!isIndex(index) || index < 0 || index > sections.length) return sections;
      if (view.order) items.sort((a, b) => compareInView(view, a, b));
      const section = { id: op.section.id, model: op.section.model ?? {}, items };
      return [...sections.slice(0, index), section, ...sections.slice(index)];
    }
    case "updateSection": {
      if (view.group) return sections;
      const index = sections.findIndex((section) => section.id === op.id);
      if (index < 0 || sameJSON(sections[index].model, op.model)) return sections;
      const next = sections.slice();
      next[index] = { ...sections[index], model: op.model };
      return next;
    }
    case "moveSection": {
      if (view.group) return view.order ? sections : null;
      const from = sections.findIndex((section) => section.id === op.id);
      if (from < 0 || !isIndex(op.to) || op.to < 0 || op.to >= sections.length || op.to === from) return sections;
      const next = sections.slice();
      const [section] = next.splice(from, 1);
      next.splice(op.to, 0, section);
      return next;
    }
    case "deleteSection": {
      if (view.group) return null;
      return sections.filter((section) => section.id !== op.id);
    }
    default:
      return null;
  }
}

/** Indexes (into `values`) of a longest increasing subsequence. */
function longestIncreasing(values) {
  const tails = [];
  const previous = new Array(values.length);
  for (let index = 0; index < values.length; index++) {
    let low = 0;
    let high = tails.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (values[tails[middle]] < values[index]) low = middle + 1; else high = middle;
    }
    previous[index] = low > 0 ? tails[low - 1] : -1;
    tails[low] = index;
  }
  const kept = new Set();
  for (let index = tails.length ? tails[tails.length - 1] : -1; index >= 0; index = previous[index]) kept.add(index);
  return kept;
}

/**
 * The stages that take `before` to `after` (sections and items matched by
 * id), valid as UIKit batch updates: section models, then item models, then
 * one stage of deletes, inserts and moves (the fewest moves: what is not in
 * a longest run kept in order).
 */
function diffSections(before, after) {
  const stages = [];
  const afterSection = new Map(after.map((section, index) => [section.id, index]));
  const beforeSection = new Map(before.map((section, index) => [section.id, index]));
  const sectionUpdated = [];
  before.forEach((section, index) => {
    const other = afterSection.get(section.id);
    if (other !== undefined && !sameJSON(section.model, after[other].model)) sectionUpdated.push({ at: index, model: after[other].model });
  });
  if (sectionUpdated.length) stages.push({ sectionUpdated });
  const itemAfter = new Map();
  after.forEach((section, s) => section.items.forEach((item, i) => itemAfter.set(item.id, [s, i, item])));
  const itemBefore = new Map();
  before.forEach((section, s) => section.items.forEach((item, i) => itemBefore.set(item.id, [s, i, item])));
  // An item is kept (updated, moved or left) when both its sections are kept; else deleted and inserted.
  const kept = (id) => {
    const from = itemBefore.get(id);
    const to = itemAfter.get(id);
    return from && to && afterSection.has(before[from[0]].id) && beforeSection.has(after[to[0]].id);
  };
  const itemUpdated = [];
  for (const [id, [s, i, item]] of itemBefore) {
    if (kept(id) && !sameJSON(item.model, itemAfter.get(id)[2].model)) itemUpdated.push({ at: [s, i], model: itemAfter.get(id)[2].model });
  }
  if (itemUpdated.length) stages.push({ itemUpdated });
  const stage = {};
  const add = (field, entry) => { (stage[field] ||= []).push(entry); };
  before.forEach((section, index) => { if (!afterSection.has(section.id)) add("sectionDeleted", index); });
  after.forEach((section, index) => { if (!beforeSection.has(section.id)) add("sectionInserted", { at: index, section }); });
  const staying = before.map((section, index) => [index, afterSection.get(section.id)]).filter(([, to]) => to !== undefined);
  const inOrder = longestIncreasing(staying.map(([, to]) => to));
  staying.forEach(([from, to], index) => { if (!inOrder.has(index)) add("sectionMoved", { from, to }); });
  for (const [id, [s, i]] of itemBefore) {
    if (afterSection.has(before[s].id) && !kept(id)) add("itemDeleted", [s, i]);
  }
  for (const [id, [s, i, item]] of itemAfter) {
    if (beforeSection.has(after[s].id) && !kept(id)) add("itemInserted", { at: [s, i], item });
  }
  before.forEach((section, s) => {
    const target = afterSection.get(section.id);
    if (target === undefined) return;
    const stayed = section.items.map((item, i) => [i, itemAfter.get(item.id)])
      .filter(([i, to]) => to && to[0] === target && kept(section.items[i].id));
    const order = longestIncreasing(stayed.map(([, to]) => to[1]));
    stayed.forEach(([i, to], index) => { if (!order.has(index)) add("itemMoved", { from: [s, i], to: [to[0], to[1]] }); });
    for (const [i, item] of section.items.entries()) {
      const to = itemAfter.get(item.id);
      if (to && kept(item.id) && to[0] !== target) add("itemMoved", { from: [s, i], to: [to[0], to[1]] });
    }
  });
  if (Object.keys(stage).length) stages.push(stage);
  return stages;
}

/**
 * Operations replayed over a view's sections as the server would show
 * them (`viewOp`), one step per operation that changes what shows, each
 * with its stages and the stages that undo it. An operation the view cannot
 * place, or that does not apply, is left out.
 */
/**
 * `viewOp` in a view with a window (`limit`): the held items are the window,
 * and, once it is full, the items past its edge are not held here. So a write
 * shows only where that is known: an item placed past the last held item of a
 * full window is outside it, and an item pushed past the edge leaves it (the
 * last ones are dropped, and a group left with none goes); but an item that
 * leaves a full window (deleted, no longer matching) would be replaced by one
 * from past the edge, an item whose new value puts it last in a full window
 * may belong past the edge, and a section moved in a full window of the
 * list's sections, or an item moved that is not held, may bring items from
 * past the edge: null for those (not shown here).
 */
function windowedViewOp(view, sections, op) {
  const next = viewOp(view, sections, op);
  if (view.limit === null || next === null) return next;
  const held = itemCount(sections);
  // An item not held may be past a full window's edge (its model is not held here): moved, it may come in.
  if (op.op === "moveItem" && held >= view.limit && !findItem(sections, op.id)) return null;
  if (next === sections) return next;
  const count = itemCount(next);
  if (count > view.limit) return dropLastItems(view, next, count - view.limit);
  if (held < view.limit) return next; // not full: every item of the view is held
  if (count < view.limit) return null;
  // The list's sections moved: the window is a prefix in their order, so items from past its edge may come in.
  if (op.op === "moveSection" && !view.group) return null;
  const before = lastItem(sections);
  const after = lastItem(next);
  return before && after && before.section === after.section && before.item.id === after.item.id
    && sameJSON(before.item.model, after.item.model) ? next : null;
}

function itemCount(sections) {
  return sections.reduce((count, section) => count + section.items.length, 0);
}

/** The last item of `sections`, with its section's id. */
function lastItem(sections) {
  for (let index = sections.length - 1; index >= 0; index--) {
    const items = sections[index].items;
    if (items.length) return { section: sections[index].id, item: items[items.length - 1] };
  }
  return null;
}

/** `sections` without their last `count` items; a group left empty goes (a list's section stays). */
function dropLastItems(view, sections, count) {
  const next = sections.slice();
  for (let index = next.length - 1; index >= 0 && count > 0; index--) {
    const items = next[index].items;
    if (!items.length) continue;
    const kept = items.slice(0, Math.max(0, items.length - count));
    count -= items.length - kept.length;
    next[index] = { ...next[index], items: kept };
  }
  return view.group ? next.filter((section) => section.items.length) : next;
}

function replayViewOps(view, sections, ops) {
  const steps = [];
  for (const op of ops) {
    const next = windowedViewOp(view, sections, op);
    if (next === null || next === sections || sameJSON(next, sections)) continue;
    steps.push({ stages: diffSections(sections, next), inverse: diffSections(next, sections) });
    sections = next;
  }
  return { sections, steps };
}

/** What a snapshot storage keeps of a follow: the confirmed state, with what it is of. */
function storedRecord(list, view, held) {
  const { fromCache, pending, pendingSections, ...snapshot } = held;
  return { format: 1, list, view, savedAt: Date.now(), snapshot };
}

/** A stored record's state, marked `fromCache`, or null for none or one that is not sound. */
function restoredSnapshot(record, list, view) {
  try {
    const snapshot = record?.snapshot;
    if (!snapshot || record.format !== 1 || record.list !== list || record.view !== view) return null;
    if (typeof snapshot.epoch !== "string" || !snapshot.epoch || !Number.isSafeInteger(snapshot.version) || snapshot.version < 0) return null;
    const sectionIDs = new Set();
    const itemIDs = new Set();
    const fresh = (ids, id) => typeof id === "string" && !ids.has(id) && !!ids.add(id);
    const sound = Array.isArray(snapshot.sections) && snapshot.sections.every((section) => section && fresh(sectionIDs, section.id)
      && Array.isArray(section.items) && section.items.every((item) => item && fresh(itemIDs, item.id)));
    return sound ? { ...snapshot, id: list, fromCache: true } : null;
  } catch {
    return null;
  }
}

/** Slack on a long-poll's deadline beyond the wait the client asked for: one heartbeat's interval. */
const pollGrace = 15000;

/**
 * A live follow of one list (or view): see `ListdClient.follow`.
 *
 * `state` is one of "connecting", "live" (on the event stream), "polling"
 * (live over long-poll), "reconnecting" (waiting out a back-off),
 * "needs-auth" (the token was refused: with a provider, it is asked again
 * and the follow retries; with a static token the follow ends in this
 * state), "closed" (stopped, aborted, or ended by an error in `error`).
 */
export class Follower {
  constructor(client, list, options = {}) {
    if (options.since !== undefined) {
      // Stages apply to the snapshot they start from: without its sections they
      // would be applied to the wrong table, without its epoch to another list.
      if (!Array.isArray(options.sections)) {
        throw new TypeError("follow: since needs sections, the snapshot's sections at that version");
      }
      if (typeof options.epoch !== "string" || options.epoch === "") {
        throw new TypeError("follow: since needs epoch, the snapshot's epoch");
      }
    }
    this.client = client;
    this.list = list;
    this.options = options;
    this.clock = options.clock || client.clock || systemClock;
    this.snapshot = null;
    this.lastEventID = undefined;
    this.transport = options.transport || "auto";
    /** Until when (clock ms) "auto" long-polls after the stream was answered with something else. */
    this.pollUntil = -Infinity;
    this.failures = 0;
    this.controller = new AbortController();
    this.stopped = false;
    this.state = "connecting";
    /** The error that ended the follow, if one did. */
    this.error = undefined;
    /** Whether the list is known to have existed (a 404 then means deleted, not never there). */
    this.existed = false;
    /** Whether the server said it keeps no history from the version held (410): refetch the snapshot. */
    this.expired = false;
    this.deletedReported = false;
    this.listeners = new Set();
    this.iterators = new Set();
    /** Optimistic writes (`patch`) not yet confirmed, oldest first: `{id, ops, version}`. */
    this.pending = [];
    /** What shows while writes are pending: the confirmed snapshot with them replayed over it. */
    this.shown = undefined;
    /** The stages that undo `shown` back to the confirmed snapshot, last first. */
    this.undo = [];
    /** The view's query text, empty for the whole list. */
    this.view = viewQuery(options.view);
    /** The view as `patch` evaluates it (null for the whole list, or a view it cannot read). */
    this.viewSpec = null;
    if (this.view) { try { this.viewSpec = parseView(this.view); } catch { this.viewSpec = null; } }
    /** Where the last state is kept (`snapshots`), under the list's id and the view's query. */
    this.storage = options.snapshots === false ? undefined : options.snapshots ?? client.snapshots;
    this.storageKey = this.view ? `${list}?${this.view}` : list;
    /** What the storage holds, as far as this follow knows: `{epoch, version, sections}`, null (deleted), undefined (unknown). */
    this.stored = undefined;
    this.saveTimer = undefined;
    this.saveWanted = false;
    /** The write in flight, if any. */
    this.saving = undefined;
    this.lastSaved = -Infinity;
    if (options.since !== undefined) {
      this.snapshot = { id: list, epoch: options.epoch, version: options.since, sections: options.sections };
      this.existed = true;
    }
    this.getSnapshot = this.getSnapshot.bind(this);
    this.subscribe = this.subscribe.bind(this);
    this.stop = this.stop.bind(this);
    const signal = options.signal;
    if (signal?.aborted) {
      this.stopped = true;
      this.state = "closed";
      this.done = Promise.resolve();
      return;
    }
    if (signal) {
      this.onAbort = () => this.stop();
      signal.addEventListener("abort", this.onAbort, { once: true });
    }
    const page = globalThis.document;
    if (this.storage && page?.addEventListener) {
      // A page being hidden may be closed next: write the last state now.
      this.onHide = () => { if (page.visibilityState === "hidden") this.flushSnapshot(); };
      page.addEventListener("visibilitychange", this.onHide);
    }
    // Settles once the follow has ended and its last state is written.
    this.done = this.run().then(() => this.saving);
  }

  /** Stops following: no request after this, every iterator ends. */
  stop() {
    this.end(undefined, "closed");
  }

  end(error, state) {
    if (this.stopped) return;
    this.stopped = true;
    this.error = error;
    this.options.signal?.removeEventListener("abort", this.onAbort);
    if (this.onHide) globalThis.document.removeEventListener("visibilitychange", this.onHide);
    this.controller.abort();
    if (error) this.call("onError", error);
    this.setState(state);
    for (const iterator of this.iterators) iterator.wake();
    this.flushSnapshot();
  }

  /**
   * The data held now: the snapshot (its `sections` as the UI should show
   * them), or null before the first one and after a deletion. The same
   * object until the data changes, as `useSyncExternalStore` requires.
   * With `snapshots`, it may be the state stored by an earlier follow, with
   * `fromCache: true` until the server answers (then the same data without
   * it, or the server's change or reset).
   */
  getSnapshot() {
    return this.shown ?? this.snapshot;
  }

  /**
   * An optimistic write: `ops` (any list operation; inserts name the ids of
   * what they insert: `insertItem`'s item, `insertSection`'s section and its
   * items) show at once in `getSnapshot()`, as one "changes" update with
   * `answer.optimistic`, the snapshot's `pending` and `pendingSections`
   * naming the items and sections of writes not yet confirmed; then they are
   * sent with `client.patchList` (retried, or queued in the outbox). The
   * server's change that carries them shows nothing new; a rejection takes
   * them back in one "changes" update; a change of someone else's while they
   * are pending shows as one update (undo, the server's stages, redo).
   * Resolves or rejects as `patchList` does.
   *
   * In a view, the write shows where the view puts it (its filter, order,
   * groups and window, evaluated here: `parseView`): in a window (`limit`),
   * an item placed past its edge is outside it, and items pushed past the
   * edge leave it. When where it lands depends on what the view does not
   * hold (an item leaving a full window, whose place an item from past the
   * edge takes; an item whose new value puts it last in a full window; an
   * item entering a view without `order`; a move in an unordered view; a
   * section deleted from a grouped view), it rejects with a TypeError and
   * sends nothing: write with `client.patchList`, and the view shows it
   * when the server sends it.
   * @param {object[]} ops
   * @param {{ifMatch?: number, signal?: AbortSignal, idempotencyKey?: string}} [options]
   */
  patch(ops, options = {}) {
    if (this.view && !this.viewSpec) {
      return Promise.reject(new TypeError(`follow: patch cannot read the view ${JSON.stringify(this.view)}: write with client.patchList`));
    }
    if (!this.snapshot) return Promise.reject(new TypeError("follow: patch needs the list's snapshot: wait for the first one"));
    if (!Array.isArray(ops)) return Promise.reject(new TypeError("follow: patch takes an array of operations"));
    for (const op of ops) {
      const why = unshowable(op);
      if (why) return Promise.reject(new TypeError(`follow: patch cannot show ${JSON.stringify(op)}: ${why}`));
    }
    if (this.viewSpec) {
      let sections = this.getSnapshot().sections;
      for (const op of ops) {
        const next = windowedViewOp(this.viewSpec, sections, op);
        if (next === null) {
          return Promise.reject(new TypeError(`follow: patch cannot show ${JSON.stringify(op)} in this view: where it lands depends on what the view does not hold (the list's order, or items outside it); write with client.patchList`));
        }
        sections = next;
      }
    }
    const write = { id: options.idempotencyKey ?? idempotencyKey(), ops, version: undefined };
    const before = this.getSnapshot();
    this.pending.push(write);
    this.showPending(before, undefined, true);
    const sent = this.client.patchList(this.list, ops, { ...options, idempotencyKey: write.id });
    sent.then((answer) => {
      // Confirmed once the follow holds the version the write made (its change may come before or
      // after this answer): a PATCH answers with its change (`to`).
      write.version = typeof answer?.to === "number" ? answer.to : typeof answer?.version === "number" ? answer.version : -Infinity;
      this.showPending(this.getSnapshot());
    }, () => {
      const index = this.pending.indexOf(write);
      if (index < 0) return;
      const shown = this.getSnapshot();
      this.pending.splice(index, 1);
      this.showPending(shown);
    });
    return sent;
  }

  /**
   * Shows the confirmed snapshot with the pending writes replayed over it.
   * `before` is what showed; `server`, the server's answer that moved the
   * confirmed snapshot, if one did. Delivers one "changes" update for the
   * difference, and none when nothing visible changed.
   */
  showPending(before, server, optimistic = false) {
    const confirmed = this.snapshot;
    this.pending = this.pending.filter((write) => !(write.version !== undefined && confirmed && write.version <= confirmed.version));
    if (!confirmed) { this.shown = undefined; this.undo = []; return; }
    let replayed;
    if (this.viewSpec) {
      // A view's stream says nothing of a write that left the view alone: an answered write that
      // shows nothing in it is done (if the view did change after all, its change comes as any other).
      let sections = confirmed.sections;
      const steps = [];
      this.pending = this.pending.filter((write) => {
        const own = replayViewOps(this.viewSpec, sections, write.ops);
        if (write.version !== undefined && own.steps.length === 0) return false;
        sections = own.sections;
        steps.push(...own.steps);
        return true;
      });
      replayed = { sections, steps };
    } else {
      replayed = replayOps(confirmed.sections, this.pending.flatMap((write) => write.ops));
    }
    const touched = this.pending.flatMap((write) => write.ops.map(opIDs));
    const pendingIDs = {
      pending: [...new Set(touched.flatMap((ids) => ids.items))],
      pendingSections: [...new Set(touched.flatMap((ids) => ids.sections))],
    };
    const stages = [...this.undo, ...(server ? server.stages || [] : []), ...replayed.steps.flatMap((step) => step.stages ?? [step.stage])];
    this.undo = replayed.steps.map((step) => step.inverse).reverse().flat();
    if (before && sameJSON(before.sections, replayed.sections)) {
      // Nothing visible changed (the echo of a pending write): keep the sections object, say nothing.
      this.snapshot = { ...confirmed, sections: sameJSON(before.sections, confirmed.sections) ? before.sections : confirmed.sections };
      this.shown = this.pending.length ? { ...this.snapshot, sections: before.sections, ...pendingIDs } : undefined;
      this.notify();
      return;
    }
    this.shown = this.pending.length ? { ...confirmed, sections: replayed.sections, ...pendingIDs } : undefined;
    if (!before) return; // a new snapshot: delivered whole by the caller
    let states;
    try {
      states = [before.sections];
      for (const [index, stage] of stages.entries()) states.push(applyStage(states[states.length - 1], stage, index));
    } catch (error) {
      if (!(error instanceof StageError)) throw error;
      this.deliver({ type: "reset", snapshot: this.getSnapshot(), reason: "rebase" });
      return;
    }
    const answer = { list: this.list, epoch: confirmed.epoch, from: server ? server.from : confirmed.version, to: confirmed.version, stages };
    if (optimistic) answer.optimistic = true;
    this.deliver({ type: "changes", answer, states, snapshot: this.getSnapshot() });
  }

  /**
   * Calls `listener()` after every change of `getSnapshot()` or `state`.
   * Returns the function that unsubscribes it.
   * @param {() => void} listener
   * @returns {() => void}
   */
  subscribe(listener) {
    const entry = { listener };
    this.listeners.add(entry);
    return () => { this.listeners.delete(entry); };
  }

  /**
   * The updates as an async iterator: `{type: "snapshot", snapshot}`,
   * `{type: "changes", answer, states, snapshot}`, `{type: "reset", snapshot,
   * reason}`, `{type: "deleted", list}`. It starts with the snapshot held, if
   * any; it ends when the follow does, and throws the error that ended it.
   * Leaving a `for await` loop detaches the iterator; it does not stop the
   * follow (`stop()` or the signal does). Updates wait in the iterator until
   * read.
   */
  updates() {
    const queue = [];
    let waiting = null;
    let open = true;
    let threw = false;
    const entry = {
      push: (update) => { queue.push(update); entry.wake(); },
      wake: () => { const resume = waiting; waiting = null; resume?.(); },
    };
    if (this.snapshot) queue.push({ type: "snapshot", snapshot: this.snapshot });
    this.iterators.add(entry);
    const finish = () => { open = false; this.iterators.delete(entry); return { done: true, value: undefined }; };
    const iterator = {
      next: async () => {
        for (;;) {
          if (queue.length > 0) return { done: false, value: queue.shift() };
          if (!open) return { done: true, value: undefined };
          if (this.stopped) {
            finish();
            if (this.error && !threw) { threw = true; throw this.error; }
            return { done: true, value: undefined };
          }
          await new Promise((resolve) => { waiting = resolve; });
        }
      },
      return: async () => finish(),
      [Symbol.asyncIterator]() { return iterator; },
    };
    return iterator;
  }

  [Symbol.asyncIterator]() {
    return this.updates();
  }

  setState(state, detail) {
    const changed = this.state !== state;
    this.state = state;
    this.call("onState", state, detail);
    if (changed) this.notify();
  }

  /** Calls the option `name`; a callback that throws is reported and returns false. */
  call(name, ...args) {
    const callback = this.options[name];
    if (!callback) return true;
    try {
      callback(...args);
      return true;
    } catch (error) {
      this.reportListenerError(error, name);
      return false;
    }
  }

  reportListenerError(error, name) {
    if (this.options.onListenerError) {
      try { this.options.onListenerError(error, name); } catch { /* nowhere left to report it */ }
    } else {
      console.error(`listd: ${name} threw`, error);
    }
  }

  notify() {
    this.saveLater();
    for (const entry of [...this.listeners]) {
      if (!this.listeners.has(entry)) continue;
      try { entry.listener(); } catch (error) { this.reportListenerError(error, "subscribe listener"); }
    }
  }

  /** Hands one update to the callbacks, the iterators and the subscribers. */
  deliver(update) {
    if ((update.type === "snapshot" || update.type === "reset") && (this.pending.length || this.shown)) {
      // A whole new snapshot: the pending writes replayed over it, shown as it.
      this.shown = undefined;
      this.undo = [];
      this.showPending(null);
      update = { ...update, snapshot: this.getSnapshot() };
    }
    if (update.type === "deleted") { this.shown = undefined; this.undo = []; }
    if (update.type === "snapshot") this.call("onSnapshot", update.snapshot);
    else if (update.type === "reset") this.call("onReset", update.snapshot, update.reason);
    else if (update.type === "deleted") this.call("onDeleted", update.list);
    else if (update.type === "changes") {
      const { answer, states, snapshot } = update;
      // A UI whose onChanges failed may not hold what the next change starts
      // from: it gets the whole data again (the answer is applied already, and
      // a replay of it would be skipped as a duplicate).
      if (!this.call("onChanges", { answer, states, snapshot })) this.call("onReset", snapshot, "listener-error");
    }
    for (const iterator of this.iterators) iterator.push(update);
    this.notify();
  }

  markDeleted() {
    const had = this.snapshot !== null;
    this.snapshot = null;
    const report = had || !this.deletedReported;
    this.deletedReported = true;
    if (report) this.deliver({ type: "deleted", list: this.list });
  }

  /** Shows the state stored by an earlier follow, if there is a sound one: `fromCache` until the server answers. */
  async restore() {
    let record;
    let timer;
    try {
      // A storage that does not answer (an IndexedDB blocked by another tab) must not hold the follow up.
      const late = new Promise((resolve) => { timer = this.clock.setTimeout(resolve, 2000); });
      record = await Promise.race([Promise.resolve().then(() => this.storage.get(this.storageKey)), late]);
    } catch (error) {
      this.reportStorageError(error);
      return;
    } finally {
      this.clock.clearTimeout(timer);
    }
    const snapshot = restoredSnapshot(record, this.list, this.view);
    // None, or not a sound record of this list and view (the next state overwrites it).
    if (!snapshot || this.stopped || this.snapshot) return;
    this.snapshot = snapshot;
    this.existed = true;
    this.stored = { epoch: snapshot.epoch, version: snapshot.version, sections: snapshot.sections };
    this.deliver({ type: "snapshot", snapshot });
  }

  /** The server answered: a restored state loses `fromCache`. True when there was one. */
  confirmCache() {
    if (!this.snapshot?.fromCache) return false;
    const { fromCache, ...snapshot } = this.snapshot;
    this.snapshot = snapshot;
    if (this.shown) { const { fromCache: _, ...shown } = this.shown; this.shown = shown; }
    return true;
  }

  /** Whether the storage holds the state held (as far as this follow knows). */
  isStored() {
    const held = this.snapshot;
    const stored = this.stored;
    if (!held) return !stored;
    return !!stored && held.epoch === stored.epoch && held.version === stored.version && held.sections === stored.sections;
  }

  /**
   * Writes the state held to the storage, at most once per
   * `snapshotInterval` ms: a burst of changes writes its first state at once
   * and its last when the interval is over. Returns the write, if it started one.
   */
  saveLater() {
    if (!this.storage || this.isStored()) return undefined;
    this.saveWanted = true;
    if (this.saveTimer !== undefined || this.saving) return undefined;
    const wait = this.lastSaved + (this.options.snapshotInterval ?? 1000) - this.clock.now();
    if (wait <= 0 || this.stopped) return this.save();
    this.saveTimer = this.clock.setTimeout(() => { this.saveTimer = undefined; this.save(); }, wait);
    return undefined;
  }

  save() {
    this.saveWanted = false;
    const held = this.snapshot;
    this.lastSaved = this.clock.now();
    this.stored = held ? { epoch: held.epoch, version: held.version, sections: held.sections } : null;
    this.saving = (async () => {
      try {
        if (held) await this.storage.put(this.storageKey, storedRecord(this.list, this.view, held));
        else await this.storage.delete(this.storageKey);
      } catch (error) {
        if (this.stored?.sections === held?.sections) this.stored = undefined; // written again with the next state
        this.reportStorageError(error);
      }
    })().then(() => {
      this.saving = undefined;
      return this.saveWanted ? this.saveLater() : undefined;
    });
    return this.saving;
  }

  /** Writes the last state now (the follow ended, the page is hidden); resolves when it is written. */
  flushSnapshot() {
    if (this.saveTimer !== undefined) { this.clock.clearTimeout(this.saveTimer); this.saveTimer = undefined; }
    this.lastSaved = -Infinity;
    return this.saving ?? this.saveLater();
  }

  reportStorageError(error) {
    if (this.options.onStorageError) this.call("onStorageError", error);
    else console.warn("listd: the snapshot storage failed", error);
  }

  async run() {
    if (this.storage && !this.snapshot) await this.restore();
    while (!this.stopped) {
      // The instance this round asks; a failure moves the client on from it.
      const asked = this.client.instance;
      try {
        if (!this.snapshot) await this.refetch("initial");
        else if (this.expired) await this.refetch("expired");
        if (this.stopped) return;
        if (this.transport === "poll" || (this.transport === "auto" && this.clock.now() < this.pollUntil)) {
          await this.poll();
        } else {
          const streamed = await this.stream();
          if (!streamed) {
            if (this.transport === "events") throw new ListdError(0, { detail: "the server sent no event stream" });
            this.pollUntil = this.clock.now() + (this.options.streamRetryInterval ?? 60000);
          }
        }
      } catch (caught) {
        if (this.stopped) return;
        const error = caught instanceof ListdError ? caught
          : new ListdError(0, { title: "error", detail: String(caught?.message || caught) });
        // Retrying cannot fix these: a malformed view (400), a refused token (403).
        if (error.status === 400 || error.status === 403) return this.end(error, "closed");
        if (error.status === 401) {
          // A provider may give a better token next time; a static token will not change.
          if (typeof this.client.token !== "function") return this.end(error, "needs-auth");
          await this.backOff(error, "needs-auth");
          continue;
        }
        if (error.status === 404) {
          if (!this.existed) return this.end(error, "closed"); // never there: not a deletion to wait out
          this.markDeleted();
        }
        // A server (or proxy) that keeps no history from the version held: start again from a snapshot.
        if (error.status === 410) { this.lastEventID = undefined; this.expired = true; }
        this.failOver(asked, error);
        await this.backOff(error);
      }
    }
  }

  /**
   * With several base URLs, an instance that gave no answer or a 5xx is left
   * for the next; the next round asks it from the version held (a 4xx would
   * be the same anywhere: the follow stays).
   */
  failOver(asked, error) {
    const urls = this.client.baseURLs;
    if (urls.length < 2 || !(error instanceof ListdError) || !(error.status === 0 || error.status >= 500)) return;
    this.client.moveOn(asked);
    if (this.client.instance !== asked) {
      this.call("onFailover", { list: this.list, from: urls[asked], to: this.client.baseURL, error });
    }
  }

  /** Waits before reconnecting: jittered exponential back-off, or what Retry-After says (one instance only). */
  async backOff(error, state = "reconnecting") {
    this.failures += 1;
    const min = this.options.minDelay ?? 250;
    const max = this.options.maxDelay ?? 30000;
    let delay = Math.min(max, min * 2 ** Math.min(this.failures - 1, 16));
    delay = delay / 2 + Math.random() * (delay / 2);
    if (error instanceof ListdError && error.retryAfter !== undefined && this.client.baseURLs.length === 1) {
      delay = Math.max(delay, error.retryAfter * 1000);
    }
    this.setState(state, { delay, error });
    await sleep(delay, this.controller.signal, this.clock);
  }

  async refetch(reason) {
    const connection = new Connection(this.controller.signal, this.clock);
    const timeout = this.options.requestTimeout ?? 60000;
    connection.arm(timeout, `no snapshot in ${timeout / 1000} s`);
    let snapshot;
    try {
      snapshot = await this.client.request("GET", withQuery(`/lists/${encodeURIComponent(this.list)}`, "", this.view), {
        signal: connection.signal,
      });
    } finally {
      connection.close();
    }
    const recreated = this.snapshot === null && this.deletedReported;
    const first = this.snapshot === null && reason === "initial" && !recreated && !this.existed;
    this.snapshot = snapshot;
    this.existed = true;
    this.expired = false;
    this.lastEventID = undefined;
    this.deletedReported = false;
    if (first) this.deliver({ type: "snapshot", snapshot });
    else this.deliver({ type: "reset", snapshot, reason: recreated ? "recreated" : reason });
  }

  /**
   * Handles one answer (from the stream or a long-poll). Returns false when
   * it refetched the snapshot instead (the answer did not apply).
   */
  async handle(answer) {
    const confirmed = this.confirmCache();
    if (answer.deleted) {
      this.markDeleted();
      return true;
    }
    if (answer.reset) {
      const had = this.snapshot !== null;
      const recreated = !had && this.deletedReported;
      this.snapshot = answer.snapshot;
      this.existed = true;
      this.deletedReported = false;
      if (had) this.deliver({ type: "reset", snapshot: answer.snapshot, reason: "server" });
      else if (recreated) this.deliver({ type: "reset", snapshot: answer.snapshot, reason: "recreated" });
      else this.deliver({ type: "snapshot", snapshot: answer.snapshot });
      return true;
    }
    this.deletedReported = false;
    const held = this.snapshot;
    if (!held) {
      await this.refetch("initial");
      return false;
    }
    // Already applied (a replay after a reconnect): never apply a stage twice.
    if (answer.epoch === held.epoch && answer.to <= held.version) {
      if (confirmed) this.notify();
      return true;
    }
    // A view's versions are the list's: a write that left the view alone moves
    // `to` on with nothing to apply. Hold the new version; nothing to show.
    if (this.view && answer.epoch === held.epoch && answer.from === held.version && !(answer.stages || []).length) {
      const shown = this.getSnapshot();
      this.snapshot = { ...held, version: answer.to };
      // It may confirm a pending write that left the view alone.
      if (this.pending.length || this.shown) this.showPending(shown);
      else this.notify();
      return true;
    }
    let states;
    try {
      states = applyAnswer(held, answer);
    } catch (error) {
      if (!(error instanceof StageError)) throw error;
      await this.refetch("mismatch");
      return false;
    }
    const shown = this.getSnapshot();
    this.snapshot = { ...held, epoch: answer.epoch, version: answer.to, sections: states[states.length - 1] };
    if (this.pending.length || this.shown) {
      this.showPending(shown, answer);
      return true;
    }
    this.deliver({ type: "changes", answer, states, snapshot: this.snapshot });
    return true;
  }

  /** Reads the event stream until it ends; false when the server has none. */
  async stream() {
    const held = this.snapshot;
    const headers = { Accept: "text/event-stream" };
    // maxChanges goes in the query on every connection: the event id carries only the position.
    const query = new URLSearchParams();
    if (this.lastEventID) {
      headers["Last-Event-ID"] = this.lastEventID;
    } else {
      query.set("since", String(held ? held.version : "now"));
      if (held?.epoch) query.set("epoch", held.epoch);
    }
    if (this.options.maxChanges !== undefined) query.set("maxChanges", String(this.options.maxChanges));
    // The view too: the event id carries only the position, not the view.
    const path = withQuery(`/lists/${encodeURIComponent(this.list)}/events`, query.toString(), this.view);
    this.setState("connecting");
    const silence = this.options.heartbeatTimeout ?? 45000;
    const connection = new Connection(this.controller.signal, this.clock);
    let reader;
    try {
      connection.arm(silence, `no answer from the event stream in ${silence / 1000} s`);
      const response = await this.client.send("GET", path, { headers, signal: connection.signal });
      if (!response.ok) {
        let problem = null;
        try { problem = await abortable(response.json(), connection.signal); } catch { problem = null; }
        if (response.status === 405 || response.status === 501) return false;
        if (response.status === 404 && problem?.type?.endsWith("/not-found")) return false; // no such route
        throw new ListdError(response.status, problem, retryAfter(response));
      }
      const type = response.headers.get("Content-Type") || "";
      if (!type.startsWith("text/event-stream") || !response.body) {
        discard(response); // a proxy's page, say: nobody reads it
        return false;
      }
      // Open: a change since the version held follows at once as the first event.
      this.confirmCache();
      this.setState("live");
      this.failures = 0;
      reader = response.body.getReader();
      const decoder = new TextDecoder();
      const events = [];
      const parser = new EventStreamParser((event) => events.push(event));
      for (;;) {
        // Every byte, heartbeat comments included, proves the connection alive.
        connection.arm(silence, `no byte from the event stream in ${silence / 1000} s (the server sends a heartbeat every 15 s)`);
        const { value, done } = await abortable(reader.read(), connection.signal);
        if (done) { reader = undefined; break; }
        connection.disarm();
        parser.push(decoder.decode(value, { stream: true }));
        while (events.length > 0) {
          const event = events.shift();
          if (this.stopped) return true;
          if (!["change", "reset", "deleted"].includes(event.event)) continue;
          const consumed = await this.handle(JSON.parse(event.data));
          // After a refetch the snapshot, not the stream, says where the client is.
          if (consumed && event.id !== undefined) this.lastEventID = event.id;
        }
      }
    } finally {
      connection.close();
      if (reader) reader.cancel().catch(() => {});
    }
    // The server ended the stream (shutting down): reconnect with Last-Event-ID.
    throw new ListdError(0, { title: "stream ended", detail: "the event stream ended" });
  }

  /**
   * Long-polls until an error, or (transport "auto") until it is time to try
   * the event stream again.
   */
  async poll() {
    this.setState("polling");
    const timeout = this.options.pollTimeout ?? 30;
    for (;;) {
      const held = this.snapshot;
      if (!held) {
        await this.refetch("initial");
        continue;
      }
      const connection = new Connection(this.controller.signal, this.clock);
      connection.arm(timeout * 1000 + pollGrace, `no answer to a ${timeout} s long-poll in ${timeout + pollGrace / 1000} s`);
      let answer;
      try {
        answer = await this.client.changes(this.list, held.version, {
          // A state restored from storage asks without waiting, so it is confirmed (or moved on) at once.
          epoch: held.epoch, timeout: held.fromCache ? 0 : timeout, maxChanges: this.options.maxChanges, view: this.view,
          signal: connection.signal,
        });
      } finally {
        connection.close();
      }
      this.failures = 0;
      await this.handle(answer);
      if (this.stopped) return;
      if (this.transport === "auto" && this.clock.now() >= this.pollUntil) return;
    }
  }
}
