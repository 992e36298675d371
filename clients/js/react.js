// listd-client/react: a followed list (or view) in a React component.
//
//   import { useFollow } from "listd-client/react";
//   const { snapshot, state, follower } = useFollow(client, "todos", { view: { where: { done: false } } });
//
// Built on useSyncExternalStore over the Follower's subscribe/getSnapshot.
// React (18 or later) is the application's: a peer dependency, imported
// only by this entry point.
import { useEffect, useMemo, useRef, useSyncExternalStore } from "react";
import { viewQuery } from "./listd.js";

/** The options that start a new follow when they change: values compared with Object.is, `view` by its query. */
const restartOn = ["since", "epoch", "sections", "transport", "minDelay", "maxDelay", "maxChanges", "signal",
  "heartbeatTimeout", "pollTimeout", "requestTimeout", "streamRetryInterval", "clock", "snapshots", "snapshotInterval"];

/** The callbacks, called as the latest render passed them (a new function does not start a new follow). */
const callbacks = ["onSnapshot", "onChanges", "onReset", "onDeleted", "onState", "onError", "onFailover",
  "onListenerError", "onStorageError"];

const before = Object.freeze({ snapshot: null, state: "connecting", error: undefined, follower: null });
const none = Object.freeze({ snapshot: null, state: "closed", error: undefined, follower: null });

/**
 * One follow for one hook: started by the first subscriber (after React
 * commits, never during a render), stopped when the last one leaves, unless
 * one comes back in the same turn (StrictMode's second mount).
 */
function followStore(client, list, options, latest) {
  let follower = null;
  let subscribers = 0;
  let result = list ? before : none;
  const getSnapshot = () => {
    const snapshot = follower ? follower.getSnapshot() : null;
    const state = follower ? follower.state : result.state;
    const error = follower?.error;
    if (result.snapshot !== snapshot || result.state !== state || result.error !== error || result.follower !== follower) {
      result = Object.freeze({ snapshot, state, error, follower });
    }
    return result;
  };
  const subscribe = (listener) => {
    if (!list) return () => {};
    subscribers += 1;
    if (!follower) {
      const forwarded = {};
      for (const name of callbacks) {
        if (options[name]) forwarded[name] = (...args) => latest.current[name]?.(...args);
      }
      follower = client.follow(list, { ...options, ...forwarded });
    }
    const unsubscribe = follower.subscribe(listener);
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      unsubscribe();
      subscribers -= 1;
      queueMicrotask(() => {
        if (subscribers > 0 || !follower) return;
        follower.stop();
        follower = null;
      });
    };
  };
  return { subscribe, getSnapshot, getServerSnapshot: () => (list ? before : none) };
}

/**
 * Follows `list` (a view with `options.view`) while the component is
 * mounted: `{snapshot, state, error, follower}`, the same object until one
 * of them changes. `snapshot` is `follower.getSnapshot()` (null before the
 * first, `fromCache` while it is the stored one); `follower` is null until
 * React has subscribed (for `follower.patch`). A new `client`, `list`, view
 * or other option stops the follow and starts another; callbacks may be new
 * functions every render. A falsy `list` follows nothing (state "closed").
 */
export function useFollow(client, list, options = {}) {
  const latest = useRef(options);
  useEffect(() => { latest.current = options; });
  const view = viewQuery(options.view);
  const store = useMemo(() => followStore(client, list, options, latest),
    // eslint-disable-next-line react-hooks/exhaustive-deps -- options are compared one by one
    [client, list, view, ...restartOn.map((name) => options[name])]);
  return useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
}
