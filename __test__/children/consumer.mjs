// Outbox consumer of the consumers test: claims intents with a lease through
// `journal.consume`, holds each for <holdMs> (the window a SIGKILL lands in),
// admits an undecided one and marks it done, printing every step; "stop" on
// stdin ends the loop.
//   node consumer.mjs <target json> <executorId> <leaseMs> <holdMs>
import { HookJournal } from '../../dist/index.js'
import { emit } from './fixture.mjs'
import { parseTarget } from './target.mjs'

const [targetArg, executorId, leaseMs, holdMs] = process.argv.slice(2)
const stop = new AbortController()
let seen = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (chunk) => {
  seen += chunk
  if (seen.includes('stop\n')) stop.abort()
})

const journal = await HookJournal.open(parseTarget(targetArg).journal)
emit({ t: 'ready' })
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
for await (const intent of journal.consume({
  executorId,
  leaseMs: Number(leaseMs),
  batch: 3,
  signal: stop.signal,
  pollMs: 50,
})) {
  const i = intent.intentId
  emit({ t: 'claimed', i, decision: intent.decision })
  await pause(Number(holdMs))
  try {
    if (intent.decision === null) {
      const outcome = await journal.decide({ intentId: i, executorId, decision: 'admit', reasonCode: 'consumed' })
      emit({ t: 'decide', i, kind: outcome.outcome })
    }
    emit({ t: 'done', i, outcome: await journal.markDone(i, executorId) })
  } catch (e) {
    emit({ t: 'error', i, code: e?.code ?? String(e) })
  }
}
await journal.close()
emit({ t: 'stopped' })
process.stdin.pause()
