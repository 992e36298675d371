// The client against a real listd: run by `swift test` (JavaScriptClientTests
// starts one and sets LISTD_TEST_URL and LISTD_TEST_WRITE_TOKEN); skipped
// without them, so `node --test clients/js/` alone still runs everywhere.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ListdClient, ListdError, MemoryOutboxStorage } from "./listd.js";

const baseURL = process.env.LISTD_TEST_URL;
const writeToken = process.env.LISTD_TEST_WRITE_TOKEN;
const skip = baseURL && writeToken ? false : "LISTD_TEST_URL is not set (swift test sets it)";

/** Waits for a state of the client; the bound is wall-clock time, the waiting is on the state. */
async function eventually(condition, what, ms = 10000) {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test("live: a token provider refreshed after a 401, a follow bound with subscribe/getSnapshot, a write shown", { skip }, async () => {
  const asked = [];
  const client = new ListdClient({
    baseURL,
    token: async ({ refresh }) => { asked.push(refresh); return refresh ? writeToken : "expired-token"; },
  });
  const id = `js-live-${process.pid}`;
  await client.createList({ id, sections: [{ id: "s", model: {}, items: [{ id: "a", model: { n: 1 } }] }] });
  assert.deepEqual(asked, [false, true], "the provider is asked again after the 401");

  const follower = client.follow(id);
  const versions = [];
  const unsubscribe = follower.subscribe(() => versions.push(follower.getSnapshot()?.version));
  await eventually(() => follower.state === "live" && follower.getSnapshot()?.version === 1, "live at version 1");
  await client.patchList(id, [{ op: "insertItem", section: "s", item: { id: "b", model: { n: 2 } } }]);
  await eventually(() => follower.getSnapshot()?.version === 2, "the write");
  assert.deepEqual(follower.getSnapshot().sections[0].items.map((item) => item.id), ["a", "b"]);
  assert.ok(versions.includes(1) && versions.includes(2), versions.join(","));
  unsubscribe();
  follower.stop();
  await follower.done;
});

test("live: a list that never existed ends the follow with the server's 404", { skip }, async () => {
  const client = new ListdClient({ baseURL, token: writeToken });
  const follower = client.follow(`js-never-${process.pid}`, { minDelay: 1, maxDelay: 5 });
  await follower.done;
  assert.ok(follower.error instanceof ListdError);
  assert.equal(follower.error.status, 404);
  assert.match(follower.error.type, /unknown-list$/);
  assert.equal(follower.state, "closed");
});

test("live: a write whose first answer was lost is retried with its key: applied once, the retry's answer replayed", { skip }, async () => {
  const writes = [];
  let lose = true;
  // The real fetch, except that the first item write's answer is thrown away after the server sent it.
  const losing = async (url, init) => {
    const response = await fetch(url, init);
    if (init.method === "GET") return response;
    const text = await response.text();
    writes.push({ path: new URL(url).pathname, key: init.headers["Idempotency-Key"], body: init.body,
      status: response.status, replayed: response.headers.get("Idempotent-Replayed"), text });
    if (lose && url.endsWith("/items")) {
      lose = false;
      throw new TypeError("fetch failed: the connection dropped before the answer");
    }
    return new Response(text, { status: response.status, headers: response.headers });
  };
  const retries = [];
  const client = new ListdClient({ baseURL, token: writeToken, fetch: losing,
    retry: { minDelay: 1, maxDelay: 1, onRetry: (retry) => retries.push(retry) } });
  const id = `js-retry-${process.pid}`;
  await client.createList({ id, sections: [{ id: "s", model: {}, items: [{ id: "a", model: { n: 1 } }] }] });
  // No id: the server names the item, so a second application would be a second item.
  const created = await client.createItem(id, "s", { model: { n: 2 } });
  assert.equal(retries.length, 1, "retried once");
  const items = writes.filter((write) => write.path.endsWith("/items"));
  assert.equal(items.length, 2);
  assert.equal(items[1].key, items[0].key, "the same key");
  assert.equal(items[1].body, items[0].body, "the same bytes");
  assert.equal(items[0].replayed, null, "the first answer is the write's own");
  assert.equal(items[1].replayed, "true", "the retry's answer is the stored one");
  assert.equal(items[1].status, items[0].status);
  assert.equal(items[1].text, items[0].text, "the same answer");
  const snapshot = await client.getList(id);
  assert.deepEqual(snapshot.sections[0].items.map((item) => item.model.n), [1, 2], "applied once");
  assert.equal(snapshot.sections[0].items[1].id, created.id ?? created.item?.id ?? snapshot.sections[0].items[1].id);
  assert.equal(snapshot.version, 2);
});

test("live: an outbox restarted mid-drain sends what is left with the same keys: every write once, in order", { skip }, async () => {
  const id = `js-outbox-${process.pid}`;
  await new ListdClient({ baseURL, token: writeToken }).createList({ id, sections: [{ id: "s", model: {}, items: [] }] });
  const storage = new MemoryOutboxStorage();
  let applied = 0;
  // The first client: the third write reaches listd, is applied, and its answer never comes back.
  const dying = async (url, init) => {
    const response = await fetch(url, init);
    applied += 1;
    if (applied === 3) { await response.text(); return new Promise(() => {}); }
    return response;
  };
  const first = new ListdClient({ baseURL, token: writeToken, fetch: dying, outbox: { storage } });
  const writes = [1, 2, 3, 4, 5].map((n) =>
    first.createItem(id, "s", { model: { n } }).catch((error) => error)); // no ids: a write applied twice would show
  await eventually(() => applied === 3, "the third write applied");
  first.close();
  const outcomes = await Promise.all(writes);
  assert.equal(outcomes.filter((outcome) => outcome instanceof ListdError).length, 3, "three writes left for the next client");

  const replays = [];
  const watching = async (url, init) => {
    const response = await fetch(url, init);
    if (init.method !== "GET") replays.push(response.headers.get("Idempotent-Replayed"));
    return response;
  };
  const second = new ListdClient({ baseURL, token: writeToken, fetch: watching, outbox: { storage } });
  await eventually(() => replays.length === 3 && second.pendingWrites.count === 0, "the outbox drained");
  assert.deepEqual(replays, ["true", null, null], "the write applied before the restart is answered from listd's record");
  const snapshot = await second.getList(id);
  assert.deepEqual(snapshot.sections[0].items.map((item) => item.model.n), [1, 2, 3, 4, 5], "each once, in order");
});

test("live: an optimistic write shows at once and its confirmation shows nothing new", { skip }, async () => {
  const client = new ListdClient({ baseURL, token: writeToken });
  const id = `js-optimistic-${process.pid}`;
  await client.createList({ id, sections: [{ id: "s", model: {}, items: [{ id: "a", model: { n: 1 } }] }] });
  const updates = [];
  const follower = client.follow(id, { onChanges: ({ answer }) => updates.push(answer) });
  try {
    await eventually(() => follower.state === "live" && follower.getSnapshot()?.version === 1, "live at version 1");
    const written = follower.patch([{ op: "insertItem", section: "s", item: { id: "b", model: { n: 2, tags: ["x"] } } }]);
    assert.deepEqual(follower.getSnapshot().sections[0].items.map((item) => item.id), ["a", "b"], "shown at once");
    assert.deepEqual(follower.getSnapshot().pending, ["b"]);
    const shown = follower.getSnapshot().sections;
    await written;
    await eventually(() => follower.snapshot.version === 2 && follower.getSnapshot().pending === undefined, "confirmed");
    assert.equal(updates.length, 1, "only the optimistic update: the echo and the answer show nothing new");
    assert.equal(follower.getSnapshot().sections, shown, "the same sections object");
    assert.deepEqual(follower.getSnapshot().sections, (await client.getList(id)).sections, "what shows is the server's state");
  } finally {
    follower.stop(); // a failed check must not leave the stream holding the process
  }
  await follower.done;
});
