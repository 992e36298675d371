// Test helpers for the JavaScript client's node tests: a fake fetch, a fake
// clock, event streams the test writes to, and a bounded wait on a state.
// Not part of the package.

export const item = (id, model = {}) => ({ id, model });
export const section = (id, items, model = {}) => ({ id, model, items });

/** A fetch that records each call and answers with `handler(path, init, count)`. */
export function fakeFetch(handler) {
  const calls = [];
  const fetch = async (url, init = {}) => {
    const path = url.replace(/^http:\/\/x/, "");
    calls.push({ path, headers: init.headers || {}, method: init.method || "GET", body: init.body });
    return handler(path, init, calls.length);
  };
  return { fetch, calls };
}

export function json(status, value, headers = {}) {
  return new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json", ...headers } });
}

/**
 * An event stream: `chunks` first, then what the test `send`s; it ends after
 * the chunks unless `hang`. `delivered()` says the client read all that was
 * sent; `cancelled()` that it cancelled the body.
 */
export function eventStream(chunks, { hang = false } = {}) {
  const encoder = new TextEncoder();
  let controller;
  let cancelled = false;
  const body = new ReadableStream({
    start(c) {
      controller = c;
      for (const chunk of chunks) c.enqueue(encoder.encode(chunk));
      if (!hang) c.close();
    },
    cancel() { cancelled = true; },
  });
  return {
    response: new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } }),
    send: (text) => controller.enqueue(encoder.encode(text)),
    close: () => controller.close(),
    delivered: () => controller.desiredSize >= 1,
    cancelled: () => cancelled,
  };
}

export const event = (kind, data) => `id: ${data.list}:${data.epoch}:${data.to}\nevent: ${kind}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * A clock the test moves: `advance(ms)` fires the timers due, in order,
 * each with `now()` at its time. Timers are never fired by wall-clock time.
 */
export function fakeClock() {
  let now = 0;
  let next = 1;
  const timers = new Map();
  return {
    now: () => now,
    setTimeout(callback, ms) {
      const id = next++;
      timers.set(id, { at: now + Math.max(0, ms), callback });
      return id;
    },
    clearTimeout(id) { timers.delete(id); },
    /** How many timers are waiting. */
    pending: () => timers.size,
    advance(ms) {
      const end = now + ms;
      for (;;) {
        let due = null;
        for (const [id, timer] of timers) {
          if (timer.at <= end && (due === null || timer.at < due[1].at)) due = [id, timer];
        }
        if (due === null) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].callback();
      }
      now = end;
    },
  };
}

/**
 * Yields to the event loop until `condition()` holds; fails after a bounded
 * number of turns (never a wall-clock wait), naming `what`.
 */
export async function until(condition, what, turns = 5000) {
  for (let turn = 0; turn < turns; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`gave up waiting for ${what} after ${turns} event-loop turns`);
}

/**
 * An IndexedDB with what the storages use: `open` (creating the stores on
 * the first open), one store per transaction, `get`, `getAll`, `put`,
 * `delete`; values are structured-cloned, every request and transaction
 * completes on a later turn of the event loop. `databases` holds the data:
 * name → store → key → value; `transactions` every transaction's mode and options.
 */
export function fakeIndexedDB() {
  const databases = new Map();
  const transactions = [];
  const later = (callback) => setImmediate(callback);
  return {
    databases,
    transactions,
    open(name) {
      const request = { result: undefined, error: null };
      later(() => {
        let stores = databases.get(name);
        const upgrade = !stores;
        if (upgrade) databases.set(name, (stores = new Map()));
        request.result = {
          createObjectStore(store, options) { stores.set(store, { keyPath: options?.keyPath, records: new Map() }); },
          transaction(store, mode, options) {
            const transaction = {};
            transactions.push({ store, mode, options });
            const { keyPath, records } = stores.get(store);
            const run = (work) => {
              const step = { result: undefined };
              later(() => { step.result = work(); later(() => transaction.oncomplete?.()); });
              return step;
            };
            transaction.objectStore = () => ({
              get: (key) => run(() => structuredClone(records.get(key))),
              getAll: () => run(() => [...records.values()].map((value) => structuredClone(value))),
              put: (value, key) => run(() => { records.set(keyPath ? value[keyPath] : key, structuredClone(value)); }),
              delete: (key) => run(() => { records.delete(key); }),
            });
            return transaction;
          },
          close() {},
        };
        if (upgrade) request.onupgradeneeded?.();
        request.onsuccess?.();
      });
      return request;
    },
  };
}
