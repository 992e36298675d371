// A tiny stand-in for React's hooks, for react.test.mjs (React is not
// installed, and nothing is downloaded): the test maps the specifier "react"
// to this module. One component at a time: `mount(component, props,
// {strict})` renders it, then commits its effects (cleanups first) as React
// does; a store change re-renders it on a later microtask. With `strict`,
// the first commit's effects are run, cleaned up and run again, as React
// 18's StrictMode does in development. Not part of the package.

let rendering = null;

/** What happened, in order: "subscribe", "unsubscribe" (and what the test adds). */
export const log = [];

function slot(create) {
  const { root } = rendering;
  const index = rendering.index++;
  if (root.slots.length <= index) root.slots.push(create());
  return root.slots[index];
}

const sameDeps = (a, b) => a !== undefined && b !== undefined && a.length === b.length && a.every((value, i) => Object.is(value, b[i]));

export function useRef(initial) {
  return slot(() => ({ current: initial }));
}

export function useMemo(make, deps) {
  const memo = slot(() => ({ deps: undefined, value: undefined }));
  if (!sameDeps(memo.deps, deps)) { memo.value = make(); memo.deps = deps; }
  return memo.value;
}

export function useEffect(effect, deps) {
  const entry = slot(() => ({ deps: undefined, cleanup: undefined }));
  if (!sameDeps(entry.deps, deps)) rendering.effects.push({ entry, effect, deps });
}

export function useSyncExternalStore(subscribe, getSnapshot, getServerSnapshot) {
  const { root } = rendering;
  const value = getSnapshot();
  root.serverSnapshot = getServerSnapshot?.();
  const shown = useRef(undefined);
  useEffect(() => { shown.current = { value, getSnapshot }; });
  useEffect(() => {
    const check = () => {
      if (root.mounted && !Object.is(shown.current.getSnapshot(), shown.current.value)) root.schedule();
    };
    const unsubscribe = subscribe(check);
    log.push("subscribe");
    check(); // a change between the render and the subscription
    return () => { log.push("unsubscribe"); unsubscribe(); };
  }, [subscribe]);
  return value;
}

export function mount(component, props, { strict = false } = {}) {
  const root = { slots: [], mounted: true, renders: 0, result: undefined, props, scheduled: false };
  const commit = (effects) => {
    for (const { entry } of effects) { entry.cleanup?.(); entry.cleanup = undefined; }
    for (const { entry, effect, deps } of effects) { entry.cleanup = effect() || undefined; entry.deps = deps; }
  };
  root.render = (next = root.props) => {
    root.props = next;
    rendering = { root, index: 0, effects: [] };
    let effects;
    try { root.result = component(next); } finally { effects = rendering.effects; rendering = null; }
    root.renders += 1;
    commit(effects);
    if (strict && root.renders === 1) {
      for (const entry of root.slots) { if (entry.cleanup) { entry.cleanup(); entry.cleanup = undefined; } }
      for (const { entry, effect } of effects) entry.cleanup = effect() || undefined;
    }
    return root.result;
  };
  root.schedule = () => {
    if (root.scheduled) return;
    root.scheduled = true;
    queueMicrotask(() => { root.scheduled = false; if (root.mounted) root.render(); });
  };
  root.unmount = () => {
    root.mounted = false;
    for (const entry of root.slots) { if (entry.cleanup) { entry.cleanup(); entry.cleanup = undefined; } }
  };
  root.render(props);
  return root;
}
