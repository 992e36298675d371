// Offline reads of followed data: a follow keeps its last state in a
// snapshot storage, a page opened offline shows it at once (`fromCache`),
// and the follow resumes from its version and epoch with a change when the
// server answers. `node --test clients/js/`; fake fetch, clock and
// IndexedDB, no wall-clock waits.
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { IndexedDBOutboxStorage, IndexedDBSnapshotStorage, ListdClient, MemoryOutboxStorage, MemorySnapshotStorage } from "./listd.js";
import { event, eventStream, fakeClock, fakeFetch, fakeIndexedDB, item, json, section, until } from "./testing.mjs";

// A failed assertion must not leave a follow running (and the test process waiting on its timers).
const started = [];
const follow = ListdClient.prototype.follow;
ListdClient.prototype.follow = function (...args) { const follower = follow.apply(this, args); started.push(follower); return follower; };
afterEach(() => { for (const follower of started.splice(0)) follower.stop(); });

const v2 = { id: "l", name: "L", epoch: "e", version: 2, sections: [section("s", [item("a"), item("b")])] };
const change = (from, to, id = `n${to}`) => ({
  list: "l", epoch: "e", from, to, stages: [{ itemInserted: [{ at: [0, 0], item: item(id) }] }],
});
const record = (snapshot, extra = {}) => ({ format: 1, list: "l", view: "", savedAt: 0, snapshot, ...extra });
const ids = (snapshot) => snapshot.sections.flatMap((s) => s.items.map((i) => i.id));

/** A server that is down until `up()`; then GET /lists/l is `snapshot` and every stream is a new `eventStream`. */
function server(snapshot = v2) {
  let online = false;
  const streams = [];
  const { fetch, calls } = fakeFetch((path) => {
    if (!online) throw new TypeError("fetch failed: the network is down");
    if (path.startsWith("/lists/l/events")) {
      const stream = eventStream([], { hang: true });
      streams.push(stream);
      return stream.response;
    }
    return json(200, snapshot);
  });
  return { fetch, calls, streams, up: () => { online = true; } };
}

test("offline start: the stored state shows at once (fromCache) and the follow resumes from its version and epoch with a change, not a GET", async () => {
  const snapshots = new MemorySnapshotStorage();
  // A first follow, online, stores what it followed.
  const first = server();
  first.up();
  const earlier = new ListdClient({ baseURL: "http://x", fetch: first.fetch, snapshots }).follow("l");
  await until(() => earlier.state === "live", "the first follow live");
  first.streams[0].send(event("change", change(2, 3)));
  await until(() => earlier.getSnapshot().version === 3, "the change");
  earlier.stop();
  await earlier.done;
  assert.equal(snapshots.records.get("l").snapshot.version, 3, "the last state is stored under the list's id");

  // The page opened again, offline.
  const clock = fakeClock();
  const net = server();
  const updates = [];
  const follower = new ListdClient({ baseURL: "http://x", fetch: net.fetch, clock, snapshots })
    .follow("l", { minDelay: 1, maxDelay: 1, onSnapshot: (s) => updates.push(["snapshot", s.version, s.fromCache]),
      onChanges: ({ snapshot }) => updates.push(["changes", snapshot.version, snapshot.fromCache]),
      onReset: (s) => updates.push(["reset", s.version]) });
  await until(() => follower.state === "reconnecting", "the first attempt failed");
  const cached = follower.getSnapshot();
  assert.equal(cached.fromCache, true, "marked as the stored state");
  assert.equal(cached.version, 3);
  assert.equal(cached.name, "L", "the snapshot's other fields are kept");
  assert.deepEqual(ids(cached), ["n3", "a", "b"]);
  assert.equal(follower.getSnapshot(), cached, "one object while nothing changes");
  assert.deepEqual(updates, [["snapshot", 3, true]]);
  assert.deepEqual(net.calls.map((call) => call.path), ["/lists/l/events?since=3&epoch=e"], "never a GET of the snapshot");

  // The network is back: the stream opens from the stored version; the change since then arrives as a change.
  net.up();
  clock.advance(1);
  await until(() => follower.state === "live", "live");
  assert.equal(follower.getSnapshot().fromCache, undefined, "the server answered: no longer from the cache");
  assert.equal(follower.getSnapshot().sections, cached.sections, "the same sections: nothing to redraw");
  net.streams[0].send(event("change", change(3, 4)));
  await until(() => follower.getSnapshot().version === 4, "the change since the stored version");
  assert.deepEqual(ids(follower.getSnapshot()), ["n4", "n3", "a", "b"]);
  assert.deepEqual(updates, [["snapshot", 3, true], ["changes", 4, undefined]]);
  assert.ok(net.calls.every((call) => call.path.startsWith("/lists/l/events?since=3&epoch=e")), "no GET /lists/l");
  follower.stop();
  await follower.done;
  assert.equal(snapshots.records.get("l").snapshot.version, 4);
  assert.equal(snapshots.records.get("l").snapshot.fromCache, undefined, "the mark is not stored");
});

test("a change as the stream's first event replaces fromCache in one update; long-polling asks without waiting", async () => {
  const snapshots = new MemorySnapshotStorage();
  await snapshots.put("l", record(v2));
  const net = server();
  net.up();
  const seen = [];
  const follower = new ListdClient({ baseURL: "http://x", fetch: net.fetch, snapshots }).follow("l");
  follower.subscribe(() => seen.push([follower.getSnapshot()?.version, follower.getSnapshot()?.fromCache]));
  await until(() => net.streams.length === 1, "the stream");
  net.streams[0].send(event("change", change(2, 3)));
  await until(() => follower.getSnapshot()?.version === 3, "the change");
  assert.equal(follower.getSnapshot().fromCache, undefined);
  follower.stop();

  // Over long-poll, a restored state's first poll has timeout=0: confirmed (or moved on) at once.
  await snapshots.put("l", record(v2));
  const { fetch, calls } = fakeFetch((path) => (path.includes("timeout=0")
    ? json(200, { list: "l", epoch: "e", from: 2, to: 2, stages: [] })
    : new Promise(() => {})));
  const polling = new ListdClient({ baseURL: "http://x", fetch, snapshots }).follow("l", { transport: "poll" });
  await until(() => calls.length === 2, "the second poll");
  assert.equal(calls[0].path, "/lists/l/changes?since=2&timeout=0&epoch=e");
  assert.equal(calls[1].path, "/lists/l/changes?since=2&timeout=30&epoch=e");
  assert.equal(polling.getSnapshot().fromCache, undefined, "the empty answer confirmed it");
  assert.equal(polling.getSnapshot().version, 2);
  polling.stop();
});

test("a stored state of another epoch is replaced by the server's reset; a 410 by a fresh snapshot", async () => {
  const snapshots = new MemorySnapshotStorage();
  await snapshots.put("l", record({ ...v2, epoch: "old", version: 9 }));
  const net = server();
  net.up();
  const updates = [];
  const follower = new ListdClient({ baseURL: "http://x", fetch: net.fetch, snapshots })
    .follow("l", { onReset: (s, reason) => updates.push(["reset", s.epoch, s.version, reason]) });
  await until(() => net.streams.length === 1, "the stream");
  assert.equal(net.calls[0].path, "/lists/l/events?since=9&epoch=old", "the stored epoch is sent back");
  const fresh = { id: "l", epoch: "new", version: 1, sections: [section("t", [])] };
  net.streams[0].send(event("reset", { list: "l", epoch: "new", from: 9, to: 1, reset: true, snapshot: fresh }));
  await until(() => follower.getSnapshot()?.epoch === "new", "the reset");
  assert.deepEqual(updates, [["reset", "new", 1, "server"]]);
  assert.equal(follower.getSnapshot().fromCache, undefined);
  follower.stop();
  await follower.done;
  assert.equal(snapshots.records.get("l").snapshot.epoch, "new", "the server's state replaced the stored one");

  // A server (or a proxy in front of it) that answers 410 Gone: the follow starts again from a GET.
  const clock = fakeClock();
  await snapshots.put("l", record(v2));
  const { fetch, calls } = fakeFetch((path) => (path.startsWith("/lists/l/events")
    ? json(410, { title: "Gone", detail: "no history from version 2" })
    : json(200, { ...v2, version: 7 })));
  const reasons = [];
  const gone = new ListdClient({ baseURL: "http://x", fetch, clock, snapshots })
    .follow("l", { minDelay: 1, maxDelay: 1, onReset: (s, reason) => reasons.push([s.version, reason]) });
  await until(() => gone.state === "reconnecting", "the 410");
  clock.advance(1);
  await until(() => gone.getSnapshot()?.version === 7, "the snapshot");
  assert.deepEqual(reasons, [[7, "expired"]]);
  assert.deepEqual(calls.slice(0, 2).map((call) => call.path), ["/lists/l/events?since=2&epoch=e", "/lists/l"]);
  assert.equal(gone.getSnapshot().fromCache, undefined);
  gone.stop();
  await gone.done;
  assert.equal(snapshots.records.get("l").snapshot.version, 7);
});

test("a corrupt or foreign stored record is ignored: the follow starts from a GET and overwrites it; a failing storage is reported, never thrown", async () => {
  const corrupt = [
    "not an object",
    null,
    { format: 2, list: "l", view: "", snapshot: v2 },
    record({ ...v2, version: "2" }),
    record({ ...v2, version: -1 }),
    record({ ...v2, epoch: "" }),
    record({ ...v2, sections: "none" }),
    record({ ...v2, sections: [section("s", [item("a"), item("a")])] }),
    record({ ...v2, sections: [section("s", []), section("s", [])] }),
    record({ ...v2, sections: [{ id: "s" }] }),
    record({ ...v2, sections: [null] }),
    record(v2, { list: "other" }),
    record(v2, { view: "where=done:false" }),
    Object.defineProperty({}, "snapshot", { get() { throw new Error("a getter that throws"); } }),
  ];
  for (const [index, stored] of corrupt.entries()) {
    const snapshots = new MemorySnapshotStorage();
    snapshots.records.set("l", stored);
    const net = server();
    net.up();
    const updates = [];
    const follower = new ListdClient({ baseURL: "http://x", fetch: net.fetch, snapshots })
      .follow("l", { onSnapshot: (s) => updates.push(["snapshot", s.version, s.fromCache]), onReset: () => updates.push(["reset"]) });
    await until(() => follower.state === "live", `live (record ${index})`);
    assert.deepEqual(updates, [["snapshot", 2, undefined]], `record ${index}: the server's snapshot, as the first`);
    assert.equal(net.calls[0].path, "/lists/l", `record ${index}: a GET`);
    follower.stop();
    await follower.done;
    assert.deepEqual(snapshots.records.get("l").snapshot, v2, `record ${index}: overwritten`);
  }

  // get, put and delete that throw or reject: reported; the follow goes on as without a storage.
  for (const broken of [
    { get() { throw new Error("get threw"); }, async put() { throw new Error("put failed"); }, async delete() {} },
    { get: () => Promise.reject(new Error("get rejected")), put() { throw new Error("put threw"); }, async delete() {} },
  ]) {
    const errors = [];
    const net = server();
    net.up();
    const follower = new ListdClient({ baseURL: "http://x", fetch: net.fetch })
      .follow("l", { snapshots: broken, onStorageError: (error) => errors.push(error.message) });
    await until(() => follower.state === "live", "live");
    assert.deepEqual(follower.getSnapshot(), v2);
    follower.stop();
    await follower.done;
    assert.match(errors[0], /^get/, "the read's error");
    assert.ok(errors.length >= 2 && errors.slice(1).every((message) => /^put/.test(message)), `then the writes': ${errors}`);
  }
});

test("writes are throttled under a burst (the first state at once, the last when the interval is over) and the last state is written on stop", async () => {
  const clock = fakeClock();
  const snapshots = new MemorySnapshotStorage();
  const puts = [];
  const put = snapshots.put.bind(snapshots);
  snapshots.put = (key, value) => { puts.push(value.snapshot.version); return put(key, value); };
  const net = server();
  net.up();
  const follower = new ListdClient({ baseURL: "http://x", fetch: net.fetch, clock, snapshots }).follow("l");
  await until(() => follower.state === "live", "live");
  assert.deepEqual(puts, [2], "the first snapshot, at once");
  for (let version = 2; version < 52; version++) net.streams[0].send(event("change", change(version, version + 1)));
  await until(() => follower.getSnapshot().version === 52, "fifty changes");
  assert.deepEqual(puts, [2], "nothing more within the interval");
  clock.advance(999);
  assert.deepEqual(puts, [2]);
  clock.advance(1);
  await until(() => puts.length === 2, "the write when the interval is over");
  assert.deepEqual(puts, [2, 52], "the burst's last state, once");
  clock.advance(5000);
  assert.deepEqual(puts, [2, 52], "nothing new, nothing written");

  net.streams[0].send(event("change", change(52, 53)));
  await until(() => puts.length === 3, "a change after a quiet interval: at once");
  net.streams[0].send(event("change", change(53, 54)));
  net.streams[0].send(event("change", change(54, 55)));
  await until(() => follower.getSnapshot().version === 55, "two more");
  assert.deepEqual(puts, [2, 52, 53]);
  follower.stop(); // within the interval: the last state is written now
  await follower.done;
  assert.deepEqual(puts, [2, 52, 53, 55]);
  assert.equal(snapshots.records.get("l").snapshot.version, 55);
  assert.equal(clock.pending(), 0, "no timer left behind");
});

test("a write still running when the state moves is followed by one more; a deleted list's stored state is removed", async () => {
  const clock = fakeClock();
  const snapshots = new MemorySnapshotStorage();
  const writes = [];
  snapshots.put = (key, value) => new Promise((resolve) => writes.push({ version: value.snapshot.version, done: () => {
    snapshots.records.set(key, value);
    resolve();
  } }));
  const net = server();
  net.up();
  const follower = new ListdClient({ baseURL: "http://x", fetch: net.fetch, clock, snapshots })
    .follow("l", { snapshotInterval: 10 });
  await until(() => writes.length === 1, "the first write");
  net.streams[0].send(event("change", change(2, 3)));
  net.streams[0].send(event("change", change(3, 4)));
  await until(() => follower.getSnapshot().version === 4, "two changes");
  clock.advance(100);
  assert.equal(writes.length, 1, "one write at a time");
  writes[0].done();
  await until(() => clock.pending() === 1 || writes.length === 2, "the next write planned");
  clock.advance(10);
  await until(() => writes.length === 2, "the next write");
  assert.equal(writes[1].version, 4, "the last state");
  writes[1].done();

  net.streams[0].send(`event: deleted\ndata: ${JSON.stringify({ list: "l", deleted: true })}\n\n`);
  await until(() => follower.getSnapshot() === null, "deleted");
  clock.advance(10);
  await until(() => !snapshots.records.has("l"), "the stored state removed");
  follower.stop();
  await follower.done;
});

test("IndexedDBSnapshotStorage: a record per list and view, written with relaxed durability; a follow over it resumes offline", async () => {
  const indexedDB = fakeIndexedDB();
  const storage = new IndexedDBSnapshotStorage(undefined, indexedDB);
  assert.equal(storage.name, "listd-snapshots");
  assert.equal(await storage.get("l"), undefined);
  await storage.put("l", record(v2));
  await storage.put("l?where=done%3Afalse", record(v2, { view: "where=done%3Afalse" }));
  assert.deepEqual(await storage.get("l"), record(v2));
  assert.deepEqual([...indexedDB.databases.get("listd-snapshots").get("snapshots").records.keys()], ["l", "l?where=done%3Afalse"]);
  await storage.delete("l");
  assert.equal(await storage.get("l"), undefined);
  assert.ok(indexedDB.transactions.filter((t) => t.mode === "readwrite").every((t) => t.options.durability === "relaxed"));

  // A view's follow, offline, over a second storage on the same database (a reloaded page).
  const view = "where=done%3Afalse";
  const reloaded = new IndexedDBSnapshotStorage(undefined, indexedDB);
  const net = server();
  const follower = new ListdClient({ baseURL: "http://x", fetch: net.fetch, clock: fakeClock(), snapshots: reloaded })
    .follow("l", { view: { where: { done: false } } });
  await until(() => follower.getSnapshot() !== null, "the stored view");
  assert.equal(follower.getSnapshot().fromCache, true);
  await until(() => net.calls.length === 1, "the first attempt");
  assert.equal(net.calls[0].path, `/lists/l/events?since=2&epoch=e&${view}`);
  follower.stop();
  await follower.done;
  await reloaded.close();

  // The outbox's storage shares the code: still its own store, keyed by id, strict.
  const outbox = new IndexedDBOutboxStorage("o", indexedDB);
  await outbox.put({ id: "k", seq: 1, method: "POST", path: "/lists", headers: {}, createdAt: 0 });
  assert.deepEqual((await outbox.load()).map((r) => r.id), ["k"]);
  assert.equal(indexedDB.transactions.at(-2).options.durability, "strict");
  assert.throws(() => new IndexedDBSnapshotStorage(), /MemorySnapshotStorage/);
  assert.ok(new MemoryOutboxStorage());
});

test("snapshots: false turns the client's storage off for one follow; since/epoch/sections win over a stored state", async () => {
  const snapshots = new MemorySnapshotStorage();
  await snapshots.put("l", record({ ...v2, version: 5 }));
  const net = server();
  net.up();
  const client = new ListdClient({ baseURL: "http://x", fetch: net.fetch, snapshots });
  const off = client.follow("l", { snapshots: false });
  await until(() => off.state === "live", "live");
  assert.equal(net.calls[0].path, "/lists/l");
  off.stop();
  await off.done;
  assert.equal(snapshots.records.get("l").snapshot.version, 5, "untouched");

  const given = client.follow("l", { since: 2, epoch: "e", sections: v2.sections });
  await until(() => given.state === "live", "live");
  assert.equal(net.calls.at(-1).path, "/lists/l/events?since=2&epoch=e");
  assert.equal(given.getSnapshot().fromCache, undefined);
  given.stop();
  await given.done;
  assert.equal(snapshots.records.get("l").snapshot.version, 2, "what the follow held is stored");
});

test("a stored list that is gone (404) is reported deleted and its record removed; a storage that never answers is given up after 2 s", async () => {
  const snapshots = new MemorySnapshotStorage();
  await snapshots.put("l", record(v2));
  const clock = fakeClock();
  const notFound = { type: "https://listd.dev/problems/not-found", title: "Not Found", detail: "no list l" };
  const { fetch } = fakeFetch(() => json(404, notFound));
  const deleted = [];
  const gone = new ListdClient({ baseURL: "http://x", fetch, clock, snapshots })
    .follow("l", { minDelay: 1, maxDelay: 1, onDeleted: (list) => deleted.push(list) });
  await until(() => deleted.length === 1, "reported deleted");
  assert.equal(gone.getSnapshot(), null);
  await until(() => !snapshots.records.has("l"), "the record removed");
  assert.notEqual(gone.state, "closed", "waits for the list to come back, as a follow of a deleted list does");
  gone.stop();
  await gone.done;

  const net = server();
  net.up();
  const hanging = { get: () => new Promise(() => {}), async put() {}, async delete() {} };
  const follower = new ListdClient({ baseURL: "http://x", fetch: net.fetch, clock, snapshots: hanging }).follow("l");
  await until(() => clock.pending() === 1, "the storage's deadline");
  assert.equal(net.calls.length, 0, "waits for the storage first");
  clock.advance(2000);
  await until(() => follower.state === "live", "live without it");
  assert.equal(net.calls[0].path, "/lists/l");
  follower.stop();
  await follower.done;
});
