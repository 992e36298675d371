// Types for react.js (`listd-client/react`), written by hand: keep them in
// step with react.js (react.test.mjs checks both export the same names).
import type { ConnectionState, FollowOptions, Follower, ListdClient, ListdError, ListSnapshot } from "./listd.js";

/** What `useFollow` gives: the same object until one of its fields changes. */
export interface FollowResult<ItemModel = unknown, SectionModel = unknown> {
  /** `follower.getSnapshot()`: null before the first; `fromCache: true` while it is the stored state. */
  readonly snapshot: ListSnapshot<ItemModel, SectionModel> | null;
  /** `follower.state`; "connecting" before React subscribed, "closed" without a list. */
  readonly state: ConnectionState;
  /** The error that ended the follow, if one did. */
  readonly error: ListdError | undefined;
  /** The follow (for `patch`), once React has subscribed; null before and without a list. */
  readonly follower: Follower<ItemModel, SectionModel> | null;
}

/**
 * Follows `list` (a view with `options.view`) while the component is mounted, with
 * useSyncExternalStore. A new client, list, view or other option stops the follow and starts
 * another; callbacks may be new functions on every render. A falsy list follows nothing.
 */
export declare function useFollow<ItemModel = unknown, SectionModel = unknown>(
  client: ListdClient, list: string | null | undefined, options?: FollowOptions<ItemModel, SectionModel>,
): FollowResult<ItemModel, SectionModel>;
