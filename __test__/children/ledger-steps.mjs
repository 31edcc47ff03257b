// One step of ledger_hostile.spec.ts on a journal, in a process of its own so
// that a step that blocks (an open(2) of a FIFO waits for a writer for ever)
// is killed by the parent's timeout instead of hanging the test run.
//   node ledger-steps.mjs <target json> runtime-open [hold]
//     HookRuntime.open (profile enabled), prints `opened` with the names in
//     os.tmpdir(); with `hold`, waits for one line on stdin before closing.
//   node ledger-steps.mjs <target json> journal-open
//     HookJournal.open, stats(), close.
//   node ledger-steps.mjs <target json> recover
//     HookRuntime.open, prints `opened`, waits for one line on stdin (the
//     parent plants files meanwhile), then recover(): prints its report.
// Every step ends with `closed`, or `error` with the error's code.
import { readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'

import { HookJournal, HookRuntime } from '../../dist/index.js'
import { emit } from './fixture.mjs'
import { parseTarget } from './target.mjs'

const [targetArg, step, option] = process.argv.slice(2)
const target = parseTarget(targetArg)

/** Resolves at the first line the parent writes on stdin (or at its end). */
function nextLine() {
  return new Promise((resolve) => {
    let seen = ''
    const done = () => {
      process.stdin.off('data', onData)
      // A stdin that was read from keeps the process alive until destroyed.
      process.stdin.destroy()
      resolve(seen)
    }
    const onData = (chunk) => {
      seen += chunk
      if (seen.includes('\n')) done()
    }
    process.stdin.setEncoding('utf8').on('data', onData)
    process.stdin.once('end', done)
  })
}

try {
  if (step === 'runtime-open') {
    const runtime = await HookRuntime.open({ ...target.runtime, profile: { enabled: true } })
    emit({ t: 'opened', tmp: readdirSync(tmpdir()) })
    if (option === 'hold') await nextLine()
    await runtime.close()
  } else if (step === 'journal-open') {
    const journal = await HookJournal.open(target.journal)
    emit({ t: 'opened', stats: await journal.stats() })
    await journal.close()
  } else if (step === 'recover') {
    const runtime = await HookRuntime.open({ ...target.runtime, profile: { enabled: true } })
    emit({ t: 'opened', tmp: readdirSync(tmpdir()) })
    await nextLine()
    const report = await runtime.recover()
    emit({
      t: 'recovered',
      outcomes: report.outcomes.length,
      skipped: report.skipped,
      ledgersSkipped: report.ledgersSkipped ?? null,
    })
    await runtime.close()
  } else {
    throw new Error(`ledger-steps: unknown step ${step}`)
  }
  emit({ t: 'closed' })
} catch (e) {
  emit({ t: 'error', code: e?.code ?? null, message: String(e?.message ?? e) })
  process.exitCode = 1
}
