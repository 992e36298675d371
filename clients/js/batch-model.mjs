// Independent models for the optimistic-apply tests (not part of the
// package, and sharing no code with listd.js):
//
// - `checkStage(before, stage)`: a UIKit batch-update checker. It checks a
//   stage against the rules of UITableView.performBatchUpdates and the
//   contract (API.md, "Stage") and computes the sections after it its own
//   way: remove, then insert in ascending order of the final index.
// - `applyOp(sections, op)`: one PATCH operation as the server applies it
//   (API.md, REST), by splicing plain arrays; throws a ModelError with the
//   status the server answers for what does not apply.

/** What the server answers for an operation that does not apply (no stack: refusals are many and expected). */
export class ModelError {
  constructor(status, detail) {
    this.status = status;
    this.message = detail;
  }
}

/** A copy of sections whose arrays may be changed; a changed section or item is replaced, never changed, so they are shared. */
const copy = (sections) => sections.map((section) => ({ ...section, items: section.items.slice() }));
const clone = (value) => JSON.parse(JSON.stringify(value));
const same = (a, b) => canonical(a) === canonical(b);

/** JSON text with object keys sorted: two models are equal exactly when their texts are. */
export function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value).filter((key) => value[key] !== undefined).sort()
      .map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * Checks one stage the way UIKit's performBatchUpdates does and returns the
 * sections after it; throws an Error naming the broken rule.
 *
 * The model checked:
 * - Before-positions (the state before the stage): sectionDeleted,
 *   sectionUpdated, sectionMoved.from; itemDeleted, itemUpdated,
 *   itemMoved.from. Each is in range and named once among its kind
 *   (sections; items), so an item is never moved and updated at once.
 *   An item before-position is not in a deleted section.
 * - After-positions (the state after): sectionInserted.at, sectionMoved.to;
 *   itemInserted.at, itemMoved.to. Each is in range of the final counts and
 *   named once among its kind. An item after-position is not in a section
 *   inserted by the stage (its items come with it).
 * - A section in sectionUpdated (a reloadSections) has no item deleted,
 *   updated, inserted or moved in or out of it in the stage.
 * - The result: every section and item not removed keeps its relative
 *   order; the inserted and moved ones are placed at their final indexes in
 *   ascending order, each index at most the count placed so far.
 */
export function checkStage(before, stage) {
  const fail = (rule) => { throw new Error(`invalid batch update: ${rule} in ${JSON.stringify(stage)}`); };
  const list = (name) => stage[name] || [];
  const sectionCount = before.length;
  const sectionRole = new Map();
  const claimSection = (index, role) => {
    if (!Number.isInteger(index) || index < 0 || index >= sectionCount) fail(`${role} section ${index} out of range 0..<${sectionCount}`);
    if (sectionRole.has(index)) fail(`section ${index} named as ${sectionRole.get(index)} and ${role}`);
    sectionRole.set(index, role);
  };
  list("sectionDeleted").forEach((index) => claimSection(index, "deleted"));
  list("sectionUpdated").forEach((update) => claimSection(update.at, "updated"));
  list("sectionMoved").forEach((move) => claimSection(move.from, "moved"));
  const finalSections = sectionCount - list("sectionDeleted").length + list("sectionInserted").length;
  const targets = new Set();
  const claimTarget = (index, role) => {
    if (!Number.isInteger(index) || index < 0 || index >= finalSections) fail(`${role} section ${index} out of range 0..<${finalSections}`);
    if (targets.has(index)) fail(`section ${index} is the target of two operations`);
    targets.add(index);
  };
  list("sectionInserted").forEach((insert) => claimTarget(insert.at, "inserted"));
  list("sectionMoved").forEach((move) => claimTarget(move.to, "moved"));

  const itemRole = new Map();
  const claimItem = (path, role) => {
    const [section, item] = path;
    if (!Number.isInteger(section) || section < 0 || section >= sectionCount) fail(`${role} item [${path}]: no such section before`);
    if (sectionRole.get(section) === "deleted") fail(`${role} item [${path}] in a deleted section`);
    if (sectionRole.get(section) === "updated") fail(`${role} item [${path}] in a reloaded section`);
    if (!Number.isInteger(item) || item < 0 || item >= before[section].items.length) fail(`${role} item [${path}] out of range`);
    const key = `${section}/${item}`;
    if (itemRole.has(key)) fail(`item [${path}] named as ${itemRole.get(key)} and ${role}`);
    itemRole.set(key, role);
  };
  list("itemDeleted").forEach((path) => claimItem(path, "deleted"));
  list("itemUpdated").forEach((update) => claimItem(update.at, "updated"));
  list("itemMoved").forEach((move) => claimItem(move.from, "moved"));

  // Sections: the kept ones in order (with their kept items), then the placed ones by final index.
  const entries = before.map((section, index) => ({
    id: section.id,
    model: section.model,
    items: section.items.filter((_, item) => !["deleted", "moved"].includes(itemRole.get(`${index}/${item}`)))
      .map((item) => ({ ...item })),
    before: index,
  }));
  for (const update of list("itemUpdated")) {
    const [section, item] = update.at;
    const id = before[section].items[item].id;
    entries[section].items.find((candidate) => candidate.id === id).model = update.model;
  }
  for (const update of list("sectionUpdated")) entries[update.at].model = update.model;
  const kept = entries.filter((entry) => !sectionRole.has(entry.before) || sectionRole.get(entry.before) === "updated");
  const placedSections = [
    ...list("sectionInserted").map((insert) => ({ at: insert.at, entry: { ...clone(insert.section), inserted: true } })),
    ...list("sectionMoved").map((move) => ({ at: move.to, entry: entries[move.from] })),
  ].sort((a, b) => a.at - b.at);
  const after = kept.slice();
  for (const { at, entry } of placedSections) {
    if (at > after.length) fail(`section placed at ${at} with only ${after.length} before it`);
    after.splice(at, 0, entry);
  }
  if (after.length !== finalSections) fail("section counts do not add up");

  const placedItems = [
    ...list("itemInserted").map((insert) => ({ at: insert.at, item: clone(insert.item) })),
    ...list("itemMoved").map((move) => ({ at: move.to, item: { ...before[move.from[0]].items[move.from[1]] } })),
  ];
  const itemTargets = new Set();
  for (const { at } of placedItems) {
    const [section, item] = at;
    if (!Number.isInteger(section) || section < 0 || section >= finalSections) fail(`item placed at [${at}]: no such section after`);
    if (after[section].inserted) fail(`item placed at [${at}] in a section inserted by the stage`);
    if (after[section].before !== undefined && sectionRole.get(after[section].before) === "updated") {
      fail(`item placed at [${at}] in a reloaded section`);
    }
    if (!Number.isInteger(item) || item < 0) fail(`item placed at [${at}]`);
    const key = `${section}/${item}`;
    if (itemTargets.has(key)) fail(`item position [${at}] is the target of two operations`);
    itemTargets.add(key);
  }
  placedItems.sort((a, b) => a.at[0] - b.at[0] || a.at[1] - b.at[1]);
  for (const { at, item } of placedItems) {
    const items = after[at[0]].items;
    if (at[1] > items.length) fail(`item placed at [${at}] with only ${items.length} before it`);
    items.splice(at[1], 0, item);
  }
  return after.map(({ id, model, items }) => ({ id, model, items }));
}

/** Where an item is: [section, index], or null. */
function locate(sections, id) {
  for (let section = 0; section < sections.length; section++) {
    const index = sections[section].items.findIndex((item) => item.id === id);
    if (index >= 0) return [section, index];
  }
  return null;
}

function hasItem(sections, id) {
  return sections.some((section) => section.items.some((item) => item.id === id));
}

/**
 * One operation as the server applies it: `{sections, stage}` (stage null
 * when nothing changed); `sections` is not modified. Throws ModelError.
 */
export function applyOp(sections, op) {
  const next = copy(sections);
  const sectionAt = (id) => {
    const index = next.findIndex((section) => section.id === id);
    if (index < 0) throw new ModelError(404, `no section ${id}`);
    return index;
  };
  const itemAt = (id) => {
    const path = locate(next, id);
    if (!path) throw new ModelError(404, `no item ${id}`);
    return path;
  };
  const position = (to, count) => {
    if (!Number.isInteger(to) || to < 0 || to > count) throw new ModelError(400, `position ${to} out of range 0...${count}`);
    return to;
  };
  switch (op.op) {
    case "insertSection": {
      if (next.some((section) => section.id === op.section.id)) throw new ModelError(409, `section ${op.section.id} exists`);
      const items = (op.section.items || []).map((item) => ({ id: item.id, model: item.model ?? {} }));
      const ids = new Set();
      for (const item of items) {
        if (ids.has(item.id) || hasItem(next, item.id)) throw new ModelError(409, `item ${item.id} exists`);
        ids.add(item.id);
      }
      const at = position(op.at ?? next.length, next.length);
      const section = { id: op.section.id, model: op.section.model ?? {}, items };
      next.splice(at, 0, section);
      return { sections: next, stage: { sectionInserted: [{ at, section: clone(section) }] } };
    }
    case "updateSection": {
      const at = sectionAt(op.id);
      if (same(next[at].model, op.model)) return { sections, stage: null };
      next[at] = { ...next[at], model: op.model };
      return { sections: next, stage: { sectionUpdated: [{ at, model: op.model }] } };
    }
    case "moveSection": {
      const from = sectionAt(op.id);
      const to = position(op.to, next.length - 1);
      if (to === from) return { sections, stage: null };
      const [section] = next.splice(from, 1);
      next.splice(to, 0, section);
      return { sections: next, stage: { sectionMoved: [{ from, to }] } };
    }
    case "deleteSection": {
      const at = sectionAt(op.id);
      next.splice(at, 1);
      return { sections: next, stage: { sectionDeleted: [at] } };
    }
    case "insertItem": {
      const section = sectionAt(op.section);
      if (hasItem(next, op.item.id)) throw new ModelError(409, `item ${op.item.id} exists`);
      const at = position(op.at ?? next[section].items.length, next[section].items.length);
      const item = { id: op.item.id, model: op.item.model ?? {} };
      next[section].items.splice(at, 0, item);
      return { sections: next, stage: { itemInserted: [{ at: [section, at], item: clone(item) }] } };
    }
    case "updateItem": {
      const [section, index] = itemAt(op.id);
      if (same(next[section].items[index].model, op.model)) return { sections, stage: null };
      next[section].items[index] = { ...next[section].items[index], model: op.model };
      return { sections: next, stage: { itemUpdated: [{ at: [section, index], model: op.model }] } };
    }
    case "moveItem": {
      const from = itemAt(op.id);
      const section = op.section === undefined ? from[0] : sectionAt(op.section);
      const to = position(op.to, next[section].items.length - (section === from[0] ? 1 : 0));
      if (section === from[0] && to === from[1]) return { sections, stage: null };
      const [item] = next[from[0]].items.splice(from[1], 1);
      next[section].items.splice(to, 0, item);
      return { sections: next, stage: { itemMoved: [{ from, to: [section, to] }] } };
    }
    case "deleteItem": {
      const [section, index] = itemAt(op.id);
      next[section].items.splice(index, 1);
      return { sections: next, stage: { itemDeleted: [[section, index]] } };
    }
    default:
      throw new ModelError(400, `unknown op ${op.op}`);
  }
}

/** A batch of operations, all or nothing: `{sections, stages}`; throws ModelError. */
export function applyOps(sections, ops) {
  const stages = [];
  for (const op of ops) {
    const result = applyOp(sections, op);
    sections = result.sections;
    if (result.stage) stages.push(result.stage);
  }
  return { sections, stages };
}

/** Operations shown over `sections` the way an optimistic client should: each that does not apply is skipped. */
export function replayLeniently(sections, ops) {
  for (const op of ops) {
    try { sections = applyOp(sections, op).sections; } catch (error) { if (!(error instanceof ModelError)) throw error; }
  }
  return sections;
}

/** A seeded PRNG (mulberry32): the same seed, the same run. */
export function random(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    chance: (p) => next() < p,
    pick: (array) => array[Math.floor(next() * array.length)],
  };
}

/**
 * A random operation against `sections`: valid for them unless
 * `invalid` (then one the server refuses: an id that is not there, or taken, or a
 * position out of range). `fresh(prefix)` names new ids.
 */
export function randomOp(rng, sections, fresh, invalid = false) {
  const items = sections.flatMap((section) => section.items);
  const model = () => ({ n: rng.int(5) });
  if (invalid) {
    switch (rng.int(4)) {
      case 0: return { op: "updateItem", id: fresh("ghost"), model: model() };
      case 1: return { op: "deleteSection", id: fresh("ghost") };
      case 2: return items.length
        ? { op: "insertItem", section: sections[0]?.id ?? "none", item: { id: rng.pick(items).id, model: model() } }
        : { op: "moveSection", id: fresh("ghost"), to: 0 };
      default: return sections.length
        ? { op: "insertItem", section: rng.pick(sections).id, item: { id: fresh("i"), model: model() }, at: 1000 }
        : { op: "deleteItem", id: fresh("ghost") };
    }
  }
  const kinds = [];
  if (sections.length < 5) kinds.push("insertSection");
  if (sections.length) kinds.push("updateSection", "deleteSection", "insertItem", "insertItem", "insertItem");
  if (sections.length > 1) kinds.push("moveSection");
  if (items.length) kinds.push("updateItem", "updateItem", "moveItem", "moveItem", "deleteItem");
  switch (rng.pick(kinds)) {
    case "insertSection": {
      const withItems = rng.chance(0.3) ? [{ id: fresh("i"), model: model() }] : [];
      const op = { op: "insertSection", section: { id: fresh("s"), model: model(), items: withItems } };
      if (rng.chance(0.5)) op.at = rng.int(sections.length + 1);
      return op;
    }
    case "updateSection": return { op: "updateSection", id: rng.pick(sections).id, model: model() };
    case "moveSection": return { op: "moveSection", id: rng.pick(sections).id, to: rng.int(sections.length) };
    case "deleteSection": return { op: "deleteSection", id: rng.pick(sections).id };
    case "insertItem": {
      const section = rng.pick(sections);
      const op = { op: "insertItem", section: section.id, item: { id: fresh("i"), model: model() } };
      if (rng.chance(0.6)) op.at = rng.int(section.items.length + 1);
      return op;
    }
    case "updateItem": return { op: "updateItem", id: rng.pick(items).id, model: model() };
    case "moveItem": {
      const id = rng.pick(items).id;
      const from = locate(sections, id);
      const section = rng.chance(0.5) ? from[0] : rng.int(sections.length);
      const count = sections[section].items.length - (section === from[0] ? 1 : 0);
      const op = { op: "moveItem", id, to: rng.int(count + 1) };
      if (section !== from[0] || rng.chance(0.5)) op.section = sections[section].id;
      return op;
    }
    default: return { op: "deleteItem", id: rng.pick(items).id };
  }
}
