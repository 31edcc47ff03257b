// The scripted Goal: a LoopX Turn settlement seam with the post-writeback
// phase enabled, the periodic_report capability installed at the composition
// root, two misbehaving hooks of another capability, a simulated crash
// between the primary writeback and the sidecar checkpoint, recovery, and the
// capability's fake scheduler admitting intents from the outbox. Everything
// runs against embedded SQLite files in a fresh folder.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HookRuntime, defineIntentKind, notApplicable } from '../dist/index.js'
import { TurnSettlement } from '../dist/orchestrator/index.js'
import { installPeriodicReport, PeriodicReportScheduler } from '../dist/capabilities/periodic_report/index.js'

const tty = process.stdout.isTTY && !process.env.NO_COLOR
const paint = (code) => (text) => (tty ? `\x1b[${code}m${text}\x1b[0m` : String(text))
const [green, red, yellow, cyan, dim, bold] = [paint(32), paint(31), paint(33), paint(36), paint(2), paint(1)]
const short = (id) => (id ? `${id.slice(0, 12)}…` : '')
let stepNo = 0
const started = Date.now()
function event(actor, what, detail = '') {
  stepNo += 1
  const at = `+${String(Date.now() - started).padStart(5)}ms`
  console.log(`${dim(String(stepNo).padStart(3))} ${dim(at)}  ${cyan(actor.padEnd(13))}${what.padEnd(46)} ${detail}`)
}
const tint = (outcome) =>
  ({ recorded: green, not_applicable: dim, replayed: cyan, failed: red, conflict: red, exhausted: yellow })[outcome] ??
  String

const dir = mkdtempSync(join(tmpdir(), 'loopx-hooks-goal-'))
const paths = {
  hooks: join(dir, 'hooks.sqlite'),
  turns: join(dir, 'turns.sqlite'),
  scheduler: join(dir, 'periodic_report.sqlite'),
}

// Composition root: the phase is enabled explicitly (it is off by default).
const hooks = await HookRuntime.open({ journal: paths.hooks, profile: { enabled: true } })
const periodic = installPeriodicReport(hooks)
const noteKind = defineIntentKind({
  intent_kind: 'flaky_audit.note',
  capability_id: 'flaky_audit',
  operations: ['note'],
  payload_schema: {
    type: 'object',
    properties: { ref: { type: 'string', format: 'opaque_ref' } },
    required: ['ref'],
    additionalProperties: false,
  },
})
hooks.defineIntentKind(noteKind)
const flakyRegistration = (hookId, timeoutMs) => ({
  ...periodic.registration,
  hook_id: hookId,
  capability_id: 'flaky_audit',
  intent_kinds: ['flaky_audit.note'],
  budget: { ...periodic.registration.budget, max_invocations_per_dispatch: 2, timeout_ms: timeoutMs },
})
hooks.register({
  registration: flakyRegistration('flaky_audit.thrower', 200),
  provider: () => {
    throw new Error(
      'connection to https://audit.internal/alice failed with token ghp_notarealtokennotarealtokennotareal00',
    )
  },
})
hooks.register({ registration: flakyRegistration('flaky_audit.sleeper', 50), provider: () => new Promise(() => {}) })
hooks.register({ registration: flakyRegistration('flaky_audit.quiet', 200), provider: () => notApplicable() })

console.log(bold('\nA scripted Goal: four Todo completions, a replan, two faulty hooks, a crash and its recovery\n'))
event('setup', 'hook journal, Turn journal, capability store', dim(dir))
event('setup', `installed ${periodic.hookId}`, dim('and 3 flaky_audit hooks'))

let seam = await TurnSettlement.open({ turnJournalPath: paths.turns, hooks })
const scheduler = PeriodicReportScheduler.open({
  journal: hooks.journal,
  storePath: paths.scheduler,
  completionThreshold: 3,
})

const goal = { goalId: 'goal_weekly_ops', agentId: 'agent_7' }
const writeback = (n, kind = 'todo_completed') => ({
  ...goal,
  kind,
  todoId: `todo_${n}`,
  turnInstanceId: `turn_${n}`,
  effectId: `effect_${n}`,
  stateRevision: `rev_${n}`,
  factRefs: [`fact_${n}`],
})

function report(label, result) {
  const receipt = result.primary.receipt
  event(
    'orchestrator',
    `${label}: primary ${result.primary.ok ? green('committed') : red('rejected')}`,
    dim(`${short(receipt?.receipt_id)} quota eligible: ${result.primary.eligible}`),
  )
  for (const hook of result.dispatch?.hooks ?? []) {
    const code = hook.failureCode ? ` ${hook.failureCode}` : ''
    event('dispatcher', `  ${hook.hookId}`, `${tint(hook.outcome)(hook.outcome + code)} ${dim(short(hook.dispatchId))}`)
  }
}

async function schedule() {
  const pass = await scheduler.runOnce()
  if (pass.listed === 0) return event('scheduler', 'no pending intents')
  for (const d of pass.evaluated) {
    event(
      'scheduler',
      `  admitted ${short(d.intentId)} (${d.transition})`,
      `${d.decision === 'promote' ? green('PROMOTE') : yellow('hold')} ${dim(`${d.reason}, ${d.completions} completions in ${d.window}`)}`,
    )
  }
  for (const r of pass.rejected) event('scheduler', `  rejected ${short(r.intentId)}`, red(r.reasonCode))
}

report('todo_1 completed', await seam.settle(writeback(1)))
await schedule()
report('todo_2 completed', await seam.settle(writeback(2)))
await schedule()

// A crash right after the primary writeback committed, before the sidecar checkpoint.
await seam.close()
seam = await TurnSettlement.open({
  turnJournalPath: paths.turns,
  hooks,
  crash: { at: 'after_writeback', mode: 'throw' },
})
try {
  await seam.settle(writeback(3))
} catch {
  event(
    'orchestrator',
    `todo_3 completed: ${red('process crashed')}`,
    dim('after writeback, before the sidecar checkpoint'),
  )
}
const unfinished = (await hooks.journal.listDispatches({ limit: 1000 })).items.filter(
  (d) => d.state === 'checkpointed' || d.state === 'failed',
)
await seam.close()
seam = await TurnSettlement.open({ turnJournalPath: paths.turns, hooks })
event(
  'orchestrator',
  'restart: recover()',
  dim(`todo_3's receipt is committed with no sidecar row; ${unfinished.length} earlier identities failed`),
)
const recovered = await seam.recover()
for (const r of recovered.redispatched) {
  for (const hook of r.dispatch?.hooks ?? []) {
    event(
      'recovery',
      `  ${hook.hookId}`,
      `${tint(hook.outcome)(hook.outcome + (hook.failureCode ? ` ${hook.failureCode}` : ''))} ${dim(short(hook.dispatchId))}`,
    )
  }
}
const retried = recovered.hooks?.outcomes ?? []
event(
  'recovery',
  `  retried ${retried.length} failed sidecar identities`,
  retried.map((h) => tint(h.outcome)(h.outcome)).join(' '),
)
await schedule()

report('todo_4 completed', await seam.settle(writeback(4)))
report('replan recorded', await seam.settle(writeback(5, 'replan_recorded')))
await schedule()

report('todo_1 replayed', await seam.settle(writeback(1)))
await schedule()

// The journal's tables.
console.log(bold('\nHook journal: dispatches'))
const table = (rows, columns) => {
  const widths = columns.map(([h, f]) => Math.max(h.length, ...rows.map((r) => String(f(r)).length)))
  console.log('  ' + columns.map(([h], i) => bold(h.padEnd(widths[i]))).join('  '))
  for (const r of rows) console.log('  ' + columns.map(([, f], i) => String(f(r)).padEnd(widths[i])).join('  '))
}
const dispatches = (await hooks.journal.listDispatches({ limit: 1000 })).items
table(dispatches, [
  ['seq', (d) => d.seq],
  ['dispatch', (d) => short(d.dispatchId)],
  ['hook', (d) => d.hookId],
  ['receipt', (d) => short(d.receiptId)],
  ['state', (d) => d.state],
  ['attempts', (d) => d.attempts],
])
console.log(bold('\nHook journal: failed attempts'))
const failures = []
for (const d of dispatches)
  for (const f of await hooks.journal.listFailures(d.dispatchId)) failures.push({ ...f, hook: d.hookId })
table(failures, [
  ['dispatch', (f) => short(f.dispatchId)],
  ['hook', (f) => f.hook],
  ['attempt', (f) => f.attempt],
  ['code', (f) => f.code],
  ['rule', (f) => f.rule ?? ''],
])
console.log(bold("\nOutbox: intents and the scheduler's decisions"))
table((await hooks.journal.listIntents({ limit: 1000 })).items, [
  ['seq', (i) => i.seq],
  ['intent', (i) => short(i.intentId)],
  ['kind', (i) => i.intentKind],
  ['segment', (i) => i.intent.payload.segment_ref],
  ['decision', (i) => i.decision ?? 'pending'],
  ['executor', (i) => i.executorId ?? ''],
  ['reason', (i) => i.reasonCode ?? ''],
  ['done', (i) => (i.doneAt ? 'yes' : 'no')],
])
console.log(bold('\nJournal stats'), JSON.stringify(await hooks.journal.stats()))

await seam.close()
await hooks.close()
console.log(
  `\nJournals are in ${dir}:\n  hook journal  ${paths.hooks}\n  Turn journal  ${paths.turns}\n  capability    ${paths.scheduler}\n`,
)
