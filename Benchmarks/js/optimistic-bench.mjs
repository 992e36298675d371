// Optimistic apply in the JavaScript client (issue 24), in process:
//
// 1. The time from `follower.patch(ops)` to its pending state visible in
//    `getSnapshot()`, on a followed list of 10,000 items (100 sections of
//    100), median and p99 over the writes.
// 2. The updates (and stages) the follow emits for the confirmations of
//    those writes: each write's change (the echo, on the event stream) and
//    its PATCH answer, in either order. The goal is 0: a write the server
//    applied as sent shows nothing new.
//
//   node Benchmarks/js/optimistic-bench.mjs [writes=1000] [sections=100] [items=100]
//
// A fake fetch answers in process (no network: the figure is the client's own
// work). The writes are a mix of updateItem, moveItem, insertItem, deleteItem
// and updateSection, each confirmed before the next is made; the echo comes
// first for half of them, the answer first for the other half.
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { ListdClient } from "../../clients/js/listd.js";
import { applyOps, random, randomOp } from "../../clients/js/batch-model.mjs";
import { event, eventStream, json, until } from "../../clients/js/testing.mjs";

const [writes = 1000, sectionCount = 100, perSection = 100] = process.argv.slice(2).map(Number);
let sections = Array.from({ length: sectionCount }, (_, s) => ({
  id: `s${s}`, model: { title: `section ${s}` },
  items: Array.from({ length: perSection }, (_, i) => ({ id: `i${s}-${i}`, model: { n: i, done: false } })),
}));
let version = 1;
let stream;
let answer;
const fetch = async (url, init = {}) => {
  if (init.method === "PATCH") return new Promise((resolve) => { answer = resolve; });
  if (url.endsWith("/lists/l")) return json(200, { id: "l", epoch: "e", version, sections });
  stream = eventStream([], { hang: true });
  return stream.response;
};
const client = new ListdClient({ baseURL: "http://x", fetch, retry: false });
let updates = 0;
let stages = 0;
const follower = client.follow("l", { onChanges: ({ answer: change }) => { updates += 1; stages += change.stages.length; } });
await until(() => follower.state === "live", "live");

const rng = random(7);
let counter = 0;
const fresh = (prefix) => `${prefix}new${++counter}`;
const times = [];
let confirmationUpdates = 0;
let confirmationStages = 0;
for (let n = 0; n < writes; n++) {
  // No section inserts, deletes or moves: the list stays about its size.
  let op;
  do op = randomOp(rng, sections, fresh); while (["insertSection", "deleteSection", "moveSection"].includes(op.op));
  const started = performance.now();
  const written = follower.patch([op]);
  const shown = follower.getSnapshot();
  times.push(performance.now() - started);
  if (shown.pending === undefined) throw new Error("the write is not shown as pending");

  const result = applyOps(sections, [op]);
  const from = version;
  if (result.stages.length) version += 1;
  sections = result.sections;
  const change = { list: "l", epoch: "e", from, to: version, stages: result.stages };
  const beforeUpdates = updates;
  const beforeStages = stages;
  const echo = () => { if (change.stages.length) stream.send(event("change", change)); };
  await until(() => answer !== undefined, "the PATCH");
  if (n % 2 === 0) echo();
  answer(json(200, change));
  answer = undefined;
  await written;
  if (n % 2 === 1) echo();
  await until(() => follower.getSnapshot().pending === undefined && follower.snapshot.version === version, "the confirmation");
  confirmationUpdates += updates - beforeUpdates;
  confirmationStages += stages - beforeStages;
}
follower.stop();
if (JSON.stringify(follower.getSnapshot().sections) !== JSON.stringify(sections)) throw new Error("the follow does not show the server's state");

times.sort((a, b) => a - b);
const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
const items = sections.reduce((sum, section) => sum + section.items.length, 0);
console.log(`optimistic apply, ${writes} writes on a followed list of ${items} items in ${sections.length} sections (node ${process.version}, load average ${loadavg()[0].toFixed(1)})`);
console.log(`patch → pending visible in getSnapshot(): median ${(at(0.5) * 1000).toFixed(0)} µs, p99 ${(at(0.99) * 1000).toFixed(0)} µs, max ${(times.at(-1) * 1000).toFixed(0)} µs`);
console.log(`confirmations (echo + answer) of ${writes} writes: ${confirmationUpdates} updates, ${confirmationStages} stages emitted (goal 0)`);
