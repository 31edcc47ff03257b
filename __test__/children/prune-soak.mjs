// A process of the prune soak (__test__/prune_soak.spec.ts), killed by the
// parent at a random moment:
//   node prune-soak.mjs <target json> dispatch <first> <calls log>
//     dispatches fresh receipts r<first>, r<first+1>, ... four at a time,
//     and every fourth dispatch replays a random older receipt below
//     <first> (final by now, pruned ones included), appending each provider
//     call's receipt id to <calls log> before it answers and printing each
//     outcome;
//   node prune-soak.mjs <target json> prune
//     an executor and a pruner in one loop: closes the open intents it can
//     claim (rejects half, admits and marks done the rest), then prunes every
//     final dispatch in batches of 4, printing what it pruned.
import { appendFileSync } from 'node:fs'

import { HookJournal, HookRuntime } from '../../dist/index.js'
import { PROFILE, emit, install, receiptId, request } from './fixture.mjs'
import { parseTarget } from './target.mjs'

const [targetArg, role, ...rest] = process.argv.slice(2)
const target = parseTarget(targetArg)

if (role === 'dispatch') {
  const [first, callsLog] = [Number(rest[0]), rest[1]]
  const runtime = await HookRuntime.open({ ...target.runtime, profile: PROFILE })
  install(runtime, (rid) => appendFileSync(callsLog, `${rid}\n`))
  emit({ t: 'ready' })
  let fresh = 0
  let k = 0
  const one = async () => {
    for (;;) {
      const old = k++ % 4 === 3 && first > 0
      const rid = receiptId(old ? Math.floor(Math.random() * first) : first + fresh++)
      try {
        const out = await runtime.dispatch(request(rid))
        const h = out.hooks[0]
        emit({
          t: 'resolved',
          r: rid,
          o: h?.outcome,
          d: h?.dispatchId,
          receipt: h?.receipt,
          pruned: typeof h?.prunedAt === 'number',
        })
      } catch (e) {
        emit({ t: 'error', r: rid, code: e?.code ?? String(e) })
      }
    }
  }
  await Promise.all([one(), one(), one(), one()])
} else if (role === 'prune') {
  const journal = await HookJournal.open(target.journal)
  const executorId = 'soak.executor'
  emit({ t: 'ready' })
  let n = 0
  for (;;) {
    try {
      for (const i of await journal.claim({ executorId, leaseMs: 5_000, batch: 32 })) {
        if (n++ % 2 === 0) {
          await journal.decide({ intentId: i.intentId, executorId, decision: 'reject', reasonCode: 'soak' })
        } else {
          await journal.decide({ intentId: i.intentId, executorId, decision: 'admit', reasonCode: 'soak' })
          await journal.markDone(i.intentId, executorId)
        }
      }
      const report = await journal.prune({ olderThanMs: 0, batchSize: 4 })
      emit({ t: 'pruned', n: report.dispatches })
    } catch (e) {
      emit({ t: 'error', code: e?.code ?? String(e) })
    }
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
} else {
  throw new Error(`prune-soak: unknown role ${role}`)
}
