// A typed example: a followed list bound to the DOM, and the same follow
// through a React-style useSyncExternalStore. Checked by `tsc -p clients/js`
// (it imports the package by its own name, through package.json's exports).
import {
  IndexedDBOutboxStorage, IndexedDBSnapshotStorage, ListdClient, ListdError, applyStageToDOM, idempotencyKey,
  type Follower, type ListSnapshot, type PendingWrites, type SnapshotStorage, type Update,
} from "listd-client";
import { useFollow, type FollowResult } from "listd-client/react";

interface Todo { title: string; done: boolean }
interface Group { title: string }

const client = new ListdClient({
  baseURL: "http://127.0.0.1:8080",
  // Asked once, and again whenever the server answers 401.
  token: async () => (await fetch("/session/listd-token")).text(),
});

// 1. Callbacks into the DOM: one <ul> per section, one <li> per item.
export function bind(root: HTMLElement, list: string, signal: AbortSignal): Follower<Todo, Group> {
  const follower = client.follow<Todo, Group>(list, { signal });
  follower.subscribe(() => {
    root.dataset.state = follower.state; // "live", "reconnecting", "needs-auth", …
    render(root, follower.getSnapshot());
  });
  return follower;
}

function render(root: HTMLElement, snapshot: ListSnapshot<Todo, Group> | null): void {
  root.replaceChildren(...(snapshot?.sections ?? []).map((section) => {
    const list = document.createElement("ul");
    list.title = section.model.title;
    list.append(...section.items.map((item) => {
      const row = document.createElement("li");
      row.textContent = item.model.done ? `✓ ${item.model.title}` : item.model.title;
      return row;
    }));
    return list;
  }));
}

// 2. React: useSyncExternalStore(follower.subscribe, follower.getSnapshot).
declare function useSyncExternalStore<T>(subscribe: (onChange: () => void) => () => void, getSnapshot: () => T): T;
export function useOpenCount(follower: Follower<Todo, Group>): number {
  const snapshot = useSyncExternalStore(follower.subscribe, follower.getSnapshot);
  return snapshot?.sections.flatMap((section) => section.items).filter((item) => !item.model.done).length ?? 0;
}

// 3. for await, with the error that ends the follow.
export async function log(list: string, signal: AbortSignal): Promise<void> {
  const follower = client.follow<Todo, Group>(list, { signal, view: { where: { done: false }, order: "title" } });
  try {
    for await (const update of follower) describe(update);
  } catch (error) {
    if (error instanceof ListdError && error.status === 404) console.log(`${list} does not exist`);
    else throw error;
  }
}

function describe(update: Update<Todo, Group>): void {
  switch (update.type) {
    case "snapshot": console.log(`version ${update.snapshot.version}`); break;
    case "changes": console.log(`${update.answer.from} → ${update.answer.to}: ${update.answer.stages.length} stages`); break;
    case "reset": console.log(`reset (${update.reason})`); break;
    case "deleted": console.log(`${update.list} deleted`); break;
  }
}

// Writes are typed by the same models.
export async function complete(list: string, id: string, todo: Todo): Promise<void> {
  await client.patchList<Todo, Group>(list, [{ op: "updateItem", id, model: { ...todo, done: true } }]);
}

// 4. Writes made offline: an outbox in IndexedDB, sent in order when the network is back,
// kept across reloads; "saving…" from pendingWrites.
const offline = new ListdClient({
  baseURL: "http://127.0.0.1:8080",
  token: async () => (await fetch("/session/listd-token")).text(),
  retry: { maxDelay: 10000, onRetry: ({ attempt, error }) => console.log(`retry ${attempt}: ${error.message}`) },
  outbox: {
    storage: new IndexedDBOutboxStorage("todos"),
    onWriteRejected: (error, record) => console.warn(`${record.method} ${record.path} refused: ${error.detail}`),
  },
});

export function add(list: string, title: string): string {
  const key = idempotencyKey(); // known before it is sent: the write's id in pendingWrites
  void offline.createItem<Todo>(list, "inbox", { model: { title, done: false } }, { idempotencyKey: key });
  return key;
}

export function useSaving(): boolean {
  const pending: PendingWrites = useSyncExternalStore(offline.subscribe, () => offline.pendingWrites);
  return pending.count > 0;
}

// 5. Plain DOM kept in step by id (moved rows keep their nodes), for a list and a view of it;
// optimistic writes show at once, marked "saving" until the server confirms them.
export function bindDOM(all: HTMLUListElement, open: HTMLUListElement, signal: AbortSignal): (id: string, todo: Todo) => Promise<unknown> {
  const todos = client.follow<Todo, Group>("todos", { signal });
  const openTodos = client.follow<Todo, Group>("todos", { signal, view: { where: { done: false }, order: "title" } });
  const row = (item: { id: string; model: Todo }, li = document.createElement("li"), { pending }: { pending: boolean }) => {
    li.textContent = item.model.title;
    li.classList.toggle("saving", pending);
    return li;
  };
  for (const [follower, list] of [[todos, all], [openTodos, open]] as const) {
    follower.subscribe(() => {
      const snapshot = follower.getSnapshot();
      applyStageToDOM(list, snapshot?.sections ?? [], { item: row, pending: snapshot?.pending });
    });
  }
  return (id, todo) => todos.patch([{ op: "updateItem", id, model: { ...todo, done: true } }]);
}

// 6. Offline reads: the last state of each follow kept in IndexedDB; a page opened offline shows it
// at once, marked fromCache until listd answers, then goes on from its version with a change.
const snapshots: SnapshotStorage = new IndexedDBSnapshotStorage("todos-snapshots");
const cached = new ListdClient({ baseURL: "http://127.0.0.1:8080", snapshots });

export function offlineBanner(follower: Follower<Todo, Group>): string {
  const snapshot = follower.getSnapshot();
  if (snapshot?.fromCache) return follower.state === "reconnecting" ? "offline: showing the saved list" : "updating…";
  return "";
}

// 7. The React hook (listd-client/react): one follow per mounted component, stopped on unmount or
// when the list or the view changes; inline options and callbacks do not restart it.
export function useOpenTodos(owner: string): { titles: string[]; stale: boolean; complete(id: string, todo: Todo): void } {
  const result: FollowResult<Todo, Group> = useFollow<Todo, Group>(cached, "todos", {
    view: { where: { done: false, owner }, order: "title" },
    snapshotInterval: 2000,
    onReset: (_, reason) => console.log(`reloaded (${reason})`),
  });
  const { snapshot, state, follower } = result;
  return {
    titles: snapshot?.sections.flatMap((section) => section.items.map((item) => item.model.title)) ?? [],
    stale: snapshot?.fromCache === true || state === "reconnecting",
    complete: (id, todo) => { void follower?.patch([{ op: "updateItem", id, model: { ...todo, done: true } }]); },
  };
}
