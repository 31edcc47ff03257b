// Runs planted-secret cases against one journal (see planted_everywhere.spec.ts,
// which generates them): each case plants one credential-like value in one
// string member of a request, a registration, a result, a thrown error or a
// rejection, or an outbox call. Then, in `dispatch` mode, one more dispatch
// whose provider SIGKILLs this process, so the journal is left as a crash
// leaves it; in `recover` mode, recover() with the same hooks installed.
//   node planted-everywhere.mjs <target json> <cases json file> dispatch|recover|prune [export file]
// In `prune` mode every open intent is rejected, then every final dispatch is
// pruned, its intents archived and its rows exported to the export file.
import { readFileSync } from 'node:fs'

import { HookRuntime, defineHook, intent, notApplicable, proposed } from '../../dist/index.js'
import { emit, settlesInMicrotasks } from './fixture.mjs'
import { parseTarget } from './target.mjs'

const [targetArg, casesFile, mode, exportFile] = process.argv.slice(2)
const target = parseTarget(targetArg)
const { kind, hooks, cases, kill } = JSON.parse(readFileSync(casesFile, 'utf8'))

/** What the `plant.result` hook does for a receipt: a case's planted result, throw or rejection. */
const byReceipt = new Map(cases.filter((c) => c.receiptId).map((c) => [c.receiptId, c]))

function planted(c) {
  switch (c.thrown) {
    case 'error_message':
      return new Error(c.value)
    case 'error_name': {
      const e = new Error('boom')
      e.name = c.value
      return e
    }
    case 'error_stack': {
      const e = new Error('boom')
      e.stack = c.value
      return e
    }
    case 'error_cause':
      return new Error('boom', { cause: c.value })
    case 'error_property':
      return Object.assign(new Error('boom'), { code: c.value, detail: { token: c.value } })
    case 'string':
      return c.value
    case 'object':
      return { message: c.value, toString: () => c.value }
    default:
      throw new Error(`unknown thrown shape ${c.thrown}`)
  }
}

function provider(hookId) {
  return async (input) => {
    const c = byReceipt.get(input.source.receipt_id)
    if (mode === 'dispatch' && input.source.receipt_id === kill.receiptId && hookId === kill.hookId) {
      emit({ t: 'invoked' })
      process.kill(process.pid, 'SIGKILL')
      return new Promise(() => {})
    }
    if (hookId !== 'plant.result' || !c) {
      return proposed([
        intent(input, kind, {
          operation: 'evaluate',
          policyVersion: 'v1',
          payload: { ref: `ref_${input.source.receipt_id}` },
        }),
      ])
    }
    if (c.group === 'result') return c.result
    if (c.group === 'thrown') throw planted(c)
    if (c.group === 'rejection') return Promise.reject(planted(c))
    return notApplicable()
  }
}

const runtime = await HookRuntime.open({ ...target.runtime, profile: { enabled: true, replay: 'return' } })
runtime.defineIntentKind(kind)
for (const registration of hooks)
  runtime.register(defineHook({ kinds: [kind], registration, provider: provider(registration.hook_id) }))

if (mode === 'prune') {
  for (const i of (await runtime.journal.listIntents({ limit: 1000 })).items) {
    if (i.decision !== null) continue
    await runtime.journal.decide({
      intentId: i.intentId,
      executorId: 'executor.audit',
      decision: 'reject',
      reasonCode: 'no',
    })
  }
  await new Promise((r) => setTimeout(r, 5))
  const report = await runtime.journal.prune({ olderThanMs: 0, archive: true, exportTo: exportFile })
  await runtime.close()
  emit({ t: 'pruned', dispatches: report.dispatches, intents: report.intents })
  process.exit(0)
}

if (mode === 'recover') {
  const report = await runtime.recover()
  await runtime.close()
  emit({ t: 'recovered', outcomes: report.outcomes.map((o) => o.outcome) })
  process.exit(0)
}

const seen = { refused: 0, dispatched: 0, rejected: 0, inline: 0 }
for (const c of cases) {
  switch (c.group) {
    case 'registration':
      try {
        runtime.register(defineHook({ kinds: [kind], registration: c.registration, provider: provider('x') }))
        emit({ t: 'error', message: `registration case ${c.name} was accepted` })
      } catch {
        seen.rejected++
      }
      break
    case 'request':
    case 'result':
    case 'thrown':
    case 'rejection': {
      const pending = runtime.dispatch(c.request)
      const quick = await settlesInMicrotasks(pending)
      const out = await pending
      if (out.admitted && quick) seen.inline++
      if (out.admitted) seen.dispatched++
      else seen.refused++
      break
    }
    case 'outbox': {
      const [first] = (await runtime.journal.listIntents({ pendingOnly: true, limit: 1 })).items
      const args = JSON.parse(JSON.stringify(c.args).replaceAll('$INTENT', first.intentId))
      try {
        if (c.call === 'decide') await runtime.journal.decide(args)
        else if (c.call === 'claim') await runtime.journal.claim(args)
        else await runtime.journal.markDone(args.intentId, args.executorId)
      } catch {
        seen.rejected++
      }
      break
    }
    default:
      throw new Error(`unknown case group ${c.group}`)
  }
}
emit({ t: 'cases', ...seen })
await runtime.dispatch(kill.request)
emit({ t: 'error', message: 'the killing provider did not run' })
