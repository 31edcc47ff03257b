// Crash-test recovery: a fresh process opens the journal left by a killed
// dispatcher, installs the same hook, runs recover() and prints its report.
//   node crash-recover.mjs <target json>
import { HookRuntime } from '../../lib/index.js'
import { PROFILE, emit, install } from './fixture.mjs'
import { parseTarget } from './target.mjs'

try {
  const target = parseTarget(process.argv[2])
  const runtime = await HookRuntime.open({ ...target.runtime, profile: PROFILE })
  install(runtime)
  const report = await runtime.recover()
  // The journal's own check (SQLite: integrity_check and foreign_key_check; PostgreSQL: the schema's invariants).
  const verdict = await runtime.journal.integrity()
  await runtime.close()
  emit({ t: 'recovered', report, integrity: verdict.ok, messages: verdict.messages })
} catch (e) {
  emit({ t: 'error', code: e?.code ?? null, message: String(e?.message ?? e) })
  process.exitCode = 1
}
