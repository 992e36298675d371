// The React entry point (listd-client/react): useFollow over
// useSyncExternalStore. React is not installed: a resolve hook maps "react"
// to fake-react.mjs, a tiny stand-in for its hooks that logs subscribe and
// unsubscribe, so these tests run the module as shipped. Needs node's
// module.register (Node 18.19+, 20.6+); skipped without it.
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import * as nodeModule from "node:module";
import { ListdClient } from "./listd.js";
import { event, eventStream, fakeFetch, item, json, section, until } from "./testing.mjs";

const skip = typeof nodeModule.register !== "function" && "node has no module.register";
let useFollow;
let React;
if (!skip) {
  const fake = new URL("./fake-react.mjs", import.meta.url).href;
  nodeModule.register(`data:text/javascript,${encodeURIComponent(`export async function resolve(specifier, context, next) {
    return specifier === "react" ? { url: ${JSON.stringify(fake)}, shortCircuit: true } : next(specifier, context);
  }`)}`);
  ({ useFollow } = await import("./react.js"));
  React = await import("./fake-react.mjs");
}

// A failed assertion must not leave a follow running (and the test process waiting on its timers).
const started = [];
const follow = ListdClient.prototype.follow;
ListdClient.prototype.follow = function (...args) { const follower = follow.apply(this, args); started.push(follower); return follower; };
afterEach(() => { for (const follower of started.splice(0)) follower.stop(); });

const snapshotOf = (list) => ({ id: list, epoch: "e", version: 1, sections: [section("s", [item(`${list}1`)])] });

/** A client whose follows and stops are logged in `React.log`, beside the hooks' subscribe/unsubscribe. */
function loggedClient() {
  const streams = new Map();
  const { fetch } = fakeFetch((path) => {
    const list = path.split("/")[2].split("?")[0];
    if (!path.includes("/events")) return json(200, snapshotOf(list));
    const stream = eventStream([], { hang: true });
    streams.set(list, stream);
    return stream.response;
  });
  const client = new ListdClient({ baseURL: "http://x", fetch });
  const follow = client.follow.bind(client);
  client.follow = (list, options) => {
    React.log.push(`follow ${list}${options.view ? ` ${options.view.where ? JSON.stringify(options.view.where) : options.view}` : ""}`);
    const follower = follow(list, options);
    const stop = follower.stop;
    follower.stop = () => { React.log.push(`stop ${list}`); stop(); };
    return follower;
  };
  return { client, streams };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

test("useFollow: follows after the commit, re-renders on data, stops on unmount after unsubscribing", { skip }, async () => {
  React.log.length = 0;
  const { client, streams } = loggedClient();
  const seen = [];
  const root = React.mount(({ list }) => {
    const result = useFollow(client, list, { view: "order=title" });
    seen.push(result);
    return result;
  }, { list: "l" });
  assert.equal(seen[0].snapshot, null);
  assert.equal(seen[0].state, "connecting");
  assert.equal(seen[0].follower, null, "nothing started during the render");
  assert.equal(root.serverSnapshot, seen[0], "the server's render: the same empty result");
  assert.deepEqual(React.log, ["follow l order=title", "subscribe"], "the follow starts when React subscribes");
  await until(() => root.result.state === "live" && root.result.snapshot !== null, "live, with data");
  const { follower } = root.result;
  assert.equal(root.result.snapshot, follower.getSnapshot());
  const renders = root.renders;
  streams.get("l").send(event("change", { list: "l", epoch: "e", from: 1, to: 2, stages: [{ itemInserted: [{ at: [0, 1], item: item("x") }] }] }));
  await until(() => root.result.snapshot.version === 2, "the change rendered");
  assert.ok(root.renders > renders);
  assert.equal(root.render(), root.result, "the same result object while nothing changes");
  root.unmount();
  assert.deepEqual(React.log, ["follow l order=title", "subscribe", "unsubscribe"], "stopped a turn later, not during the unsubscribe");
  await turn();
  assert.deepEqual(React.log, ["follow l order=title", "subscribe", "unsubscribe", "stop l"]);
  assert.equal(follower.state, "closed");
});

test("useFollow: a new list or view stops the old follow and starts a new one; inline options and callbacks do not", { skip }, async () => {
  React.log.length = 0;
  const { client, streams } = loggedClient();
  const snapshots = [];
  const changes = [];
  const root = React.mount(({ list, done, tag }) => useFollow(client, list, {
    view: { where: { done } }, onSnapshot: (snapshot) => snapshots.push([tag, snapshot.id]),
    onChanges: ({ answer }) => changes.push([tag, answer.to]),
  }), { list: "l", done: false, tag: "first" });
  await until(() => root.result.state === "live", "live");
  const first = root.result.follower;
  root.render({ list: "l", done: false, tag: "second" }); // a new options object, a new callback
  root.render({ list: "l", done: false, tag: "third" });
  await turn();
  assert.equal(root.result.follower, first, "the same follow");
  assert.deepEqual(React.log, ["follow l {\"done\":false}", "subscribe"]);
  streams.get("l").send(event("change", { list: "l", epoch: "e", from: 1, to: 2, stages: [{ itemInserted: [{ at: [0, 0], item: item("x") }] }] }));
  await until(() => changes.length === 1, "a change");
  assert.deepEqual(changes, [["third", 2]], "the callback the latest render passed");

  root.render({ list: "l", done: true, tag: "fourth" }); // another view
  assert.deepEqual(React.log.slice(2), ["unsubscribe", "follow l {\"done\":true}", "subscribe"]);
  await turn();
  assert.deepEqual(React.log.slice(5), ["stop l"], "the old one stopped after the new one subscribed");
  assert.equal(first.state, "closed");
  await until(() => root.result.state === "live", "the new view live");
  assert.deepEqual(snapshots, [["first", "l"], ["fourth", "l"]], "callbacks as the latest render passed them");

  root.render({ list: "m", done: true, tag: "fifth" }); // another list
  await until(() => root.result.snapshot?.id === "m", "the new list");
  assert.deepEqual(React.log.slice(6), ["unsubscribe", "follow m {\"done\":true}", "subscribe", "stop l"]);
  root.unmount();
  await turn();
  assert.deepEqual(React.log.slice(10), ["unsubscribe", "stop m"]);
});

test("useFollow: StrictMode's second mount keeps the one follow; a falsy list follows nothing", { skip }, async () => {
  React.log.length = 0;
  const { client } = loggedClient();
  const root = React.mount(() => useFollow(client, "l"), {}, { strict: true });
  assert.deepEqual(React.log, ["follow l", "subscribe", "unsubscribe", "subscribe"]);
  await until(() => root.result.state === "live", "live");
  assert.deepEqual(React.log, ["follow l", "subscribe", "unsubscribe", "subscribe"], "not stopped, not started again");
  root.unmount();
  await turn();
  assert.deepEqual(React.log.slice(4), ["unsubscribe", "stop l"]);

  React.log.length = 0;
  const idle = React.mount(() => useFollow(client, null));
  await turn();
  assert.deepEqual(idle.result, { snapshot: null, state: "closed", error: undefined, follower: null });
  assert.deepEqual(React.log, ["subscribe"], "no follow");
  idle.unmount();
});

test("react.d.ts declares exactly the values react.js exports; package.json exports it, react an optional peer", { skip }, async () => {
  const { readFileSync } = await import("node:fs");
  const declarations = readFileSync(new URL("./react.d.ts", import.meta.url), "utf8");
  const declared = [...declarations.matchAll(/^export declare (?:class|function|const) (\w+)/gm)].map((m) => m[1]).sort();
  assert.deepEqual(declared, Object.keys(await import("./react.js")).sort());
  const manifest = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8"));
  assert.deepEqual(manifest.exports["./react"], { types: "./react.d.ts", default: "./react.js" });
  assert.ok(manifest.files.includes("react.js") && manifest.files.includes("react.d.ts"));
  assert.ok(manifest.peerDependencies.react);
  assert.equal(manifest.peerDependenciesMeta.react.optional, true);
  assert.equal(manifest.dependencies, undefined, "no dependencies");
});
