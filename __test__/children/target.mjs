// The journal a child opens, from one argv item written by the parent
// (support/backends.ts `childArg`): JSON `{ runtime, journal }`, where
// `runtime` is the journal part of HookRuntime.open's options (`journal`: an
// SQLite path or `{ postgres }`) and `journal` is the argument
// of HookJournal.open. The parent's backend decides; a child never does.
export function parseTarget(arg) {
  const target = JSON.parse(arg)
  if (!target || typeof target !== 'object' || !target.runtime || !target.journal)
    throw new Error('child: the first argument must be a journal target (support/backends.ts childArg)')
  return target
}
