// The listd inspector: lists the lists, follows one live as a sectioned table,
// and animates each stage of each change as one batch, the way a table view's
// performBatchUpdates would. Uses the JavaScript client (listd.js), served
// beside it from the binary.
import { ListdClient, stageMarks } from "./listd.js";

const TOKEN_KEY = "listd.inspector.token";
const $ = (selector) => document.querySelector(selector);

let client = makeClient();
let follower = null;
let openList = null;
/** The view of `openList` followed: a query text, empty for the whole list. */
let openView = "";
let resets = 0;
/** Answers waiting to be animated, in order; each is a function returning a promise. */
const queue = [];
let animating = false;

function makeClient() {
  return new ListdClient({ baseURL: location.origin, token: sessionStorage.getItem(TOKEN_KEY) || undefined });
}

// MARK: Lists

async function loadLists() {
  const error = $("#lists-error");
  try {
    const lists = [];
    let after;
    do {
      const page = await client.listLists({ limit: 500, after });
      lists.push(...page.lists);
      after = page.next;
    } while (after && lists.length < 5000);
    error.hidden = true;
    renderLists(lists);
  } catch (failure) {
    error.textContent = failure.status === 401 || failure.status === 403
      ? `The server needs a token (${failure.detail})`
      : `Cannot load the lists: ${failure.message}`;
    error.hidden = false;
  }
}

let listsRefresh = null;
/** Reloads the lists soon (at most twice a second), after the followed list changed. */
function refreshListsSoon() {
  if (listsRefresh) return;
  listsRefresh = setTimeout(() => { listsRefresh = null; loadLists(); }, 500);
}

function renderLists(lists) {
  const body = $("#lists tbody");
  body.replaceChildren(...lists.map((list) => {
    const row = document.createElement("tr");
    row.dataset.listId = list.id;
    if (list.id === openList) row.classList.add("open");
    for (const value of [list.id, list.name, list.sectionCount, list.itemCount, list.version]) {
      const cell = document.createElement("td");
      cell.textContent = value ?? "";
      row.append(cell);
    }
    row.addEventListener("click", () => { location.hash = encodeURIComponent(list.id); });
    return row;
  }));
  $("#lists-empty").hidden = lists.length > 0;
}

// MARK: Following

function follow(list, view = "") {
  follower?.stop();
  queue.length = 0;
  openList = list;
  openView = view;
  $("#view").value = view;
  resets = 0;
  for (const row of document.querySelectorAll("#lists tbody tr")) row.classList.toggle("open", row.dataset.listId === list);
  $("#list-title").textContent = view ? `${list} ? ${view}` : list;
  $("#table").replaceChildren();
  $("#log").replaceChildren();
  showBanner(null);
  setResets(0);
  setHead(null);
  follower = client.follow(list, {
    view: view || undefined,
    onSnapshot: (snapshot) => enqueue(async () => {
      showBanner(null);
      render(snapshot.sections, {});
      setHead(snapshot);
      log(`snapshot at version ${snapshot.version}`);
    }),
    onChanges: ({ answer, states, snapshot }) => enqueue(async () => {
      for (let index = 0; index < answer.stages.length; index++) {
        await animateStage(states[index], answer.stages[index], states[index + 1], queue.length > 2);
      }
      setHead(snapshot);
      log(`${answer.from} → ${answer.to}: ${describe(answer.stages)}`);
      refreshListsSoon();
    }),
    onReset: (snapshot, reason) => enqueue(async () => {
      setResets(resets + 1);
      const why = {
        server: "the server sent the whole list (reloadData, no animation)",
        recreated: "the list was created again",
        mismatch: "a change did not apply, so the list was fetched again",
      }[reason] || reason;
      showBanner(`Reset at version ${snapshot.version}: ${why}.`, "reset");
      render(snapshot.sections, {});
      setHead(snapshot);
      if (follower) setConnection(follower.state);
      log(`reset to version ${snapshot.version} (${reason})`);
      refreshListsSoon();
    }),
    onDeleted: (id) => enqueue(async () => {
      showBanner(`List ${id} was deleted. Waiting for it to come back…`, "deleted");
      $("#table").replaceChildren();
      setHead(null);
      setConnection("deleted");
      log("deleted");
      refreshListsSoon();
    }),
    onState: (state, detail) => {
      if (state === "reconnecting") setConnection(state, `reconnecting in ${Math.round(detail.delay / 100) / 10} s`);
      else if (state !== "closed" && state !== "needs-auth") setConnection(state); // onError has said why it ended
    },
    onError: (error) => {
      setConnection("error", { 400: "bad view", 403: "token refused", 404: "no such list" }[error.status] || "needs a token");
      showBanner(`Cannot follow ${list}: ${error.detail || error.message}`, "deleted");
    },
  });
}

function enqueue(task) {
  queue.push(task);
  if (!animating) drain();
}

async function drain() {
  animating = true;
  while (queue.length > 0) {
    const task = queue.shift();
    try { await task(); } catch (error) { console.error(error); }
  }
  animating = false;
}

function setConnection(state, text) {
  const pill = $("#connection");
  pill.dataset.state = state;
  pill.textContent = text || state;
}

function setHead(snapshot) {
  const version = $("#version");
  version.textContent = snapshot ? snapshot.version : "–";
  version.dataset.version = snapshot ? String(snapshot.version) : "";
  $("#epoch").textContent = snapshot?.epoch || "–";
}

function setResets(count) {
  resets = count;
  const element = $("#resets");
  element.textContent = String(count);
  element.dataset.resets = String(count);
}

function showBanner(text, kind) {
  const banner = $("#banner");
  banner.hidden = !text;
  banner.textContent = text || "";
  banner.dataset.kind = kind || "";
}

function log(text) {
  const entry = document.createElement("li");
  entry.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  $("#log").prepend(entry);
  while ($("#log").children.length > 100) $("#log").lastElementChild.remove();
}

function describe(stages) {
  const counts = {};
  for (const stage of stages) {
    for (const [field, entries] of Object.entries(stage)) counts[field] = (counts[field] || 0) + entries.length;
  }
  const parts = Object.entries(counts).map(([field, count]) => `${count} ${field}`);
  return `${stages.length} stage${stages.length === 1 ? "" : "s"}${parts.length ? ` (${parts.join(", ")})` : ""}`;
}

// MARK: The table

const short = (model) => {
  const text = JSON.stringify(model);
  return text.length > 160 ? `${text.slice(0, 157)}…` : text;
};

function sectionBody(section) {
  let body = document.querySelector(`#table tbody[data-section-id="${CSS.escape(section.id)}"]`);
  if (!body) {
    body = document.createElement("tbody");
    body.className = "section";
    body.dataset.sectionId = section.id;
    const header = document.createElement("tr");
    header.className = "section-header";
    const cell = document.createElement("th");
    cell.colSpan = 3;
    const name = document.createElement("span");
    name.className = "name";
    const model = document.createElement("span");
    model.className = "model";
    cell.append(name, " ", model);
    header.append(cell);
    body.append(header);
  }
  body.querySelector(".name").textContent = section.id;
  body.querySelector(".model").textContent = short(section.model);
  return body;
}

function itemRow(item) {
  let row = document.querySelector(`#table tr[data-item-id="${CSS.escape(item.id)}"]`);
  if (!row) {
    row = document.createElement("tr");
    row.className = "row";
    row.dataset.itemId = item.id;
    for (const name of ["pos", "id", "model"]) {
      const cell = document.createElement("td");
      cell.className = name;
      row.append(cell);
    }
  }
  row.querySelector(".id").textContent = item.id;
  row.querySelector(".model").textContent = short(item.model);
  row.dataset.model = JSON.stringify(item.model);
  return row;
}

/** Puts the table in the state `sections`, reusing rows by id (so they can slide). */
function render(sections, marks) {
  const table = $("#table");
  const bodies = sections.map((section, sectionIndex) => {
    const body = sectionBody(section);
    body.dataset.index = String(sectionIndex);
    const rows = section.items.map((item, itemIndex) => {
      const row = itemRow(item);
      row.querySelector(".pos").textContent = `${sectionIndex}.${itemIndex}`;
      return row;
    });
    body.replaceChildren(body.firstElementChild, ...rows);
    return body;
  });
  table.replaceChildren(...bodies);
  for (const [id, kind] of Object.entries(marks.items || {})) {
    flash(document.querySelector(`#table tr[data-item-id="${CSS.escape(id)}"]`), kind);
  }
  for (const [id, kind] of Object.entries(marks.sections || {})) {
    flash(document.querySelector(`#table tbody[data-section-id="${CSS.escape(id)}"]`), kind);
  }
}

function flash(element, kind) {
  if (!element) return;
  element.classList.add(kind);
  // Removing the class lets the colour fade out (the transition in the CSS).
  setTimeout(() => element.classList.remove(kind), 700);
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One stage as one batch: deleted rows and sections turn red and fade, then
 * the table takes the stage's result, inserted rows flash green, updated
 * ones yellow, and moved ones slide from where they were (FLIP).
 */
async function animateStage(before, stage, after, hurry) {
  const marks = stageMarks(before, stage, after);
  const deleting = [
    ...marks.deletedItems.map((id) => document.querySelector(`#table tr[data-item-id="${CSS.escape(id)}"]`)),
    ...marks.deletedSections.map((id) => document.querySelector(`#table tbody[data-section-id="${CSS.escape(id)}"]`)),
  ].filter(Boolean);
  if (deleting.length > 0 && !hurry) {
    for (const element of deleting) element.classList.add("deleting");
    await pause(150);
  }

  // FLIP: where each moved thing was, then where it lands, then slide between.
  const movedIDs = Object.entries(marks.items).filter(([, kind]) => kind === "moved").map(([id]) => id);
  const movedSections = Object.entries(marks.sections).filter(([, kind]) => kind === "moved").map(([id]) => id);
  const first = new Map();
  for (const id of movedIDs) {
    const row = document.querySelector(`#table tr[data-item-id="${CSS.escape(id)}"]`);
    if (row) first.set(row, row.getBoundingClientRect().top);
  }
  for (const id of movedSections) {
    const body = document.querySelector(`#table tbody[data-section-id="${CSS.escape(id)}"]`);
    if (body) first.set(body, body.getBoundingClientRect().top);
  }
  render(after, marks);
  if (hurry) return;
  for (const [element, top] of first) {
    const delta = top - element.getBoundingClientRect().top;
    if (delta === 0) continue;
    element.classList.remove("sliding");
    element.style.transform = `translateY(${delta}px)`;
  }
  if (first.size > 0) {
    document.body.getBoundingClientRect(); // apply the start positions before sliding
    for (const element of first.keys()) {
      element.classList.add("sliding");
      element.style.transform = "";
    }
  }
  await pause(first.size > 0 ? 260 : 120);
}

// MARK: Start

/** `#list` follows the list, `#list?where=…&order=…` a view of it. */
function openFromHash() {
  const hash = location.hash.slice(1);
  const mark = hash.indexOf("?");
  const list = decodeURIComponent(mark < 0 ? hash : hash.slice(0, mark));
  const view = mark < 0 ? "" : hash.slice(mark + 1);
  if (list && (list !== openList || view !== openView)) follow(list, view);
}

$("#token").value = sessionStorage.getItem(TOKEN_KEY) || "";
$("#token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("#token").value.trim();
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
  client = makeClient();
  loadLists();
  if (openList) { const list = openList; openList = null; follow(list, openView); }
});
$("#refresh").addEventListener("click", loadLists);
$("#view-form").addEventListener("submit", (event) => {
  event.preventDefault();
  if (!openList) return;
  // The view goes in the URL's fragment as typed (listd reads it as a query: + is a space).
  const view = $("#view").value.trim().replace(/^\?/, "");
  location.hash = encodeURIComponent(openList) + (view ? `?${view}` : "");
});
window.addEventListener("hashchange", openFromHash);
setInterval(loadLists, 5000);
loadLists();
openFromHash();
