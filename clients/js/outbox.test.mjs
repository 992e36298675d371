// The outbox (issue 24): writes queue in order while offline and drain in
// order when the server answers again; a new client over the same storage
// (a restart) sends what is left with the same keys, so nothing is lost or
// applied twice. `node --test clients/js/`; a fake listd that keeps
// Idempotency-Keys, a fake clock, an injected storage; no wall-clock waits.
import { test } from "node:test";
import assert from "node:assert/strict";
import { IndexedDBOutboxStorage, ListdClient, ListdError, MemoryOutboxStorage } from "./listd.js";
import { fakeClock, json, until } from "./testing.mjs";

const fast = { minDelay: 10, maxDelay: 10 };

/**
 * A listd that keeps keys as the contract says: a key's first request is
 * applied (its body appended to `applied`) and its answer stored; a retry
 * gets the stored answer with Idempotent-Replayed. `network(request)` says
 * what the network does with each request: "up", "down" (no connection),
 * "lose" (applied, answer lost), "hang" (applied, no answer ever).
 */
function fakeListd() {
  const server = {
    applied: [],
    answers: new Map(),
    requests: [],
    network: () => "up",
    reject: () => null,
  };
  server.fetch = async (url, init) => {
    const key = init.headers["Idempotency-Key"];
    const request = { key, method: init.method, path: url.replace(/^http:\/\/x/, ""), body: init.body };
    server.requests.push(request);
    const network = server.network(request);
    if (network === "down") throw new TypeError("fetch failed: connection refused");
    let answer = server.answers.get(key);
    request.replayed = answer !== undefined;
    if (!answer) {
      const problem = server.reject(request);
      if (problem) return json(problem.status, problem); // a 4xx applies nothing and keeps nothing
      server.applied.push(JSON.parse(init.body));
      answer = { status: 200, body: { applied: server.applied.length } };
      server.answers.set(key, answer);
    }
    if (network === "lose") throw new TypeError("fetch failed: the connection dropped before the answer");
    if (network === "hang") return new Promise(() => {});
    return json(answer.status, answer.body, request.replayed ? { "Idempotent-Replayed": "true" } : {});
  };
  return server;
}

const write = (client, n) => client.patchList("l", [{ op: "updateItem", id: "a", model: { n } }]);
const values = (server) => server.applied.map((body) => body.ops[0].model.n);

test("offline, writes queue in order and pendingWrites counts them; back online they drain in order, one at a time", async () => {
  const clock = fakeClock();
  const server = fakeListd();
  let online = false;
  server.network = () => (online ? "up" : "down");
  let retries = 0;
  const client = new ListdClient({ baseURL: "http://x", fetch: server.fetch, clock,
    retry: { ...fast, onRetry: () => { retries += 1; } }, outbox: { storage: new MemoryOutboxStorage() } });
  const counts = [];
  client.subscribe(() => counts.push(client.pendingWrites.count));
  const writes = [1, 2, 3].map((n) => write(client, n));
  await until(() => client.pendingWrites.count === 3 && client.pendingWrites.state === "waiting", "three writes waiting");
  assert.equal(client.pendingWrites.error.status, 0, "the network error is shown");
  for (let backOffs = 2; backOffs <= 4; backOffs++) {
    clock.advance(10);
    await until(() => retries === backOffs && client.pendingWrites.state === "waiting", `back-off ${backOffs}`);
  }
  assert.equal(server.requests.length, 4, "tried again after each back-off");
  assert.deepEqual(server.applied, [], "nothing reached the server");
  const first = client.pendingWrites.ids[0];
  assert.ok(server.requests.every((request) => request.key === first), "only the oldest write is tried while offline");
  online = true;
  client.outbox.flush(); // the browser's `online` event does this
  const answers = await Promise.all(writes);
  assert.deepEqual(values(server), [1, 2, 3], "each once, in order");
  assert.deepEqual(answers.map((answer) => answer.applied), [1, 2, 3]);
  assert.equal(client.pendingWrites.count, 0);
  assert.equal(client.pendingWrites.state, "idle");
  assert.deepEqual(counts.filter((count, index) => count !== counts[index - 1]).slice(-4), [3, 2, 1, 0]);
});

test("a restart mid-drain: a new client over the same storage sends what is left with the same keys; every write once, in order", async () => {
  const storage = new MemoryOutboxStorage();
  const server = fakeListd();
  // The first client's second write reaches the server, which applies it; its answer never comes back.
  server.network = (request) => (request.body.includes('"n":2') ? "hang" : "up");
  const first = new ListdClient({ baseURL: "http://x", fetch: server.fetch, retry: fast, outbox: { storage } });
  const writes = [1, 2, 3, 4, 5].map((n) => write(first, n));
  const settled = writes.map((promise) => promise.then(() => "answered", (error) => error));
  await until(() => server.applied.length === 2 && first.pendingWrites.state === "sending", "the second write in flight");
  const keys = [...first.pendingWrites.ids];
  assert.equal(keys.length, 4, "the first write is answered and gone, four are left");
  assert.equal(storage.records.size, 4, "all four stored");
  first.close(); // the app is killed here
  const outcomes = await Promise.all(settled);
  assert.equal(outcomes[0], "answered");
  for (const outcome of outcomes.slice(1)) {
    assert.ok(outcome instanceof ListdError && outcome.title === "closed", String(outcome));
  }
  assert.equal(first.pendingWrites.state, "closed");
  const sentBefore = server.requests.length;

  server.network = () => "up";
  const second = new ListdClient({ baseURL: "http://x", fetch: server.fetch, retry: fast, outbox: { storage } });
  const shown = [];
  second.subscribe(() => shown.push(second.pendingWrites.ids));
  await until(() => shown.length > 0 && second.pendingWrites.count === 0, "the outbox loaded and drained");
  assert.deepEqual(shown[0], keys, "the same writes pending, in the same order, once loaded");
  assert.deepEqual(values(server), [1, 2, 3, 4, 5], "every write exactly once, in order");
  const resent = server.requests.slice(sentBefore);
  assert.deepEqual(resent.map((request) => request.key), keys, "the same keys");
  assert.deepEqual(resent.map((request) => request.replayed), [true, false, false, false],
    "the write applied before the restart is answered from the server's record");
  assert.equal(storage.records.size, 0);
});

test("answers lost on every write: each is resent until answered, and applied once", async () => {
  const clock = fakeClock();
  const server = fakeListd();
  const seen = new Map();
  // Each request's first attempt loses its answer.
  server.network = (request) => { const times = (seen.get(request.key) ?? 0) + 1; seen.set(request.key, times); return times === 1 ? "lose" : "up"; };
  let retries = 0;
  const client = new ListdClient({ baseURL: "http://x", fetch: server.fetch, clock,
    retry: { ...fast, onRetry: () => { retries += 1; } }, outbox: { storage: new MemoryOutboxStorage() } });
  const writes = Array.from({ length: 20 }, (_, index) => write(client, index + 1));
  for (let backOffs = 1; backOffs <= 20; backOffs++) {
    await until(() => retries === backOffs && client.pendingWrites.state === "waiting", `back-off ${backOffs}`);
    clock.advance(10);
  }
  await Promise.all(writes);
  assert.deepEqual(values(server), Array.from({ length: 20 }, (_, index) => index + 1));
  assert.equal(server.requests.length, 40);
  assert.equal(server.requests.filter((request) => request.replayed).length, 20);
});

test("a write the server rejects (4xx) leaves the outbox: its promise rejects, onWriteRejected is told, the next goes on", async () => {
  const server = fakeListd();
  server.reject = (request) => (request.body.includes('"n":2') ? { status: 412, title: "Precondition Failed" } : null);
  const rejected = [];
  const client = new ListdClient({ baseURL: "http://x", fetch: server.fetch, retry: fast,
    outbox: { storage: new MemoryOutboxStorage(), onWriteRejected: (error, record) => rejected.push([error.status, record.id]) } });
  const writes = [1, 2, 3].map((n) => write(client, n));
  const outcomes = await Promise.allSettled(writes);
  assert.deepEqual(outcomes.map((outcome) => outcome.status), ["fulfilled", "rejected", "fulfilled"]);
  assert.equal(outcomes[1].reason.status, 412);
  assert.deepEqual(values(server), [1, 3]);
  assert.equal(rejected.length, 1);
  assert.equal(rejected[0][0], 412);
  assert.equal(server.requests.length, 3, "not retried");
  assert.equal(client.pendingWrites.count, 0);
});

test("aborting a queued write removes it before it is sent; the others go on in order", async () => {
  const clock = fakeClock();
  const server = fakeListd();
  let online = false;
  server.network = () => (online ? "up" : "down");
  const storage = new MemoryOutboxStorage();
  const client = new ListdClient({ baseURL: "http://x", fetch: server.fetch, clock, retry: fast, outbox: { storage } });
  const controller = new AbortController();
  const one = write(client, 1);
  const two = client.patchList("l", [{ op: "updateItem", id: "a", model: { n: 2 } }], { signal: controller.signal });
  const three = write(client, 3);
  await until(() => client.pendingWrites.count === 3 && client.pendingWrites.state === "waiting", "queued");
  controller.abort();
  await assert.rejects(two, (error) => error.name === "AbortError");
  assert.equal(client.pendingWrites.count, 2, "gone from pendingWrites at once");
  assert.equal(storage.records.size, 2, "and from the storage");
  online = true;
  client.outbox.flush();
  await Promise.all([one, three]);
  assert.deepEqual(values(server), [1, 3]);
  assert.equal(storage.records.size, 0);
});

test("the default storage: memory in node; IndexedDBOutboxStorage needs an IndexedDB", () => {
  const client = new ListdClient({ baseURL: "http://x", fetch: async () => json(200, {}), outbox: true });
  assert.ok(client.outbox.storage instanceof MemoryOutboxStorage);
  client.close();
  assert.throws(() => new IndexedDBOutboxStorage(), TypeError);
});

test("a retry answered 409 idempotency-answer-missing (applied, answer not kept) is done: the outbox resolves it with null and goes on", async () => {
  const clock = fakeClock();
  const server = fakeListd();
  const seen = new Map();
  server.network = (request) => { const times = (seen.get(request.key) ?? 0) + 1; seen.set(request.key, times); return times === 1 && request.body.includes('"n":1') ? "lose" : "up"; };
  const inner = server.fetch;
  let retried = false;
  const fetch = async (url, init) => {
    if (seen.get(init.headers["Idempotency-Key"]) === 1 && init.body.includes('"n":1')) {
      retried = true;
      server.requests.push({ key: init.headers["Idempotency-Key"] });
      return json(409, { type: "https://listd.dev/problems/idempotency-answer-missing", title: "answer missing" });
    }
    return inner(url, init);
  };
  const client = new ListdClient({ baseURL: "http://x", fetch, clock, retry: fast, outbox: { storage: new MemoryOutboxStorage() } });
  const one = write(client, 1);
  const two = write(client, 2);
  await until(() => client.pendingWrites.state === "waiting", "the lost answer's back-off");
  clock.advance(10);
  assert.equal(await one, null);
  assert.deepEqual(await two, { applied: 2 });
  assert.ok(retried);
  assert.deepEqual(values(server), [1, 2]);
});

test("a 401 keeps the outbox waiting (needs-auth) with its writes; a token that works sends them", async () => {
  const clock = fakeClock();
  const server = fakeListd();
  const inner = server.fetch;
  const fetch = (url, init) => (init.headers.Authorization === "Bearer good"
    ? inner(url, init) : json(401, { title: "Authentication required" }));
  const rejected = [];
  const client = new ListdClient({ baseURL: "http://x", fetch, clock, token: "expired", retry: fast,
    outbox: { storage: new MemoryOutboxStorage(), onWriteRejected: (error) => rejected.push(error) } });
  const writes = [1, 2].map((n) => write(client, n));
  await until(() => client.pendingWrites.state === "needs-auth", "needs-auth");
  assert.equal(client.pendingWrites.count, 2);
  client.token = "good";
  client.outbox.flush();
  await Promise.all(writes);
  assert.deepEqual(values(server), [1, 2]);
  assert.deepEqual(rejected, []);
});
