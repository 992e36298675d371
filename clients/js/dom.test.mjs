// applyStageToDOM: a DOM list kept in step with a follow, elements reused by
// id. A minimal fake DOM (firstChild, nextSibling, insertBefore, remove): node
// has none, and the helper uses nothing else.
import { test } from "node:test";
import assert from "node:assert/strict";
import { applyAnswer, applyStageToDOM } from "./listd.js";
import { item, section } from "./testing.mjs";

class FakeNode {
  constructor(name) { this.name = name; this.parent = null; this.children = []; }
  get firstChild() { return this.children[0] ?? null; }
  get nextSibling() {
    if (!this.parent) return null;
    return this.parent.children[this.parent.children.indexOf(this) + 1] ?? null;
  }
  insertBefore(node, reference) {
    if (reference !== null && reference.parent !== this) throw new Error("the reference is not a child");
    node.remove();
    const index = reference === null ? this.children.length : this.children.indexOf(reference);
    this.children.splice(index, 0, node);
    node.parent = this;
    inserts += 1;
    return node;
  }
  remove() {
    if (!this.parent) return;
    this.parent.children.splice(this.parent.children.indexOf(this), 1);
    this.parent = null;
  }
  /** The tree as text: `name(children…)`. */
  toString() { return this.children.length ? `${this.name}(${this.children.join(" ")})` : this.name; }
}
let inserts = 0;

function renderers(log) {
  return {
    section: (value, element = new FakeNode(value.id), { pending }) => {
      log.push(`section ${value.id}${pending ? " (pending)" : ""}`);
      element.name = `${value.id}:${value.model.title}`;
      return element;
    },
    item: (value, element = new FakeNode(value.id), { pending }) => {
      log.push(`item ${value.id}${pending ? " (pending)" : ""}`);
      element.name = `${value.id}=${value.model.n}${pending ? "…" : ""}`;
      return element;
    },
  };
}

test("applyStageToDOM: sections and items follow the stages; moved rows keep their nodes; only what changed renders again", () => {
  const root = new FakeNode("root");
  const header = new FakeNode("header");
  root.insertBefore(header, null);
  const log = [];
  const snapshot = { epoch: "e", version: 1, sections: [
    section("s", [item("a", { n: 1 }), item("b", { n: 2 }), item("c", { n: 3 })], { title: "S" }),
    section("t", [item("d", { n: 4 })], { title: "T" }),
  ] };
  applyStageToDOM(root, snapshot.sections, renderers(log));
  assert.equal(String(root), "root(header s:S(a=1 b=2 c=3) t:T(d=4))");
  assert.equal(log.length, 6);
  const nodeOf = (id) => root.children.flatMap((child) => [child, ...child.children]).find((node) => node.name.startsWith(id));
  const a = nodeOf("a");
  const d = nodeOf("d");

  // One answer: a moves to t; b is updated; c deleted; a section u inserted first; then t moves to the top.
  const answer = { epoch: "e", from: 1, to: 2, stages: [
    { itemMoved: [{ from: [0, 0], to: [1, 1] }], itemUpdated: [{ at: [0, 1], model: { n: 20 } }], itemDeleted: [[0, 2]] },
    { sectionInserted: [{ at: 0, section: section("u", [item("e", { n: 5 })], { title: "U" }) }] },
    { sectionMoved: [{ from: 2, to: 0 }], sectionUpdated: [{ at: 0, model: { title: "U!" } }] },
  ] };
  const states = applyAnswer(snapshot, answer);
  log.length = 0;
  for (const state of states.slice(1)) applyStageToDOM(root, state, renderers(log));
  assert.equal(String(root), "root(header t:T(d=4 a=1) u:U!(e=5) s:S(b=20))");
  assert.equal(nodeOf("a"), a, "a moved row is the same node");
  assert.equal(nodeOf("d"), d);
  assert.deepEqual(log, ["item b", "section u", "item e", "section u"], "only the changed and the new render");

  // Nothing changed: nothing renders, nothing moves.
  log.length = 0;
  inserts = 0;
  applyStageToDOM(root, states.at(-1), renderers(log));
  assert.deepEqual(log, []);
  assert.equal(inserts, 0);

  // Pending flags render again; a whole new state (a reset) removes what is gone.
  applyStageToDOM(root, states.at(-1), { ...renderers(log), pending: ["a"], pendingSections: ["s"] });
  assert.deepEqual(log, ["item a (pending)", "section s (pending)"]);
  assert.equal(String(root), "root(header t:T(d=4 a=1…) u:U!(e=5) s:S(b=20))");
  applyStageToDOM(root, [section("s", [item("b", { n: 20 })], { title: "S" })], renderers(log));
  assert.equal(String(root), "root(header s:S(b=20))");
});

test("applyStageToDOM without sections: every section's items straight into the container", () => {
  const list = new FakeNode("ul");
  const log = [];
  const { item: renderItem } = renderers(log);
  applyStageToDOM(list, [section("s", [item("a", { n: 1 })]), section("t", [item("b", { n: 2 })])], { item: renderItem });
  assert.equal(String(list), "ul(a=1 b=2)");
  applyStageToDOM(list, [section("s", []), section("t", [item("b", { n: 2 }), item("a", { n: 1 })])], { item: renderItem });
  assert.equal(String(list), "ul(b=2 a=1)");
  assert.throws(() => applyStageToDOM(list, [], {}), /item\(item, element/);
});
