// Writes that survive the network (issue 24): every write carries an
// Idempotency-Key and is retried, with the same key and the same bytes, on a
// lost answer, a timeout or a 503 (after its Retry-After), never on a 4xx.
// `node --test clients/js/`; fake fetch and clock, no wall-clock waits.
import { test } from "node:test";
import assert from "node:assert/strict";
import { idempotencyKey, ListdClient, ListdError } from "./listd.js";
import { fakeClock, fakeFetch, json, until } from "./testing.mjs";

const uuidv7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const fast = { minDelay: 10, maxDelay: 10 };

test("a write whose answer is lost, then times out, is sent again with the same key, method, path and bytes", async () => {
  const clock = fakeClock();
  const { fetch, calls } = fakeFetch((path, init, count) => {
    if (count === 1) throw new TypeError("fetch failed"); // the connection dropped: the answer is lost
    if (count === 2) return new Promise(() => {}); // no answer at all
    return json(200, { version: 2 });
  });
  const retries = [];
  const client = new ListdClient({ baseURL: "http://x", fetch, clock,
    retry: { ...fast, timeout: 5000, onRetry: (retry) => retries.push(retry) } });
  const write = client.patchList("l", [{ op: "insertItem", section: "s", item: { id: "a", model: { n: 1 } } }]);
  await until(() => calls.length === 1 && clock.pending() > 0, "the back-off after the lost answer");
  clock.advance(10);
  await until(() => calls.length === 2, "the second attempt");
  clock.advance(4999);
  assert.equal(calls.length, 2, "an attempt is waited for until its timeout");
  clock.advance(1);
  await until(() => retries.length === 2 && clock.pending() > 0, "the timeout and its back-off");
  clock.advance(10);
  assert.deepEqual(await write, { version: 2 });
  assert.equal(calls.length, 3);
  const key = calls[0].headers["Idempotency-Key"];
  assert.match(key, uuidv7);
  for (const call of calls) {
    assert.equal(call.method, "PATCH");
    assert.equal(call.path, "/lists/l");
    assert.equal(call.headers["Idempotency-Key"], key, "the same key on every attempt");
    assert.equal(call.body, calls[0].body, "the same bytes on every attempt");
  }
  assert.deepEqual(retries.map((r) => [r.attempt, r.error.status, r.id]), [[1, 0, key], [2, 0, key]]);
  assert.match(retries[1].error.detail, /no answer to PATCH \/lists\/l in 5 s/);
  assert.equal(client.pendingWrites.count, 0);
});

test("a 503 is retried after its Retry-After, not before", async () => {
  const clock = fakeClock();
  const { fetch, calls } = fakeFetch((path, init, count) =>
    count === 1 ? json(503, { title: "Service Unavailable" }, { "Retry-After": "7" }) : json(201, { id: "a" }));
  const client = new ListdClient({ baseURL: "http://x", fetch, clock, retry: fast });
  const write = client.createItem("l", "s", { id: "a", model: {} });
  await until(() => calls.length === 1 && clock.pending() > 0, "the back-off");
  clock.advance(6999);
  assert.equal(calls.length, 1, "not before the 7 s the server asked");
  clock.advance(1);
  assert.deepEqual(await write, { id: "a" });
  assert.equal(calls.length, 2);
  assert.equal(calls[1].headers["Idempotency-Key"], calls[0].headers["Idempotency-Key"]);
  assert.equal(calls[1].body, calls[0].body);
});

test("a 4xx is never retried: the error comes back after one attempt", async () => {
  for (const [status, type] of [[400, "invalid-request"], [404, "unknown-list"], [409, "duplicate-id"],
    [412, "version-mismatch"], [422, "idempotency-key-reused"], [429, "too-many"]]) {
    const clock = fakeClock();
    const { fetch, calls } = fakeFetch(() => json(status, { type: `https://listd.dev/problems/${type}`, title: type }));
    const client = new ListdClient({ baseURL: "http://x", fetch, clock, retry: fast });
    await assert.rejects(client.deleteItem("l", "a"), (error) => error instanceof ListdError && error.status === status);
    assert.equal(calls.length, 1, `${status}: one attempt`);
    assert.equal(clock.pending(), 0, `${status}: no retry waiting`);
  }
});

test("aborting a write stops its retries", async () => {
  const clock = fakeClock();
  const { fetch, calls } = fakeFetch(() => { throw new TypeError("fetch failed"); });
  const client = new ListdClient({ baseURL: "http://x", fetch, clock, retry: fast });
  const controller = new AbortController();
  const write = client.deleteList("l", { signal: controller.signal });
  await until(() => calls.length === 1 && clock.pending() > 0, "the back-off");
  controller.abort();
  await assert.rejects(write, (error) => error.name === "AbortError");
  clock.advance(1000);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(calls.length, 1, "no attempt after the abort");
  assert.equal(clock.pending(), 0, "no timer left");
  assert.equal(client.pendingWrites.count, 0);
});

test("attempts are bounded: the last error comes back; retry: false sends once, with a key all the same", async () => {
  const clock = fakeClock();
  const { fetch, calls } = fakeFetch(() => json(503, { title: "Service Unavailable" }));
  const client = new ListdClient({ baseURL: "http://x", fetch, clock, retry: { ...fast, attempts: 3 } });
  const write = client.createList({ id: "l" });
  const failed = assert.rejects(write, (error) => error instanceof ListdError && error.status === 503);
  for (let attempt = 1; attempt < 3; attempt++) {
    await until(() => calls.length === attempt && clock.pending() > 0, `back-off ${attempt}`);
    clock.advance(10);
  }
  await failed;
  assert.equal(calls.length, 3);

  const once = fakeFetch(() => { throw new TypeError("fetch failed"); });
  const plain = new ListdClient({ baseURL: "http://x", fetch: once.fetch, clock, retry: false });
  await assert.rejects(plain.createList({ id: "l" }), (error) => error instanceof ListdError && error.status === 0);
  assert.equal(once.calls.length, 1);
  assert.match(once.calls[0].headers["Idempotency-Key"], uuidv7);
});

test("every write names its own key (or the caller's); reads carry none", async () => {
  const { fetch, calls } = fakeFetch((path, init) => json(init.method === "GET" ? 200 : 201, {}));
  const client = new ListdClient({ baseURL: "http://x", fetch });
  await client.createList({ id: "l" });
  await client.createSection("l", { id: "s" });
  await client.createItem("l", "s", { model: {} }, { idempotencyKey: "mine-1" });
  await client.replaceList("l", { sections: [] }, { ifMatch: 3 });
  await client.deleteSection("l", "s");
  await client.deleteList("l");
  await client.getList("l");
  const keys = calls.map((call) => call.headers["Idempotency-Key"]);
  assert.equal(keys[2], "mine-1");
  assert.equal(keys[6], undefined, "a read has no key");
  const generated = keys.filter((key, index) => index !== 2 && index !== 6);
  assert.equal(new Set(generated).size, generated.length, "one key per write");
  for (const key of generated) assert.match(key, uuidv7);
  assert.equal(calls[3].headers["If-Match"], '"3"', "other headers go along");
});

test("idempotencyKey: UUIDv7s in the order they were made, never twice", () => {
  const keys = Array.from({ length: 5000 }, () => idempotencyKey());
  for (const key of keys) assert.match(key, uuidv7);
  assert.deepEqual([...keys].sort(), keys, "time-ordered, within a millisecond too");
  assert.equal(new Set(keys).size, keys.length);
  const millis = parseInt(keys[0].replace(/-/g, "").slice(0, 12), 16);
  assert.ok(Math.abs(millis - Date.now()) < 60000, "the first 48 bits are Unix milliseconds");
});

test("pendingWrites without an outbox: the writes being sent, observable with subscribe", async () => {
  let answer;
  const { fetch } = fakeFetch(() => new Promise((resolve) => { answer = resolve; }));
  const client = new ListdClient({ baseURL: "http://x", fetch });
  const seen = [];
  const unsubscribe = client.subscribe(() => seen.push(client.pendingWrites.count));
  const idle = client.pendingWrites;
  assert.equal(client.pendingWrites, idle, "one object while nothing changes");
  const write = client.deleteList("l", { idempotencyKey: "k1" });
  await until(() => answer !== undefined, "the request");
  assert.deepEqual([client.pendingWrites.count, client.pendingWrites.ids, client.pendingWrites.state], [1, ["k1"], "sending"]);
  answer(json(200, {}));
  await write;
  assert.deepEqual(seen, [1, 0]);
  unsubscribe();
});
