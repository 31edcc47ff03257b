// Opens a runtime on <journalPath> exactly as given (relative to this
// process's cwd), dispatches one writeback and reads it back through the
// readers: prints {recorded, found, pending} as one JSON line.
//   node path-open.mjs <journalPath>
import { HookRuntime } from '../../dist/index.js'
import { PROFILE, emit, expected, install, request } from './fixture.mjs'

const [journalPath] = process.argv.slice(2)
try {
  const runtime = await HookRuntime.open({ journal: journalPath, profile: PROFILE })
  install(runtime)
  const out = await runtime.dispatch(request('r1'))
  const row = await runtime.journal.getDispatch(expected('r1').dispatchId)
  const pending = await runtime.journal.listIntents({ pendingOnly: true })
  emit({ admitted: out.admitted, state: row?.state ?? null, pending: pending.items.length })
  await runtime.close()
} catch (e) {
  emit({ error: e?.code ?? String(e) })
  process.exit(1)
}
