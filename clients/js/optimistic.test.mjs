// Optimistic writes in a followed list (issue 24): `follower.patch(ops)`
// shows at once, flagged pending; the server's echo shows nothing new; a
// rejection rolls back in one update; a remote change is rebased over the
// pending write. Fake fetch and event stream; no wall-clock waits.
import { test } from "node:test";
import assert from "node:assert/strict";
import { applyAnswer, ListdClient } from "./listd.js";
import { event, eventStream, json, item, section, until } from "./testing.mjs";

const snapshot = { id: "l", epoch: "e", version: 1, sections: [section("s", [item("a", { n: 1 })])] };

/** A follow on a stream the test writes to; PATCH answered by `answerPatch(init)` (a promise the test may hold). */
async function setup(answerPatch) {
  let stream;
  const patches = [];
  const fetch = async (url, init = {}) => {
    const path = url.replace(/^http:\/\/x/, "");
    if (init.method === "PATCH") { patches.push(init); return answerPatch(init, patches.length); }
    if (path === "/lists/l") return json(200, snapshot);
    stream = eventStream([], { hang: true });
    return stream.response;
  };
  const client = new ListdClient({ baseURL: "http://x", fetch, retry: false });
  const updates = [];
  const follower = client.follow("l", {
    onChanges: (change) => updates.push(["changes", change]),
    onReset: (_, reason) => updates.push(["reset", reason]),
  });
  await until(() => follower.state === "live", "live");
  return { client, follower, updates, patches, send: (text) => stream.send(text), stream: () => stream };
}

const ids = (snap) => snap.sections.flatMap((s) => s.items.map((i) => i.id));
const insertB = [{ op: "insertItem", section: "s", item: { id: "b", model: { n: 2 } } }];
const echoB = { list: "l", epoch: "e", from: 1, to: 2, stages: [{ itemInserted: [{ at: [0, 1], item: item("b", { n: 2 }) }] }] };

test("a local write shows at once, flagged pending; the server's echo then its answer show nothing new", async () => {
  let answer;
  const { follower, updates, send, stream } = await setup(() => new Promise((resolve) => { answer = resolve; }));
  const written = follower.patch(insertB);
  assert.deepEqual(ids(follower.getSnapshot()), ["a", "b"], "shown at once, before any answer");
  assert.deepEqual(follower.getSnapshot().pending, ["b"]);
  assert.equal(updates.length, 1);
  const [, local] = updates[0];
  assert.equal(local.answer.optimistic, true);
  assert.deepEqual(local.states.map((state) => state[0].items.map((i) => i.id)), [["a"], ["a", "b"]]);
  const shown = follower.getSnapshot();
  // The echo comes first (models in another key order), the PATCH answer after it.
  send(event("change", { ...echoB, stages: [{ itemInserted: [{ at: [0, 1], item: { model: { n: 2 }, id: "b" } }] }] }));
  await until(() => stream().delivered() && follower.snapshot.version === 2, "the echo");
  assert.equal(updates.length, 1, "the echo delivers no update");
  assert.equal(follower.getSnapshot().sections, shown.sections, "the same sections object: nothing to render");
  answer(json(200, echoB)); // a PATCH answers with its change
  await written;
  await until(() => follower.getSnapshot().pending === undefined, "confirmed");
  assert.equal(updates.length, 1, "the confirmation delivers no update");
  assert.equal(follower.getSnapshot().sections, shown.sections);
  assert.equal(follower.getSnapshot().version, 2);
  follower.stop();
});

test("the answer first, the echo after: still no update for the confirmation", async () => {
  const { follower, updates, send, stream } = await setup(() => json(200, echoB));
  await follower.patch(insertB);
  assert.deepEqual(follower.getSnapshot().pending, ["b"], "pending until the follow holds version 2");
  const shown = follower.getSnapshot();
  send(event("change", echoB));
  await until(() => stream().delivered() && follower.getSnapshot().pending === undefined, "the echo");
  assert.equal(updates.length, 1);
  assert.equal(follower.getSnapshot().sections, shown.sections);
  follower.stop();
});

test("a rejected write is rolled back in one update", async () => {
  const { follower, updates } = await setup(() => json(409, { title: "Conflict", detail: "b exists" }));
  const written = follower.patch([{ op: "updateItem", id: "a", model: { n: 9 } }, ...insertB]);
  assert.deepEqual(follower.getSnapshot().sections[0].items.map((i) => i.model.n), [9, 2]);
  await assert.rejects(written, (error) => error.status === 409);
  await until(() => updates.length === 2, "the rollback");
  const [, rollback] = updates[1];
  assert.deepEqual(rollback.states.at(-1), snapshot.sections, "back to the server's state");
  assert.equal(follower.getSnapshot().pending, undefined);
  assert.deepEqual(follower.getSnapshot().sections, snapshot.sections);
  // Every stage of it applies, in order, to what showed before it.
  assert.deepEqual(applyAnswer({ epoch: "e", version: 1, sections: rollback.states[0] }, { ...rollback.answer, from: 1 }).at(-1), snapshot.sections);
  follower.stop();
});

test("a remote change while a write is pending: one update, the pending write kept over the server's state", async () => {
  let answer;
  const { follower, updates, send, stream } = await setup(() => new Promise((resolve) => { answer = resolve; }));
  const written = follower.patch(insertB);
  // Someone else inserts c at the top.
  send(event("change", { list: "l", epoch: "e", from: 1, to: 2, stages: [{ itemInserted: [{ at: [0, 0], item: item("c") }] }] }));
  await until(() => stream().delivered() && updates.length === 2, "the remote change");
  assert.deepEqual(ids(follower.getSnapshot()), ["c", "a", "b"]);
  assert.deepEqual(updates[1][1].states.at(-1).flatMap((s) => s.items.map((i) => i.id)), ["c", "a", "b"]);
  send(event("change", { list: "l", epoch: "e", from: 2, to: 3, stages: [{ itemInserted: [{ at: [0, 2], item: item("b", { n: 2 }) }] }] }));
  await until(() => stream().delivered() && follower.snapshot.version === 3, "the echo");
  answer(json(200, { list: "l", epoch: "e", from: 2, to: 3, stages: [] }));
  await written;
  await until(() => follower.getSnapshot().pending === undefined, "confirmed");
  assert.equal(updates.length, 2, "the echo and the answer show nothing new");
  assert.deepEqual(follower.getSnapshot().sections, follower.snapshot.sections, "what shows is the server's state");
  follower.stop();
});

test("section operations show at once, flagged in pendingSections; their echo shows nothing new", async () => {
  const { follower, updates, send, stream } = await setup(() => json(200, { list: "l", epoch: "e", from: 1, to: 2, stages: [] }));
  const ops = [
    { op: "insertSection", section: { id: "t", model: { title: "T" }, items: [{ id: "x", model: {} }] }, at: 0 },
    { op: "updateSection", id: "s", model: { title: "S" } },
  ];
  const written = follower.patch(ops);
  const shown = follower.getSnapshot();
  assert.deepEqual(shown.sections.map((s) => [s.id, s.model, s.items.map((i) => i.id)]), [["t", { title: "T" }, ["x"]], ["s", { title: "S" }, ["a"]]]);
  assert.deepEqual(shown.pendingSections, ["t", "s"]);
  assert.deepEqual(shown.pending, ["x"]);
  assert.deepEqual(updates[0][1].answer.stages, [
    { sectionInserted: [{ at: 0, section: { id: "t", model: { title: "T" }, items: [{ id: "x", model: {} }] } }] },
    { sectionUpdated: [{ at: 1, model: { title: "S" } }] },
  ]);
  await written;
  send(event("change", { list: "l", epoch: "e", from: 1, to: 2, stages: [
    { sectionInserted: [{ at: 0, section: { id: "t", model: { title: "T" }, items: [{ id: "x", model: {} }] } }], sectionUpdated: [{ at: 0, model: { title: "S" } }] },
  ] }));
  await until(() => stream().delivered() && follower.getSnapshot().pending === undefined, "confirmed");
  assert.equal(updates.length, 1, "the echo shows nothing new");
  assert.equal(follower.getSnapshot().sections, shown.sections);
  assert.equal(follower.getSnapshot().pendingSections, undefined);
  follower.stop();
});

test("a refused section delete is rolled back in one update: the section comes back with its items", async () => {
  const { follower, updates } = await setup(() => json(409, { title: "Conflict", detail: "no" }));
  const written = follower.patch([{ op: "moveItem", id: "a", to: 0 }, { op: "deleteSection", id: "s" }]);
  assert.deepEqual(follower.getSnapshot().sections, []);
  await assert.rejects(written, (error) => error.status === 409);
  await until(() => updates.length === 2, "the rollback");
  assert.deepEqual(updates[1][1].answer.stages, [{ sectionInserted: [{ at: 0, section: snapshot.sections[0] }] }]);
  assert.deepEqual(follower.getSnapshot().sections, snapshot.sections);
  follower.stop();
});

test("patch refuses, sending nothing: an insert without the id it shows; in a view, a place it cannot know (past a full window's edge, or in list order it does not hold)", async () => {
  const { follower, client, patches } = await setup(() => json(200, {}));
  await assert.rejects(follower.patch([{ op: "insertSection", section: { model: {} } }]), /insertSection needs the section's id/);
  await assert.rejects(follower.patch([{ op: "insertItem", section: "s", item: { model: {} } }]), /insertItem needs the item's id/);
  follower.stop();
  const held = { since: 1, epoch: "e", sections: snapshot.sections };
  // A full window: the item that would take a deleted one's place is past its edge, not held here.
  const windowed = client.follow("l", { view: { where: { n: 1 }, limit: 1 }, ...held });
  await assert.rejects(windowed.patch([{ op: "deleteItem", id: "a" }]), /in this view.*client\.patchList/);
  // An item placed past the full window's last item is outside it: nothing shows, and the write is sent.
  const before = windowed.getSnapshot().sections;
  const sent = windowed.patch([{ op: "insertItem", section: "s", item: { id: "b", model: { n: 1 } } }]);
  assert.deepEqual(windowed.getSnapshot().sections, before);
  await sent;
  windowed.stop();
  assert.equal(patches.length, 1, "the write past the window's edge was sent");
  patches.length = 0;
  // No order: where an item enters depends on list positions the view does not hold.
  const unordered = client.follow("l", { view: { where: { n: 1 } }, ...held });
  await assert.rejects(unordered.patch([{ op: "insertItem", section: "s", item: { id: "z", model: { n: 1 } }, at: 3 }]), /in this view.*client\.patchList/);
  await assert.rejects(unordered.patch([{ op: "updateItem", id: "elsewhere", model: { n: 1 } }]), /in this view/);
  unordered.stop();
  assert.equal(patches.length, 0, "nothing sent");
});

test("in a followed view, a write shows where the view puts it: out of the filter, into a new group, moved by its order", async () => {
  const { checkStage } = await import("./batch-model.mjs");
  const answers = [];
  const { client, patches, follower } = await setup(() => new Promise((resolve) => { answers.push(resolve); }));
  follower.stop(); // the list's follow: this test follows a view
  // The view `where=done:false&order=n&group=g` of a list: groups "x" and "y".
  const sections = [
    { id: "\"x\"", model: { value: "x" }, items: [item("a", { done: false, g: "x", n: 1 }), item("b", { done: false, g: "x", n: 5 })] },
    { id: "\"y\"", model: { value: "y" }, items: [item("c", { done: false, g: "y", n: 2 })] },
  ];
  const updates = [];
  const view = client.follow("l", { view: { where: { done: false }, order: "n", group: "g" }, since: 1, epoch: "e", sections,
    onChanges: (change) => updates.push(change) });
  const shows = () => view.getSnapshot().sections.map((s) => `${s.id}:${s.items.map((i) => i.id).join(",")}`).join(" ");
  view.patch([{ op: "updateItem", id: "c", model: { done: true, g: "y", n: 2 } }]); // leaves: its group goes with it
  assert.equal(shows(), "\"x\":a,b");
  view.patch([{ op: "updateItem", id: "b", model: { done: false, g: "w", n: 5 } }]); // a new group, first by value
  assert.equal(shows(), "\"w\":b \"x\":a");
  view.patch([{ op: "insertItem", section: "anywhere", item: { id: "d", model: { done: false, g: "x", n: 0 } } }]);
  assert.equal(shows(), "\"w\":b \"x\":d,a");
  view.patch([{ op: "updateItem", id: "d", model: { done: false, g: "x", n: 9 } }]); // moved by its order
  assert.equal(shows(), "\"w\":b \"x\":a,d");
  assert.deepEqual(view.getSnapshot().pending, ["c", "b", "d"]);
  for (const { states, answer: change } of updates) {
    change.stages.forEach((stage, index) => assert.deepEqual(checkStage(states[index], stage), states[index + 1], JSON.stringify(stage)));
  }
  assert.equal(updates.length, 4);
  await until(() => answers.length === 4, "the four PATCHes");
  assert.equal(patches.length, 4);
  answers[0](json(409, { title: "Conflict", detail: "no" })); // the first write refused: c comes back, the others stay
  await until(() => updates.length === 5, "the rollback");
  assert.equal(shows(), "\"w\":b \"x\":a,d \"y\":c");
  const { states, answer: change } = updates[4];
  change.stages.forEach((stage, index) => assert.deepEqual(checkStage(states[index], stage), states[index + 1], JSON.stringify(stage)));
  view.stop();
  for (const resolve of answers.slice(1)) resolve(json(409, { title: "Conflict" }));
});
