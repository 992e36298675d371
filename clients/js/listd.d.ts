// Types for listd.js, written by hand: keep them in step with listd.js
// (api.test.mjs checks that both export the same names; `tsc -p
// clients/js` checks these declarations and the typed example).
//
// Models are generic: `Item` is the item model's type, `SectionModel` the
// section model's. Nothing checks a server's JSON against them: they say
// what the application stores.

/** One item of a list: its id and its model. */
export interface Item<Model = unknown> {
  id: string;
  model: Model;
}

/** One section: its id, its model and its items in order. */
export interface Section<ItemModel = unknown, SectionModel = unknown> {
  id: string;
  model: SectionModel;
  items: Item<ItemModel>[];
}

/** A list (or a view of it) at one version. */
export interface ListSnapshot<ItemModel = unknown, SectionModel = unknown> {
  id: string;
  name?: string;
  epoch: string;
  version: number;
  sections: Section<ItemModel, SectionModel>[];
  /**
   * In what a follow shows while optimistic writes (`Follower.patch`) are not yet confirmed: the ids
   * of the items they touch (possibly none); undefined when none is pending.
   */
  pending?: string[];
  /** With `pending`: the ids of the sections those writes touch (possibly none). */
  pendingSections?: string[];
  /**
   * In what a follow shows: `true` while the state is the one an earlier follow stored (`snapshots`)
   * and the server has not answered yet; absent otherwise.
   */
  fromCache?: true;
}

/** `[section, item]`. */
export type ItemPath = [number, number];

/** One table-view batch update (the contract's Stage). Empty fields may be left out. */
export interface Stage<ItemModel = unknown, SectionModel = unknown> {
  sectionDeleted?: number[];
  sectionInserted?: { at: number; section: Section<ItemModel, SectionModel> }[];
  sectionUpdated?: { at: number; model: SectionModel }[];
  sectionMoved?: { from: number; to: number }[];
  itemDeleted?: ItemPath[];
  itemInserted?: { at: ItemPath; item: Item<ItemModel> }[];
  itemUpdated?: { at: ItemPath; model: ItemModel }[];
  itemMoved?: { from: ItemPath; to: ItemPath }[];
}

/** A long-poll's or an event's answer. */
export interface ChangeAnswer<ItemModel = unknown, SectionModel = unknown> {
  list: string;
  epoch: string;
  from: number;
  to: number;
  stages: Stage<ItemModel, SectionModel>[];
  /** The whole snapshot instead of stages (history too short, another epoch, maxChanges). */
  reset?: boolean;
  snapshot?: ListSnapshot<ItemModel, SectionModel>;
  deleted?: boolean;
  /** Delivered by a follow for a local write (`Follower.patch`) before the server answered it. */
  optimistic?: boolean;
}

/** A view of a list: which items, in what order, grouped by what, cut to what window. */
export interface ViewSpec {
  /** path → value conditions, all of which must hold; a pair list repeats a path. */
  where?: Record<string, unknown> | Array<[string, unknown]>;
  q?: string;
  /** The path the items are ordered by; `-path` for descending. */
  order?: string;
  group?: string;
  limit?: number;
}

/** Timers and time, injectable (tests drive deadlines and back-off with a fake one). */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** A bearer token, or a provider asked once and again after each 401. */
export type TokenSource = string | ((context: { refresh: boolean }) => string | undefined | Promise<string | undefined>);

/**
 * The follow's connection: "live" on the event stream, "polling" live over
 * long-poll, "needs-auth" the token was refused, "closed" stopped or ended
 * by an error (`Follower.error`).
 */
export type ConnectionState = "connecting" | "live" | "polling" | "reconnecting" | "needs-auth" | "closed";

/** Why the data was replaced. */
export type ResetReason = "server" | "mismatch" | "recreated" | "listener-error" | "rebase" | "expired" | (string & {});

/** What a follow delivers, in order (`for await`, `updates()`). */
export type Update<ItemModel = unknown, SectionModel = unknown> =
  | { type: "snapshot"; snapshot: ListSnapshot<ItemModel, SectionModel> }
  | {
      type: "changes";
      answer: ChangeAnswer<ItemModel, SectionModel>;
      /** `states[0]` the sections before, `states[i + 1]` after stage i. */
      states: Section<ItemModel, SectionModel>[][];
      snapshot: ListSnapshot<ItemModel, SectionModel>;
    }
  | { type: "reset"; snapshot: ListSnapshot<ItemModel, SectionModel>; reason: ResetReason }
  | { type: "deleted"; list: string };

export interface FollowOptions<ItemModel = unknown, SectionModel = unknown> {
  view?: ViewSpec | string;
  /** Start from a snapshot held: all three, or none. */
  since?: number;
  epoch?: string;
  sections?: Section<ItemModel, SectionModel>[];
  transport?: "auto" | "events" | "poll";
  /** Back-off bounds, ms. */
  minDelay?: number;
  maxDelay?: number;
  maxChanges?: number;
  /** Stops the follow when aborted. */
  signal?: AbortSignal;
  /** ms without a byte on the event stream before it is given up (default 45000). */
  heartbeatTimeout?: number;
  /** s the server may hold a long-poll (default 30); the client gives up 15 s later. */
  pollTimeout?: number;
  /** ms for a snapshot request (default 60000). */
  requestTimeout?: number;
  /** ms of long-polling after a non-stream answer before the stream is tried again (default 60000). */
  streamRetryInterval?: number;
  clock?: Clock;
  /**
   * Where to keep the last state (default: the client's `snapshots`; `false`: none). A follow
   * shows the stored state at once (`fromCache: true`) and resumes from its version and epoch.
   */
  snapshots?: SnapshotStorage | false;
  /** ms between two writes of the state to `snapshots` (default 1000); the last state is always written. */
  snapshotInterval?: number;
  /** `snapshots` failed to read or write (default: console.warn). The follow goes on. */
  onStorageError?(error: unknown): void;
  onSnapshot?(snapshot: ListSnapshot<ItemModel, SectionModel>): void;
  onChanges?(change: {
    answer: ChangeAnswer<ItemModel, SectionModel>;
    states: Section<ItemModel, SectionModel>[][];
    snapshot: ListSnapshot<ItemModel, SectionModel>;
  }): void;
  onReset?(snapshot: ListSnapshot<ItemModel, SectionModel>, reason: ResetReason): void;
  onDeleted?(list: string): void;
  onState?(state: ConnectionState, detail?: { delay: number; error: ListdError }): void;
  /** An error that ended the follow: 400, 401 (static token), 403, 404 (never existed). */
  onError?(error: ListdError): void;
  onFailover?(move: { list: string; from: string; to: string; error: ListdError }): void;
  /** A callback or a subscriber threw (default: console.error). */
  onListenerError?(error: unknown, name: string): void;
}

/** A live follow of one list or view. */
export declare class Follower<ItemModel = unknown, SectionModel = unknown>
  implements AsyncIterable<Update<ItemModel, SectionModel>>
{
  readonly list: string;
  /** The server's data held now (without pending optimistic writes), or null before the first snapshot and after a deletion. */
  readonly snapshot: ListSnapshot<ItemModel, SectionModel> | null;
  readonly state: ConnectionState;
  /** The error that ended the follow, if one did. */
  readonly error: ListdError | undefined;
  /** Settles when the follow has ended (and its last state is written to `snapshots`). */
  readonly done: Promise<void>;
  /** Stops following (bound: may be passed around alone). */
  stop(): void;
  /** What to show: the server's data with pending optimistic writes over it; same object until it changes (bound). */
  getSnapshot(): ListSnapshot<ItemModel, SectionModel> | null;
  /** Called after every change of the data or the state; returns the unsubscribe (bound). */
  subscribe(listener: () => void): () => void;
  /**
   * An optimistic PATCH (any list operation; inserts name their ids): shown at once
   * (`getSnapshot().pending`, `.pendingSections`), confirmed without a visible change, rolled back
   * in one update if refused, rebased under someone else's changes. Settles as `client.patchList`.
   * In a view it shows where the view puts it (filter, order, groups, window evaluated in the
   * client); when that depends on what the view does not hold (an item leaving a full window, an
   * item entering an unordered view, …) it rejects with a TypeError and sends nothing: write with
   * `client.patchList`.
   */
  patch(ops: OptimisticOperation<ItemModel, SectionModel>[], options?: { ifMatch?: number } & WriteOptions): Promise<any>;
  /** The updates, starting with the snapshot held; a `break` detaches, it does not stop. */
  updates(): AsyncIterableIterator<Update<ItemModel, SectionModel>>;
  [Symbol.asyncIterator](): AsyncIterableIterator<Update<ItemModel, SectionModel>>;
}

/** How writes are retried (a network error, a timeout, 502, 503, 504; never a 4xx). */
export interface RetryOptions {
  /** Attempts in all, the first included (default 6). The outbox retries without a limit. */
  attempts?: number;
  /** Jittered exponential back-off bounds, ms (default 250 and 30000); a Retry-After asking more is honoured. */
  minDelay?: number;
  maxDelay?: number;
  /** ms an attempt may take before its answer is taken as lost (default 30000; 0: none). */
  timeout?: number;
  onRetry?(retry: { id: string; method: string; path: string; attempt: number; delay: number; error: ListdError }): void;
}

/** One write as the outbox stores it: the exact request, resent byte for byte. */
export interface OutboxRecord {
  /** The Idempotency-Key. */
  id: string;
  /** Its place in the outbox's order. */
  seq: number;
  method: string;
  path: string;
  /** The JSON body as sent. */
  body?: string;
  headers: Record<string, string>;
  createdAt: number;
}

/** Where an outbox keeps its writes: `MemoryOutboxStorage`, `IndexedDBOutboxStorage`, or your own. */
export interface OutboxStorage {
  /** Every record stored, in `seq` order. */
  load(): Promise<OutboxRecord[]>;
  put(record: OutboxRecord): Promise<void>;
  delete(id: string): Promise<void>;
}

/** A followed list's state as a `SnapshotStorage` keeps it. */
export interface SnapshotRecord {
  format: 1;
  list: string;
  /** The view's query text, empty for the whole list. */
  view: string;
  /** When it was written (ms since 1970). */
  savedAt: number;
  /** The server's state (without pending optimistic writes). */
  snapshot: ListSnapshot;
}

/**
 * Where follows keep their last state: `MemorySnapshotStorage`, `IndexedDBSnapshotStorage`, or your
 * own. Keys are the list's id, with `?` and the view's query for a view. A record `get` gives that is
 * not a sound `SnapshotRecord` of that list and view is ignored; a method that throws is reported
 * (`onStorageError`), never fails the follow.
 */
export interface SnapshotStorage {
  get(key: string): Promise<SnapshotRecord | undefined> | SnapshotRecord | undefined;
  put(key: string, record: SnapshotRecord): Promise<void>;
  delete(key: string): Promise<void>;
}

export interface OutboxOptions {
  /** Default: IndexedDB (database "listd-outbox") in a browser, memory elsewhere. */
  storage?: OutboxStorage;
  /** A queued write the server refused (4xx): also for writes queued by an earlier client. */
  onWriteRejected?(error: ListdError, record: OutboxRecord): void;
}

/**
 * The writes not yet answered: "sending" one now, "waiting" out a back-off
 * after a failure (`error`: offline, say), "needs-auth" after a 401,
 * "closed" after `close()`.
 */
export interface PendingWrites {
  readonly count: number;
  /** Their Idempotency-Keys, oldest first. */
  readonly ids: readonly string[];
  readonly state: "idle" | "sending" | "waiting" | "needs-auth" | "closed";
  readonly error: ListdError | undefined;
}

export interface ClientOptions {
  baseURL?: string;
  baseURLs?: string[];
  token?: TokenSource;
  fetch?: typeof fetch;
  clock?: Clock;
  /** On by default; `false` sends each write once (still with a key). */
  retry?: RetryOptions | false;
  /** Queue every write (default: off); `true` for the default storage. */
  outbox?: OutboxOptions | boolean;
  /** The default `snapshots` of this client's follows (default: none). */
  snapshots?: SnapshotStorage;
}

export interface Signalled {
  signal?: AbortSignal;
}

/** A write's options: `idempotencyKey` to name it yourself (default: a new `idempotencyKey()`). */
export interface WriteOptions extends Signalled {
  idempotencyKey?: string;
}

/** An operation of `PATCH /lists/{list}`. */
export type Operation<ItemModel = unknown, SectionModel = unknown> =
  | { op: "insertSection"; section: Partial<Section<ItemModel, SectionModel>> & { model?: SectionModel }; at?: number }
  | { op: "updateSection"; id: string; model: SectionModel }
  | { op: "moveSection"; id: string; to: number }
  | { op: "deleteSection"; id: string }
  | { op: "insertItem"; section: string; item: { id?: string; model: ItemModel }; at?: number }
  | { op: "updateItem"; id: string; model: ItemModel }
  | { op: "moveItem"; id: string; section?: string; to: number }
  | { op: "deleteItem"; id: string };

/** An operation `Follower.patch` can show before the server answers: inserts name the ids of what they insert. */
export type OptimisticOperation<ItemModel = unknown, SectionModel = unknown> =
  | Exclude<Operation<ItemModel, SectionModel>, { op: "insertSection" | "insertItem" }>
  | { op: "insertSection"; section: { id: string; model?: SectionModel; items?: Item<ItemModel>[] }; at?: number }
  | { op: "insertItem"; section: string; item: { id: string; model: ItemModel }; at?: number };

/** A listd server: REST calls and `follow`. */
export declare class ListdClient {
  constructor(options?: ClientOptions);
  readonly baseURLs: string[];
  readonly baseURL: string;
  token: TokenSource | undefined;
  /** The writes not yet answered; the same object until they change. */
  readonly pendingWrites: PendingWrites;
  /** Calls `listener()` after every change of `pendingWrites`; returns the unsubscribe (bound). */
  subscribe(listener: () => void): () => void;
  /** Stops the outbox (its writes stay stored for the next client); no-op without one. */
  close(): void;
  listLists(options?: { limit?: number; after?: string } & Signalled): Promise<any>;
  getList<ItemModel = unknown, SectionModel = unknown>(
    list: string, options?: { view?: ViewSpec | string } & Signalled): Promise<ListSnapshot<ItemModel, SectionModel>>;
  createList<ItemModel = unknown, SectionModel = unknown>(
    list: { id?: string; name?: string; sections?: Partial<Section<ItemModel, SectionModel>>[] },
    options?: WriteOptions): Promise<ListSnapshot<ItemModel, SectionModel>>;
  replaceList<ItemModel = unknown, SectionModel = unknown>(
    list: string, snapshot: { name?: string; sections: Section<ItemModel, SectionModel>[] },
    options?: { ifMatch?: number } & WriteOptions): Promise<any>;
  patchList<ItemModel = unknown, SectionModel = unknown>(
    list: string, ops: Operation<ItemModel, SectionModel>[], options?: { ifMatch?: number } & WriteOptions): Promise<any>;
  deleteList(list: string, options?: WriteOptions): Promise<any>;
  createSection<ItemModel = unknown, SectionModel = unknown>(
    list: string, section: Partial<Section<ItemModel, SectionModel>> & { at?: number }, options?: WriteOptions): Promise<any>;
  deleteSection(list: string, section: string, options?: WriteOptions): Promise<any>;
  createItem<ItemModel = unknown>(
    list: string, section: string, item: { id?: string; model: ItemModel; at?: number }, options?: WriteOptions): Promise<any>;
  getItem<ItemModel = unknown>(list: string, item: string, options?: Signalled): Promise<Item<ItemModel> & Record<string, unknown>>;
  deleteItem(list: string, item: string, options?: WriteOptions): Promise<any>;
  changes<ItemModel = unknown, SectionModel = unknown>(
    list: string, since: number | "now",
    options?: { epoch?: string; timeout?: number; maxChanges?: number; view?: ViewSpec | string } & Signalled,
  ): Promise<ChangeAnswer<ItemModel, SectionModel>>;
  follow<ItemModel = unknown, SectionModel = unknown>(
    list: string, options?: FollowOptions<ItemModel, SectionModel>): Follower<ItemModel, SectionModel>;
}

/** An error from listd: the problem+json fields, or status 0 for a transport failure or a timeout. */
export declare class ListdError extends Error {
  constructor(status: number, problem?: { type?: string; title?: string; detail?: string } | null, retryAfter?: number);
  readonly status: number;
  readonly type: string | undefined;
  readonly title: string | undefined;
  readonly detail: string | undefined;
  /** Seconds the server asked to wait (Retry-After). */
  readonly retryAfter: number | undefined;
}

/** A stage that does not fit the state it was applied to. */
export declare class StageError extends Error {
  constructor(stage: number, operation: string, reason: string);
  readonly stage: number;
  readonly operation: string;
  readonly reason: string;
}

/** One stage applied as UITableView.performBatchUpdates would; the input is not modified. */
export declare function applyStage<ItemModel, SectionModel>(
  sections: readonly Section<ItemModel, SectionModel>[], stage: Stage<ItemModel, SectionModel>, stageNumber?: number,
): Section<ItemModel, SectionModel>[];

/** What a stage does, by id: what to flash or slide after it, what fades out before it. */
export interface StageMarks {
  items: Record<string, "inserted" | "updated" | "moved">;
  sections: Record<string, "inserted" | "updated" | "moved">;
  deletedItems: string[];
  deletedSections: string[];
}

/** What `stage` does, by id, given the states before and after it (for UIs that keep rows by id). */
export declare function stageMarks<ItemModel, SectionModel>(
  before: readonly Section<ItemModel, SectionModel>[], stage: Stage<ItemModel, SectionModel>,
  after: readonly Section<ItemModel, SectionModel>[],
): StageMarks;

/** How `applyStageToDOM` makes and renders elements. */
export interface DOMListRenderers<ItemModel = unknown, SectionModel = unknown, ItemElement = Element, SectionElement = Element> {
  /** Makes an item's element (`element` undefined) or renders it again; returns the element to show. */
  item(item: Item<ItemModel>, element: ItemElement | undefined, state: { pending: boolean }): ItemElement;
  /** Gives each section an element (same contract); without it, items go straight into the container. */
  section?(section: Section<ItemModel, SectionModel>, element: SectionElement | undefined, state: { pending: boolean }): SectionElement;
  /** Where a section's items go (default: its element). */
  itemsOf?(element: SectionElement): Node;
  /** Ids of items shown as pending (`getSnapshot().pending`): a change of it renders the item again. */
  pending?: readonly string[];
  /** Ids of sections shown as pending (`getSnapshot().pendingSections`). */
  pendingSections?: readonly string[];
}

/**
 * Puts a DOM list in the state `sections` (a snapshot's, or a stage's after-state), reusing
 * elements by id: a moved row is the same node, only what changed is rendered again, what is
 * gone is removed; children it did not make stay first. Returns `container`.
 */
export declare function applyStageToDOM<Container extends Node, ItemModel, SectionModel, ItemElement extends ChildNode = Element, SectionElement extends ChildNode = Element>(
  container: Container, sections: readonly Section<ItemModel, SectionModel>[],
  renderers: DOMListRenderers<ItemModel, SectionModel, ItemElement, SectionElement>,
): Container;

/** An answer's stages applied to a snapshot at `answer.from` of `answer.epoch`: every state, before first. */
export declare function applyAnswer<ItemModel, SectionModel>(
  snapshot: { epoch?: string; version: number; sections: Section<ItemModel, SectionModel>[] },
  answer: ChangeAnswer<ItemModel, SectionModel>,
): Section<ItemModel, SectionModel>[][];

/** Reads a `text/event-stream` body. */
export declare class EventStreamParser {
  constructor(onEvent: (event: { event: string; data: string; id: string | undefined }) => void);
  readonly retry: number | undefined;
  push(text: string): void;
}

/** A view's query read as the server reads it (what `Follower.patch` places local writes by). */
export interface ParsedView {
  conditions: { path: string[]; value: unknown }[];
  q: string | null;
  order: { path: string[]; descending: boolean } | null;
  group: string[] | null;
  limit: number | null;
}

/** Reads a view's query text (`viewQuery`'s, or any the server takes). Throws TypeError for a malformed `where`. */
export declare function parseView(text: string): ParsedView;

/** A view's query text, as the server's canonical query writes it; empty for none. */
export declare function viewQuery(view?: ViewSpec | string | null): string;

/** The system's timers. */
export declare const systemClock: Clock;

/** A new Idempotency-Key: a time-ordered UUIDv7 with 62 random bits from crypto.getRandomValues. */
export declare function idempotencyKey(): string;

/** An outbox storage in memory (node's default): shared by two clients, it outlives the first. */
export declare class MemoryOutboxStorage implements OutboxStorage {
  constructor();
  load(): Promise<OutboxRecord[]>;
  put(record: OutboxRecord): Promise<void>;
  delete(id: string): Promise<void>;
}

/** An outbox storage in IndexedDB (a browser's default): writes outlive a reload or a crash. */
export declare class IndexedDBOutboxStorage implements OutboxStorage {
  constructor(name?: string, factory?: IDBFactory);
  readonly name: string;
  load(): Promise<OutboxRecord[]>;
  put(record: OutboxRecord): Promise<void>;
  delete(id: string): Promise<void>;
  close(): Promise<void>;
}

/** A snapshot storage in memory: shared by two follows, one after the other, it outlives the first. */
export declare class MemorySnapshotStorage implements SnapshotStorage {
  constructor();
  get(key: string): Promise<SnapshotRecord | undefined>;
  put(key: string, record: SnapshotRecord): Promise<void>;
  delete(key: string): Promise<void>;
}

/** A snapshot storage in IndexedDB (database `name`, default "listd-snapshots"): a page opened offline shows the last state. */
export declare class IndexedDBSnapshotStorage implements SnapshotStorage {
  constructor(name?: string, factory?: IDBFactory);
  readonly name: string;
  get(key: string): Promise<SnapshotRecord | undefined>;
  put(key: string, record: SnapshotRecord): Promise<void>;
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}
