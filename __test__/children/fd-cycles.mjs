// Opens and closes one journal many times and reports this process's open
// descriptors (the entries of /proc/self/fd) before and after: a descriptor
// left behind by each cycle shows as growth, and under a low `ulimit -n` as
// an open that fails (EMFILE).
//   node fd-cycles.mjs <target json> <runtime cycles> <journal cycles>
// Prints `fds` {start, afterRuntime, end}, or `error` {code, message, cycle}.
import { readdirSync } from 'node:fs'

import { HookJournal, HookRuntime } from '../../dist/index.js'
import { emit } from './fixture.mjs'
import { parseTarget } from './target.mjs'

const [targetArg, runtimeCycles, journalCycles] = process.argv.slice(2)
const target = parseTarget(targetArg)
const fds = () => readdirSync('/proc/self/fd').length

let phase = 'runtime'
let cycle = 0
try {
  // One cycle first: the addon's lazily made threads and pools exist before
  // the baseline, so they are not counted as growth.
  await (await HookRuntime.open({ ...target.runtime, profile: { enabled: true } })).close()
  await (await HookJournal.open(target.journal)).close()
  const start = fds()
  for (cycle = 0; cycle < Number(runtimeCycles); cycle++) {
    const runtime = await HookRuntime.open({ ...target.runtime, profile: { enabled: true } })
    await runtime.close()
  }
  const afterRuntime = fds()
  phase = 'journal'
  for (cycle = 0; cycle < Number(journalCycles); cycle++) {
    const journal = await HookJournal.open(target.journal)
    await journal.close()
  }
  emit({ t: 'fds', start, afterRuntime, end: fds() })
} catch (e) {
  emit({ t: 'error', code: e?.code ?? null, message: String(e?.message ?? e), phase, cycle, fds: fds() })
  process.exitCode = 1
}
