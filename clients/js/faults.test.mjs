// Issue 26's bugs in the JavaScript client, one test each, on a fake fetch and
// a fake clock: `node --test clients/js/`. No test waits on wall-clock time:
// each moves the fake clock and then waits for a state, yielding to the event
// loop a bounded number of times.
import { test } from "node:test";
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { isDeepStrictEqual } from "node:util";
import { applyAnswer, ListdClient } from "./listd.js";
import { event, eventStream, fakeClock, fakeFetch, item, json, section, until } from "./testing.mjs";

const snapshot = { id: "l", epoch: "e", version: 1, sections: [section("s", [item("a")])] };

test("a silent event stream is given up after the heartbeat timeout, and the follow reconnects", async () => {
  const clock = fakeClock();
  const streams = [];
  const { fetch, calls } = fakeFetch((path) => {
    if (path === "/lists/l") return json(200, snapshot);
    const stream = eventStream([": listd event stream\n\n"], { hang: true });
    streams.push(stream);
    return stream.response;
  });
  const states = [];
  const follower = new ListdClient({ baseURL: "http://x", fetch }).follow("l", {
    clock, heartbeatTimeout: 45000, minDelay: 1, maxDelay: 1, onState: (state) => states.push(state),
  });
  const connections = () => calls.filter((call) => call.path.startsWith("/lists/l/events")).length;
  await until(() => follower.state === "live", "a live stream");
  clock.advance(40000);
  streams[0].send(": heartbeat\n\n"); // a heartbeat restarts the deadline
  await until(() => streams[0].delivered(), "the heartbeat read");
  clock.advance(40000);
  assert.equal(connections(), 1, "80 s with a heartbeat at 40 s: still the first connection");
  assert.equal(follower.state, "live");
  clock.advance(5001);
  await until(() => states.includes("reconnecting"), "the silent stream given up");
  clock.advance(1);
  await until(() => connections() === 2, "a second connection");
  assert.ok(streams[0].cancelled(), "the silent stream's body is cancelled");
  follower.stop();
});

test("a long-poll that never answers is given up after its timeout plus a grace, and asked again", async () => {
  const clock = fakeClock();
  const { fetch, calls } = fakeFetch((path) => {
    if (path === "/lists/l") return json(200, snapshot);
    return new Promise(() => {}); // a silent connection: no answer, no error
  });
  const follower = new ListdClient({ baseURL: "http://x", fetch }).follow("l", {
    clock, transport: "poll", minDelay: 1, maxDelay: 1,
  });
  const polls = () => calls.filter((call) => call.path.startsWith("/lists/l/changes")).length;
  await until(() => polls() === 1, "the first long-poll");
  clock.advance(30000 + 14999);
  assert.equal(polls(), 1, "within timeout + grace the poll is waited for");
  clock.advance(1);
  await until(() => follower.state === "reconnecting", "the long-poll given up");
  clock.advance(1);
  await until(() => polls() === 2, "a second long-poll");
  follower.stop();
});

test("a throwing onChanges gets the data again as a reset, so the UI never stays behind", async () => {
  const change12 = { list: "l", epoch: "e", from: 1, to: 2, stages: [{ itemInserted: [{ at: [0, 1], item: item("b") }] }] };
  const change23 = { list: "l", epoch: "e", from: 2, to: 3, stages: [{ itemInserted: [{ at: [0, 2], item: item("c") }] }] };
  const { fetch } = fakeFetch((path, init) => {
    if (path === "/lists/l") return json(200, snapshot);
    // A server that resumes exactly from Last-Event-ID, else from `since`.
    if (init.headers["Last-Event-ID"] === "l:e:2") return eventStream([event("change", change23)], { hang: true }).response;
    return eventStream([event("change", change12), event("change", change23)], { hang: true }).response;
  });
  let ui = null;
  const behind = [];
  const reported = [];
  let throwOnce = true;
  const follower = new ListdClient({ baseURL: "http://x", fetch }).follow("l", {
    minDelay: 1, maxDelay: 1,
    onSnapshot: (s) => { ui = s.sections; },
    onReset: (s) => { ui = s.sections; },
    onChanges: ({ answer, states }) => {
      if (!isDeepStrictEqual(states[0], ui)) behind.push(answer.to); // the UI does not hold what the change starts from
      if (throwOnce) { throwOnce = false; throw new Error("render failed"); }
      ui = states.at(-1);
    },
    onListenerError: (error) => reported.push(error.message),
  });
  await until(() => follower.snapshot?.version === 3 && ui?.[0].items.length === 3, "version 3 on screen");
  follower.stop();
  assert.deepEqual(behind, [], "every change started from what the UI showed");
  assert.deepEqual(ui, [section("s", [item("a"), item("b"), item("c")])]);
  assert.deepEqual(reported, ["render failed"], "the listener's error is reported, not swallowed");
});

test("a list that never existed stops the follow with a not-found error instead of retrying forever", async () => {
  const { fetch, calls } = fakeFetch(() =>
    json(404, { type: "https://listd.dev/problems/unknown-list", title: "No such list", status: 404, detail: "no list nope" }));
  const errors = [];
  const deleted = [];
  const follower = new ListdClient({ baseURL: "http://x", fetch }).follow("nope", {
    minDelay: 1, maxDelay: 1, onError: (error) => errors.push(error.status), onDeleted: (list) => deleted.push(list),
  });
  await until(() => errors.length > 0 || calls.length > 5, "an error or retries");
  follower.stop(); // a no-op once it has ended by itself
  await follower.done;
  assert.deepEqual(errors, [404]);
  assert.deepEqual(deleted, [], "never there: not reported as deleted");
  assert.equal(calls.length, 1, "asked once");
  assert.equal(follower.error?.status, 404);
});

test("since without sections or epoch is refused; an answer with an epoch does not apply to a snapshot without one", () => {
  const client = new ListdClient({ baseURL: "http://x", fetch: () => new Promise(() => {}) });
  assert.throws(() => client.follow("l", { since: 3, epoch: "e" }), /since.*sections/);
  assert.throws(() => client.follow("l", { since: 3, sections: [] }), /since.*epoch/);
  assert.throws(
    () => applyAnswer({ version: 3, sections: [] }, { epoch: "e", from: 3, to: 4, stages: [{ sectionInserted: [{ at: 0, section: section("x", []) }] }] }),
    /epoch/);
  const follower = client.follow("l", { since: 3, epoch: "e", sections: [] });
  follower.stop();
});

test("back-off leaves no abort listener behind", async () => {
  const clock = fakeClock();
  const { fetch, calls } = fakeFetch(() => { throw new TypeError("connect ECONNREFUSED"); });
  const follower = new ListdClient({ baseURL: "http://x", fetch }).follow("l", { clock, minDelay: 1, maxDelay: 1 });
  for (let round = 1; round <= 30; round++) {
    await until(() => calls.length > round || (calls.length === round && clock.pending() > 0), `attempt ${round}`);
    clock.advance(1);
  }
  const listeners = getEventListeners(follower.controller.signal, "abort").length;
  follower.stop();
  assert.ok(listeners <= 2, `${listeners} abort listeners after 30 back-offs`);
});

test("a non-SSE answer to the stream falls back to long-poll for a while only, and its body is cancelled", async () => {
  const clock = fakeClock();
  let cancelled = 0;
  const { fetch, calls } = fakeFetch((path) => {
    if (path === "/lists/l") return json(200, snapshot);
    if (path.startsWith("/lists/l/events")) {
      if (calls.filter((call) => call.path.startsWith("/lists/l/events")).length === 1) {
        // A proxy that answers the stream with a page of JSON it never finishes.
        const body = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode("{")); }, cancel() { cancelled += 1; } });
        return new Response(body, { status: 200, headers: { "Content-Type": "application/json" } });
      }
      return eventStream([], { hang: true }).response;
    }
    return new Promise(() => {}); // the long-poll waits
  });
  const follower = new ListdClient({ baseURL: "http://x", fetch }).follow("l", { clock, minDelay: 1, maxDelay: 1 });
  const count = (prefix) => calls.filter((call) => call.path.startsWith(prefix)).length;
  await until(() => count("/lists/l/changes") === 1, "the long-poll fallback");
  assert.equal(cancelled, 1, "the non-SSE body is cancelled");
  assert.equal(follower.state, "polling");
  clock.advance(60000); // the poll's deadline passes too: the next round tries the stream again
  await until(() => follower.state === "reconnecting" && clock.pending() > 0, "the next round");
  clock.advance(1);
  await until(() => count("/lists/l/events") === 2, "the stream tried again");
  await until(() => follower.state === "live", "live on the stream");
  follower.stop();
});
