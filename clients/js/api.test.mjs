// The follow's API for UIs: subscribe/getSnapshot (React's
// useSyncExternalStore), the async iterator, AbortSignal, the connection
// state and the token provider. `node --test clients/js/`; fake fetch and
// clock, no wall-clock waits.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ListdClient, ListdError } from "./listd.js";
import { event, eventStream, fakeClock, fakeFetch, item, json, section, until } from "./testing.mjs";

const snapshot = { id: "l", epoch: "e", version: 1, sections: [section("s", [item("a")])] };
const change = { list: "l", epoch: "e", from: 1, to: 2, stages: [{ itemInserted: [{ at: [0, 1], item: item("b") }] }] };

test("subscribe and getSnapshot: one object per version, listeners told of every change, unsubscribe works", async () => {
  let stream;
  const { fetch } = fakeFetch((path) => {
    if (path === "/lists/l") return json(200, snapshot);
    stream = eventStream([], { hang: true });
    return stream.response;
  });
  const follower = new ListdClient({ baseURL: "http://x", fetch }).follow("l");
  assert.equal(follower.getSnapshot(), null, "nothing before the first snapshot");
  const seen = [];
  const unsubscribe = follower.subscribe(() => seen.push([follower.getSnapshot()?.version ?? null, follower.state]));
  await until(() => follower.state === "live", "live");
  const first = follower.getSnapshot();
  assert.equal(first.version, 1);
  assert.equal(follower.getSnapshot(), first, "the same object while nothing changes");
  stream.send(event("change", change));
  await until(() => follower.getSnapshot() !== first, "the change");
  const second = follower.getSnapshot();
  assert.deepEqual(second.sections[0].items.map((i) => i.id), ["a", "b"]);
  assert.equal(follower.getSnapshot(), second);
  assert.deepEqual(seen.at(-1), [2, "live"]);
  assert.ok(seen.some(([version]) => version === 1), "told of the snapshot");
  const count = seen.length;
  unsubscribe();
  follower.stop();
  assert.equal(seen.length, count, "an unsubscribed listener is not called");
  assert.equal(follower.state, "closed");
  // The bound methods work detached, as useSyncExternalStore calls them.
  const { subscribe, getSnapshot } = follower;
  subscribe(() => {})();
  assert.equal(getSnapshot(), second);
});

test("for await: the snapshot, then each update; the loop ends when the follow stops", async () => {
  let stream;
  const { fetch } = fakeFetch((path) => {
    if (path === "/lists/l") return json(200, snapshot);
    stream = eventStream([], { hang: true });
    return stream.response;
  });
  const follower = new ListdClient({ baseURL: "http://x", fetch }).follow("l");
  const seen = [];
  const loop = (async () => {
    for await (const update of follower) {
      seen.push([update.type, update.snapshot?.version]);
      if (update.type === "snapshot") {
        await until(() => follower.state === "live", "the stream");
        stream.send(event("change", change));
      }
      if (update.type === "changes") follower.stop();
    }
  })();
  await loop;
  assert.deepEqual(seen, [["snapshot", 1], ["changes", 2]]);
});

test("for await: the loop throws the error that ended the follow; breaking out detaches only", async () => {
  const { fetch } = fakeFetch(() => json(403, { title: "forbidden", detail: "not this list" }));
  const follower = new ListdClient({ baseURL: "http://x", fetch }).follow("l");
  await assert.rejects(async () => { for await (const _ of follower) { /* nothing arrives */ } },
    (error) => error instanceof ListdError && error.status === 403);
  assert.equal(follower.state, "closed");

  const second = new ListdClient({ baseURL: "http://x", fetch: fakeFetch((path) =>
    path === "/lists/l" ? json(200, snapshot) : eventStream([], { hang: true }).response).fetch }).follow("l");
  for await (const update of second) { assert.equal(update.type, "snapshot"); break; }
  assert.notEqual(second.state, "closed", "a break does not stop the follow");
  assert.equal(second.iterators.size, 0, "the iterator is detached");
  second.stop();
});

test("an AbortSignal stops the follow and a REST call; an aborted signal never starts one", async () => {
  const { fetch, calls } = fakeFetch((path) => {
    if (path === "/lists/l") return json(200, snapshot);
    return eventStream([], { hang: true }).response;
  });
  const client = new ListdClient({ baseURL: "http://x", fetch });
  const controller = new AbortController();
  const follower = client.follow("l", { signal: controller.signal });
  await until(() => follower.state === "live", "live");
  controller.abort();
  await follower.done;
  assert.equal(follower.state, "closed");

  const request = new AbortController();
  const hanging = new ListdClient({ baseURL: "http://x", fetch: () => new Promise(() => {}) });
  const pending = hanging.getList("l", { signal: request.signal });
  request.abort();
  await assert.rejects(pending, (error) => error.name === "AbortError");

  const before = calls.length;
  const never = client.follow("l", { signal: AbortSignal.abort() });
  await never.done;
  assert.equal(never.state, "closed");
  assert.equal(calls.length, before, "no request");
});

test("a token provider is asked again after a 401, and the follow goes on with the new token", async () => {
  const tokens = ["old", "new"];
  const asked = [];
  const { fetch, calls } = fakeFetch((path, init) => {
    if (init.headers.Authorization !== "Bearer new") {
      return json(401, { title: "Authentication required", detail: "expired" }, { "WWW-Authenticate": "Bearer" });
    }
    if (path === "/lists/l") return json(200, snapshot);
    return eventStream([], { hang: true }).response;
  });
  const client = new ListdClient({
    baseURL: "http://x", fetch,
    token: async ({ refresh }) => { asked.push(refresh); return tokens.shift(); },
  });
  const follower = client.follow("l");
  await until(() => follower.state === "live", "live");
  assert.deepEqual(asked, [false, true], "asked once, then again after the 401");
  assert.deepEqual(calls.map((call) => call.headers.Authorization), ["Bearer old", "Bearer new", "Bearer new"]);
  follower.stop();
});

test("a token refused again and again: state needs-auth, the provider asked on every retry", async () => {
  const clock = fakeClock();
  let asked = 0;
  const { fetch } = fakeFetch(() => json(401, { title: "Authentication required", detail: "bad token" }));
  const client = new ListdClient({ baseURL: "http://x", fetch, clock, token: () => { asked += 1; return `t${asked}`; } });
  const states = [];
  const follower = client.follow("l", { minDelay: 1, maxDelay: 1, onState: (state) => states.push(state) });
  await until(() => follower.state === "needs-auth" && clock.pending() > 0, "needs-auth");
  const first = asked;
  clock.advance(1);
  await until(() => asked > first && clock.pending() > 0, "asked again");
  assert.equal(follower.state, "needs-auth");
  follower.stop();
  assert.equal(follower.state, "closed");

  // A static token cannot change: a 401 ends the follow in needs-auth.
  const errors = [];
  const fixed = new ListdClient({ baseURL: "http://x", fetch, token: "t" }).follow("l", { onError: (e) => errors.push(e.status) });
  await fixed.done;
  assert.deepEqual(errors, [401]);
  assert.equal(fixed.state, "needs-auth");
});

test("listd.d.ts declares exactly the values listd.js exports", async () => {
  const { readFileSync } = await import("node:fs");
  const declarations = readFileSync(new URL("./listd.d.ts", import.meta.url), "utf8");
  const declared = [...declarations.matchAll(/^export declare (?:class|function|const) (\w+)/gm)].map((m) => m[1]).sort();
  const exported = Object.keys(await import("./listd.js")).sort();
  assert.deepEqual(declared, exported);
});
