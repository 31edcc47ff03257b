// The demo: validates the RFC's example documents, shows computed ids and a
// few rejections, then dispatches one committed writeback through a real
// journal in a fresh folder and prints what was recorded.
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { start, stop } from '../scripts/pg-server.mjs'
import {
  HookJournal,
  HookRuntime,
  IntentKinds,
  defineHook,
  defineIntentKind,
  dispatchId,
  intent,
  notApplicable,
  proposed,
  registrationDigest,
  validateDispatchReceipt,
  validateHookInput,
  validateHookResult,
  validateIntentKindDefinition,
  validateRegistration,
} from '../dist/index.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const example = (name) => JSON.parse(readFileSync(join(root, 'examples', `${name}.json`), 'utf8'))
const tty = process.stdout.isTTY && !process.env.NO_COLOR
const paint = (code) => (text) => (tty ? `\x1b[${code}m${text}\x1b[0m` : text)
const [green, red, dim, bold] = [paint(32), paint(31), paint(2), paint(1)]
const line = (label, text) => console.log(`  ${label.padEnd(34)} ${text}`)
const verdict = (v) =>
  v.ok ? green('ok') : red(`rejected: ${v.violations.map((x) => `${x.path || '""'} ${x.rule}`).join(', ')}`)

console.log(bold('\n1. The RFC example documents'))
const kindDoc = example('intent_kind')
const registration = example('registration')
const input = example('hook_input')
const result = example('hook_result')
const kinds = new IntentKinds([kindDoc])
line('intent kind definition', verdict(validateIntentKindDefinition(kindDoc)))
line('registration', verdict(validateRegistration(registration, kinds)))
line('hook input', verdict(validateHookInput(input, registration)))
line('hook result (one intent)', verdict(validateHookResult(result, registration, input.dispatch_id, kinds)))
line('dispatch receipt', verdict(validateDispatchReceipt(example('dispatch_receipt'))))

console.log(bold('\n2. Computed identities (contract-v0 section 3)'))
const digest = registrationDigest(registration)
line('registration_digest', dim(digest))
line(
  'dispatch_id',
  dim(
    dispatchId({
      receiptId: input.source.receipt_id,
      effectId: input.source.effect_id,
      hookId: registration.hook_id,
      capabilityId: registration.capability_id,
      registrationDigest: digest,
      registrationSchemaVersion: registration.schema_version,
      eventKind: input.source.event_kind,
    }),
  ),
)
line('intent_id', dim(result.intents[0].intent_id))

console.log(bold('\n3. Rejections, every violation with its JSON Pointer'))
line(
  'timeout 0, unknown field, Upper hook',
  verdict(
    validateRegistration(
      { ...registration, hook_id: 'Periodic', extra: 1, budget: { ...registration.budget, timeout_ms: 0 } },
      kinds,
    ),
  ),
)
line(
  'a URL where an opaque ref belongs',
  verdict(
    validateHookInput({ ...input, source: { ...input.source, goal_id: 'https://example.com/goal' } }, registration),
  ),
)
line(
  'a credential in a payload',
  verdict(
    validateHookResult(
      {
        ...result,
        intents: [
          {
            ...result.intents[0],
            payload: { ...result.intents[0].payload, segment_ref: 'ghp_0123456789abcdef0123456789abcdef0123' },
          },
        ],
      },
      registration,
      input.dispatch_id,
      kinds,
    ),
  ),
)
line(
  'a function inside the document',
  verdict(validateRegistration({ ...registration, budget: { ...registration.budget, timeout_ms: () => 1 } }, kinds)),
)

console.log(bold('\n4. One dispatch through a real journal'))
const dir = mkdtempSync(join(tmpdir(), 'loopx-hooks-demo-'))
const journalPath = join(dir, 'hooks.sqlite')
const kind = defineIntentKind({ ...kindDoc, operations: ['evaluate_runtime_trigger'] })
const hook = defineHook({
  kinds: [kind],
  registration,
  provider: (hookInput) =>
    hookInput.projection.transition === 'segment_completed'
      ? proposed([
          intent(hookInput, kind, {
            operation: 'evaluate_runtime_trigger',
            policyVersion: 'weekly_v0',
            payload: { segment_ref: 'segment_opaque', source_event_refs: hookInput.projection.fact_refs },
          }),
        ])
      : notApplicable(),
})
const runtime = await HookRuntime.open({ journal: journalPath, profile: { enabled: true } })
runtime.defineIntentKind(kind)
runtime.register(hook)
const request = {
  settlement: {
    goal_id: 'goal_opaque',
    agent_id: 'agent_opaque',
    todo_id: 'todo_opaque',
    turn_instance_id: 'turn_opaque',
    effect_id: 'effect_opaque',
  },
  receipt: {
    receipt_id: 'receipt_opaque',
    effect_id: 'effect_opaque',
    step_kind: 'durable_writeback',
    status: 'committed',
    checkpointed: true,
    state_revision: 'revision_opaque',
    committed_at: '2026-08-26T00:00:00Z',
  },
  event: { event_kind: 'todo_completed', fact_refs: ['fact_opaque'] },
}
for (const attempt of ['first dispatch', 'replay of the same receipt']) {
  const outcome = await runtime.dispatch(request)
  for (const hook of outcome.hooks)
    line(attempt, `${hook.hookId} ${green(hook.outcome)} ${dim(hook.dispatchId.slice(0, 20) + '…')}`)
}
const pending = await runtime.journal.listIntents({ pendingOnly: true })
line('pending intents in the outbox', String(pending.items.length))
for (const item of pending.items) line('  intent', `${item.intentKind} ${dim(item.intentId.slice(0, 20) + '…')}`)
line('journal stats', JSON.stringify(await runtime.journal.stats()))
await runtime.close()
console.log(`\n  The journal is at ${journalPath}`)

console.log(bold('\n5. The same dispatch on PostgreSQL, an executor on a second connection'))
// LOOPX_DEMO_PG_URL names a server of yours; otherwise a throwaway one (scripts/pg-server.mjs).
const own = process.env.LOOPX_DEMO_PG_URL ? null : start()
const connectionString = process.env.LOOPX_DEMO_PG_URL ?? own.url
const target = { postgres: { connectionString, schema: `loopx_demo_${process.pid}` } }
try {
  const onPg = await HookRuntime.open({ journal: target, profile: { enabled: true } })
  onPg.defineIntentKind(kind)
  onPg.register(hook)
  for (const attempt of ['first dispatch', 'replay of the same receipt']) {
    const outcome = await onPg.dispatch(request)
    for (const h of outcome.hooks)
      line(attempt, `${h.hookId} ${green(h.outcome)} ${dim(h.dispatchId.slice(0, 20) + '…')}`)
  }
  // The executor: another journal on the same schema, as another host would open it.
  const executor = await HookJournal.open(target)
  for (const item of await executor.claim({ executorId: 'report.executor', leaseMs: 30_000 })) {
    await executor.decide({
      intentId: item.intentId,
      executorId: 'report.executor',
      decision: 'admit',
      reasonCode: 'policy_ok',
    })
    await executor.markDone(item.intentId, 'report.executor')
    line('claimed, admitted and done', `${item.intentKind} ${dim(item.intentId.slice(0, 20) + '…')}`)
  }
  line('journal stats', JSON.stringify(await executor.stats()))
  line('integrity', (await executor.integrity()).ok ? green('ok') : red('FAILED'))
  await executor.close()
  await onPg.close()
  console.log(
    `\n  The journal is the schema ${target.postgres.schema} ${own ? '(throwaway server, now stopped)' : ''}\n`,
  )
} finally {
  if (own) stop(own.dir)
}
