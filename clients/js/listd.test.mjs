// Tests of listd.js: `node --test clients/js/` (Node 18+, no packages).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { applyAnswer, applyStage, EventStreamParser, ListdClient, StageError, stageMarks, viewQuery } from "./listd.js";
import { fakeClock, until } from "./testing.mjs";

const fixtureURL = new URL("../../Tests/Fixtures/stage-conformance.json", import.meta.url);

test("replays every (before, answer, after) triple of the Swift engine's fixture", () => {
  const { cases } = JSON.parse(readFileSync(fileURLToPath(fixtureURL), "utf8"));
  assert.ok(cases.length >= 100, "the fixture has its cases");
  let staged = 0;
  cases.forEach(({ before, answer, after }, index) => {
    let sections;
    if (answer.reset) {
      sections = answer.snapshot.sections;
    } else {
      const states = applyAnswer(before, answer);
      assert.equal(states.length, answer.stages.length + 1);
      sections = states[states.length - 1];
      staged += 1;
    }
    assert.deepEqual(sections, after.sections, `case ${index}`);
    assert.equal(answer.to, after.version, `case ${index}`);
  });
  assert.ok(staged >= cases.length / 2, "most cases are stages");
});

const item = (id, model = {}) => ({ id, model });
const section = (id, items, model = {}) => ({ id, model, items });

test("applies a stage the way a table view batch update does", () => {
  const before = [section("a", [item("1"), item("2"), item("3")]), section("b", [item("4")])];
  const after = applyStage(before, {
    itemDeleted: [[0, 0]],
    itemMoved: [{ from: [0, 2], to: [1, 0] }],
    itemUpdated: [{ at: [0, 1], model: { n: 1 } }],
    itemInserted: [{ at: [0, 1], item: item("5") }],
  });
  assert.deepEqual(after, [section("a", [item("2", { n: 1 }), item("5")]), section("b", [item("3"), item("4")])]);
  assert.deepEqual(before[0].items.map((i) => i.id), ["1", "2", "3"], "the input is not modified");

  const sections = applyStage(before, {
    sectionDeleted: [0],
    sectionInserted: [{ at: 1, section: section("c", []) }],
    sectionUpdated: [{ at: 1, model: { title: "B" } }],
  });
  assert.deepEqual(sections, [section("b", [item("4")], { title: "B" }), section("c", [])]);
});

test("stageMarks names what a stage does by id, for a UI that keeps its rows by id", () => {
  const before = [section("a", [item("1"), item("2"), item("3")]), section("b", [item("4")]), section("c", [])];
  const stage = {
    sectionDeleted: [2],
    sectionInserted: [{ at: 0, section: section("n", []) }],
    itemDeleted: [[0, 0]],
    itemMoved: [{ from: [0, 2], to: [1, 0] }],
    itemUpdated: [{ at: [0, 1], model: { n: 1 } }],
    itemInserted: [{ at: [1, 1], item: item("5") }],
  };
  const after = applyStage(before, stage);
  assert.deepEqual(stageMarks(before, stage, after), {
    items: { 5: "inserted", 2: "updated", 3: "moved" },
    sections: { n: "inserted" },
    deletedItems: ["1"],
    deletedSections: ["c"],
  });
});

test("refuses what SectionDiff refuses", () => {
  const before = [section("a", [item("1"), item("2")])];
  const cases = [
    [{ itemDeleted: [[0, 2]] }, /out of range/],
    [{ itemDeleted: [[0, 0]], itemMoved: [{ from: [0, 0], to: [0, 0] }] }, /already deleted/],
    [{ itemInserted: [{ at: [0, 0], item: item("x") }, { at: [0, 0], item: item("y") }] }, /already filled/],
    [{ sectionDeleted: [0], itemDeleted: [[0, 0]] }, /section deleted in the same stage/],
    [{ sectionInserted: [{ at: 0, section: section("n", []) }], itemInserted: [{ at: [0, 0], item: item("x") }] },
      /section inserted in the same stage/],
    [{ sectionMoved: [{ from: 0, to: 1 }] }, /out of range/],
    [{ itemDeleted: [["0", 0]] }, /not a \[section, item\] position/],
  ];
  for (const [stage, message] of cases) {
    assert.throws(() => applyStage(before, stage), (error) => error instanceof StageError && message.test(error.message),
      JSON.stringify(stage));
  }
});

test("an answer must start at the version and epoch held", () => {
  const snapshot = { epoch: "e", version: 3, sections: [] };
  assert.throws(() => applyAnswer(snapshot, { epoch: "e", from: 2, to: 4, stages: [] }), /starts at version 2/);
  assert.throws(() => applyAnswer(snapshot, { epoch: "f", from: 3, to: 4, stages: [] }), /epoch f/);
});

test("parses the event-stream format in any chunking", () => {
  const text = "retry: 1000\r\n: listd event stream\r\n\r\nid: l:e:2\nevent: change\ndata: {\"a\":1}\n\n:\n\nid: l:e:3\nevent: deleted\ndata: x\ndata: y\n\n";
  for (const size of [1, 2, 3, 7, text.length]) {
    const events = [];
    const parser = new EventStreamParser((event) => events.push(event));
    for (let at = 0; at < text.length; at += size) parser.push(text.slice(at, at + size));
    assert.deepEqual(events, [
      { event: "change", data: "{\"a\":1}", id: "l:e:2" },
      { event: "deleted", data: "x\ny", id: "l:e:3" },
    ], `chunks of ${size}`);
    assert.equal(parser.retry, 1000);
  }
});

// A fake server: `routes` answers by path; an event stream is a list of chunks then an end (or a hang).
function fakeFetch(handler) {
  const calls = [];
  const fetch = async (url, init = {}) => {
    const path = url.replace(/^http:\/\/x/, "");
    calls.push({ path, headers: init.headers || {} });
    return handler(path, init, calls.length);
  };
  return { fetch, calls };
}

function json(status, value, headers = {}) {
  return new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json", ...headers } });
}

function eventStream(chunks, { hang = false } = {}) {
  const encoder = new TextEncoder();
  const body = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      if (!hang) controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
}

const event = (kind, data) => `id: ${data.list}:${data.epoch}:${data.to}\nevent: ${kind}\ndata: ${JSON.stringify(data)}\n\n`;

function waitFor(condition, what) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const check = () => {
      if (condition()) return resolve();
      if (Date.now() - started > 3000) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(check, 5);
    };
    check();
  });
}

test("follow: snapshot, then stages from the stream; a replayed answer is not applied twice", async () => {
  const snapshot = { id: "l", epoch: "e", version: 1, sections: [section("s", [item("a")])] };
  const change = { list: "l", epoch: "e", from: 1, to: 2, stages: [{ itemInserted: [{ at: [0, 1], item: item("b") }] }] };
  const next = { list: "l", epoch: "e", from: 2, to: 3, stages: [{ itemDeleted: [[0, 0]] }] };
  const { fetch, calls } = fakeFetch((path) => {
    if (path === "/lists/l") return json(200, snapshot);
    // The same answer twice (as after a reconnect), the next one, then the stream stays open.
    return eventStream([event("change", change), event("change", change), event("change", next)], { hang: true });
  });
  const seen = [];
  const client = new ListdClient({ baseURL: "http://x", token: "secret", fetch });
  const follower = client.follow("l", {
    onSnapshot: (s) => seen.push(["snapshot", s.version]),
    onChanges: ({ answer, states }) => seen.push(["changes", answer.to, states.at(-1)[0].items.map((i) => i.id)]),
  });
  // The next change comes after the replay: once it is seen, the replay was handled.
  await waitFor(() => follower.snapshot?.version === 3, "the next change");
  follower.stop();
  assert.deepEqual(seen, [["snapshot", 1], ["changes", 2, ["a", "b"]], ["changes", 3, ["b"]]]);
  assert.equal(calls[1].path, "/lists/l/events?since=1&epoch=e");
  assert.equal(calls[1].headers.Authorization, "Bearer secret", "the token travels in a header");
  assert.ok(calls.every((call) => !call.path.includes("secret")), "never in a URL");
});

test("follow: a stage that does not apply makes the client refetch, and it resumes with Last-Event-ID", async () => {
  let snapshots = 0;
  const bad = { list: "l", epoch: "e", from: 1, to: 2, stages: [{ itemDeleted: [[0, 5]] }] };
  const { fetch, calls } = fakeFetch((path, init, count) => {
    if (path === "/lists/l") {
      snapshots += 1;
      return json(200, { id: "l", epoch: "e", version: snapshots === 1 ? 1 : 2, sections: [section("s", [])] });
    }
    if (count <= 2) return eventStream([event("change", bad)]);
    return eventStream([], { hang: true });
  });
  const resets = [];
  const client = new ListdClient({ baseURL: "http://x", fetch });
  const follower = client.follow("l", { onReset: (s, reason) => resets.push([s.version, reason]), minDelay: 1, maxDelay: 5 });
  await waitFor(() => calls.length >= 4, "the reconnect");
  follower.stop();
  assert.deepEqual(resets, [[2, "mismatch"]]);
  assert.equal(calls[3].path, "/lists/l/events?since=2&epoch=e", "a refetch clears the event id: resume from the snapshot");
});

test("follow: maxChanges goes in the query of every stream connection and of the long-poll", async () => {
  const change = { list: "l", epoch: "e", from: 1, to: 2, stages: [] };
  const { fetch, calls } = fakeFetch((path, init, count) => {
    if (path === "/lists/l") return json(200, { id: "l", epoch: "e", version: 1, sections: [] });
    if (path.startsWith("/lists/l/events")) {
      if (count === 2) return eventStream([event("change", change)]);
      return json(404, { type: "https://listd.dev/problems/not-found", detail: "no route" });
    }
    return new Promise(() => {}); // the long-poll waits
  });
  const client = new ListdClient({ baseURL: "http://x", fetch });
  const follower = client.follow("l", { maxChanges: 5, minDelay: 1, maxDelay: 5 });
  await waitFor(() => calls.some((call) => call.path.startsWith("/lists/l/changes")), "the long-poll");
  follower.stop();
  assert.equal(calls[1].path, "/lists/l/events?since=1&epoch=e&maxChanges=5");
  assert.equal(calls[2].path, "/lists/l/events?maxChanges=5", "resuming with Last-Event-ID keeps maxChanges");
  assert.equal(calls[2].headers["Last-Event-ID"], "l:e:2");
  assert.equal(calls.at(-1).path, "/lists/l/changes?since=2&timeout=30&epoch=e&maxChanges=5");
});

test("follow: Retry-After is honoured, and long-poll is the fallback when the server has no event stream", async () => {
  const clock = fakeClock();
  const { fetch, calls } = fakeFetch((path, init, count) => {
    if (path === "/lists/l") return json(200, { id: "l", epoch: "e", version: 1, sections: [] });
    if (path.startsWith("/lists/l/events")) {
      if (count === 2) return json(503, { title: "busy", detail: "at the connection limit" }, { "Retry-After": "1" });
      return json(404, { type: "https://listd.dev/problems/not-found", detail: "no route" });
    }
    return new Promise(() => {}); // the long-poll waits
  });
  const states = [];
  const client = new ListdClient({ baseURL: "http://x", fetch, clock });
  const follower = client.follow("l", { onState: (state) => states.push(state), minDelay: 1, maxDelay: 5 });
  await until(() => follower.state === "reconnecting" && clock.pending() > 0, "the back-off after the 503");
  clock.advance(999);
  assert.equal(calls.length, 2, "no request within the second Retry-After asked for");
  clock.advance(1);
  await until(() => calls.some((call) => call.path.startsWith("/lists/l/changes")), "the long-poll");
  follower.stop();
  assert.equal(calls.at(-1).path, "/lists/l/changes?since=1&timeout=30&epoch=e");
  assert.ok(states.includes("reconnecting") && states.includes("polling"), states.join(","));
});

test("follow: a reset replaces the data, a deletion is reported", async () => {
  const reset = { list: "l", epoch: "f", from: 1, to: 7, reset: true, stages: [],
    snapshot: { id: "l", epoch: "f", version: 7, sections: [section("t", [])] } };
  const { fetch } = fakeFetch((path) => {
    if (path === "/lists/l") return json(200, { id: "l", epoch: "e", version: 1, sections: [] });
    return eventStream([event("reset", reset), `id: l:f:7\nevent: deleted\ndata: {"list":"l","deleted":true}\n\n`], { hang: true });
  });
  const seen = [];
  const follower = new ListdClient({ baseURL: "http://x", fetch }).follow("l", {
    onReset: (s, reason) => seen.push(["reset", s.version, reason]),
    onDeleted: (list) => seen.push(["deleted", list]),
  });
  await waitFor(() => seen.length >= 2, "reset and deletion");
  follower.stop();
  assert.deepEqual(seen, [["reset", 7, "server"], ["deleted", "l"]]);
});

test("follow with several base URLs: a dead instance is left for the next, from the version held", async () => {
  const snapshot = { id: "l", epoch: "e", version: 1, sections: [section("s", [item("a")])] };
  const change = { list: "l", epoch: "e", from: 1, to: 2, stages: [{ itemInserted: [{ at: [0, 1], item: item("b") }] }] };
  const calls = [];
  const fetch = async (url, init = {}) => {
    calls.push(url);
    if (url.startsWith("http://a")) {
      if (url === "http://a/lists/l") return json(200, snapshot);
      throw new TypeError("connect ECONNREFUSED"); // instance a is gone
    }
    if (url.startsWith("http://b/lists/l/events")) return eventStream([event("change", change)], { hang: true });
    return json(500, { title: "unexpected", detail: url });
  };
  const seen = [];
  const moves = [];
  const client = new ListdClient({ baseURLs: ["http://a/", "http://b"], fetch });
  const follower = client.follow("l", {
    minDelay: 1, maxDelay: 5,
    onSnapshot: (s) => seen.push(["snapshot", s.version]),
    onReset: (s) => seen.push(["reset", s.version]),
    onChanges: ({ answer, states }) => seen.push(["changes", answer.to, states.at(-1)[0].items.map((i) => i.id)]),
    onFailover: ({ list, from, to, error }) => moves.push([list, from, to, error.status]),
  });
  await waitFor(() => seen.length >= 2, "the change from the second instance");
  follower.stop();
  assert.deepEqual(seen, [["snapshot", 1], ["changes", 2, ["a", "b"]]], "no second snapshot, no reset");
  assert.deepEqual(moves, [["l", "http://a", "http://b", 0]]);
  assert.equal(client.baseURL, "http://b", "later requests skip the dead instance");
  assert.equal(calls.at(-1), "http://b/lists/l/events?since=1&epoch=e", "asked from the version held");
});

test("several base URLs: a 4xx does not move the follow, and one URL never moves", async () => {
  const { fetch, calls } = fakeFetch(() => json(410, { title: "gone", detail: "x" }));
  const moves = [];
  const client = new ListdClient({ baseURLs: ["http://x", "http://y"], fetch });
  const follower = client.follow("l", { minDelay: 1, maxDelay: 2, onFailover: (m) => moves.push(m) });
  await waitFor(() => calls.length >= 3, "three attempts");
  follower.stop();
  assert.equal(moves.length, 0);
  assert.equal(client.baseURL, "http://x");
  const single = new ListdClient({ baseURL: "http://x/" });
  single.moveOn(0);
  assert.equal(single.baseURL, "http://x");
});

test("viewQuery writes the server's canonical query", () => {
  // The texts ListView's ViewSpec.canonicalQuery gives for the same views.
  assert.equal(viewQuery({ where: { done: false }, order: "-due", limit: 50 }), "where=done%3Afalse&order=-due&limit=50");
  assert.equal(viewQuery({ where: [["owner", "ann"], ["done", false], ["owner", "ann"]], group: "owner" }),
    "where=done%3Afalse&where=owner%3Aann&group=owner", "sorted, repeats dropped");
  // A string stays a string: bare when it reads as one, JSON when it would read as a number, boolean or null.
  assert.equal(viewQuery({ where: { code: "42", flag: "true", none: "null", tags: "[1]", n: 42, z: null } }),
    "where=code%3A%2242%22&where=flag%3A%22true%22&where=n%3A42&where=none%3A%22null%22&where=tags%3A%5B1%5D&where=z%3Anull");
  assert.equal(viewQuery({ q: "a+b & c!", order: "title.0" }), "q=a%2Bb%20%26%20c%21&order=title.0");
  assert.equal(viewQuery({ where: { title: "café" } }), "where=title%3Acaf%C3%A9");
  assert.equal(viewQuery("?where=done:false&order=due"), "where=done:false&order=due", "a string is used as it is");
  assert.equal(viewQuery({}), "");
  assert.equal(viewQuery(undefined), "");
});

test("follow with a view: the snapshot, the stream and the long-poll carry it; a write it ignores shows nothing", async () => {
  const view = { where: { done: false }, order: "-due", group: "owner" };
  const query = "where=done%3Afalse&order=-due&group=owner";
  const snapshot = { id: "l", epoch: "e", version: 1, sections: [section('"ann"', [item("a")], { value: "ann" })] };
  // The list moved to 2 without touching the view, then 3 changed it.
  const untouched = { list: "l", epoch: "e", from: 1, to: 2, stages: [] };
  const change = { list: "l", epoch: "e", from: 2, to: 3, stages: [{ itemInserted: [{ at: [0, 1], item: item("b") }] }] };
  const { fetch, calls } = fakeFetch((path, init, count) => {
    if (path.startsWith("/lists/l?")) return json(200, snapshot);
    if (path.startsWith("/lists/l/events")) {
      if (count === 2) return eventStream([event("change", untouched), event("change", change)]);
      return json(404, { type: "https://listd.dev/problems/not-found", detail: "no route" });
    }
    return new Promise(() => {}); // the long-poll waits
  });
  const seen = [];
  const client = new ListdClient({ baseURL: "http://x", fetch });
  const follower = client.follow("l", {
    view, minDelay: 1, maxDelay: 5,
    onSnapshot: (s) => seen.push(["snapshot", s.version]),
    onChanges: ({ answer, states }) => seen.push(["changes", answer.from, answer.to, states.at(-1)[0].items.map((i) => i.id)]),
  });
  await waitFor(() => calls.some((call) => call.path.startsWith("/lists/l/changes")), "the long-poll");
  follower.stop();
  assert.deepEqual(seen, [["snapshot", 1], ["changes", 2, 3, ["a", "b"]]]);
  assert.equal(calls[0].path, `/lists/l?${query}`);
  assert.equal(calls[1].path, `/lists/l/events?since=1&epoch=e&${query}`);
  assert.equal(calls[2].path, `/lists/l/events?${query}`, "resuming with Last-Event-ID keeps the view");
  assert.equal(calls.at(-1).path, `/lists/l/changes?since=3&timeout=30&epoch=e&${query}`);
  assert.equal(follower.snapshot.version, 3);
});

test("follow: a 400 (a malformed view) stops the follow with onError instead of retrying", async () => {
  const { fetch, calls } = fakeFetch(() => json(400, { title: "bad view", detail: "order has an empty field name in \"a..b\"" }));
  const errors = [];
  const follower = new ListdClient({ baseURL: "http://x", fetch }).follow("l", {
    view: "order=a..b", minDelay: 1, maxDelay: 5, onError: (error) => errors.push(error.status),
  });
  await follower.done;
  assert.deepEqual(errors, [400]);
  assert.equal(follower.state, "closed");
  assert.equal(calls.length, 1);
  assert.equal(calls[0].path, "/lists/l?order=a..b");
});
