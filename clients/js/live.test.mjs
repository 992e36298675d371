// The client against a real listd: run by `swift test` (JavaScriptClientTests
// starts one and sets LISTD_TEST_URL and LISTD_TEST_WRITE_TOKEN); skipped
// without them, so `node --test clients/js/` alone still runs everywhere.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ListdClient, ListdError } from "./listd.js";

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
