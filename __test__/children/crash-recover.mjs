// Crash-test recovery: a fresh process opens the journal left by a killed
// dispatcher, installs the same hook, runs recover() and prints its report.
//   node crash-recover.mjs <journal>
import { HookRuntime } from '../../lib/index.js'
import { PROFILE, emit, install } from './fixture.mjs'

const [journalPath] = process.argv.slice(2)
try {
  const runtime = await HookRuntime.open({ journalPath, profile: PROFILE, synchronous: 'full' })
  install(runtime)
  const report = await runtime.recover()
  const integrity = await runtime.journal.integrityCheck()
  await runtime.close()
  emit({ t: 'recovered', report, integrity })
} catch (e) {
  emit({ t: 'error', code: e?.code ?? null, message: String(e?.message ?? e) })
  process.exitCode = 1
}
