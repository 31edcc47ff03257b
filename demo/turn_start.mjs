// The turn-start scene: a provider-neutral turn_start hook with a fake
// two-route chat provider over the owner-private inbox, across four Turns.
// Shows what is public (receipts, required reads, the lane) and what stays
// private (message text, routes, identities, cursors: only in the inbox file).
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { InboxStore, TurnStartKernel, validateTurnStartReceipt, validateTurnStartRegistration } from '../dist/index.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const example = (name) => JSON.parse(readFileSync(join(root, 'examples', `${name}.json`), 'utf8'))
const tty = process.stdout.isTTY && !process.env.NO_COLOR
const paint = (code) => (text) => (tty ? `\x1b[${code}m${text}\x1b[0m` : String(text))
const [green, red, yellow, cyan, dim, bold] = [paint(32), paint(31), paint(33), paint(36), paint(2), paint(1)]
const line = (label, text) => console.log(`  ${label.padEnd(38)} ${text}`)
const verdict = (v) =>
  v.ok ? green('ok') : red(`rejected: ${v.violations.map((x) => `${x.path || '""'} ${x.rule}`).join(', ')}`)

console.log(bold('\n1. Turn-start contracts (contract-v0 section 6)'))
const registration = example('turn_start_registration')
const receipt = example('turn_start_receipt')
line('registration', verdict(validateTurnStartRegistration(registration)))
line('receipt', verdict(validateTurnStartReceipt(receipt)))
line(
  'required read with a path',
  verdict(validateTurnStartRegistration({ ...registration, required_read: { command: 'cat /home/me/inbox' } })),
)
line(
  'new observations, no read obligation',
  verdict(validateTurnStartReceipt({ ...receipt, agent_read_required: false })),
)
line('empty hiding new observations', verdict(validateTurnStartReceipt({ ...receipt, status: 'empty' })))

// A fake chat service with two routes (in the demo only; never in the package).
const service = {
  team: { messages: [], down: false, reactions: new Set() },
  ops: { messages: [], down: false, reactions: new Set() },
}
const post = (route, id, text, attention = 'ordinary', sender = { kind: 'human', id: `U_${id}` }) =>
  service[route].messages.push({ id, text, attention, sender })
const SELF = 'U_LOOPX_AGENT'

const dir = mkdtempSync(join(tmpdir(), 'loopx-hooks-turn-start-'))
const inbox = await InboxStore.open(join(dir, 'inbox.sqlite'), { selfIdentity: SELF })

/**
 * The provider: read each route after its cursor, capture, first-read, react,
 * all through its session (the inbox as core grants it to this call).
 */
async function provider(input, { session }) {
  let ok = 0
  const failed = []
  for (const routeId of Object.keys(service).sort()) {
    const route = service[routeId]
    const claim = await session.claimCursor(routeId, 'history', 30_000)
    if (claim.outcome !== 'claimed') continue
    if (route.down) {
      await session.releaseCursor(routeId, 'history', claim.token)
      failed.push('provider_unavailable')
      continue
    }
    const at = claim.value ? route.messages.findIndex((m) => m.id === claim.value) + 1 : 0
    const page = route.messages.slice(at)
    const read = []
    for (const m of page) {
      const captured = await session.capture({
        routeId,
        providerMessageId: m.id,
        source: 'turn_start',
        sender: { kind: m.sender.kind, verifiedIdentity: m.sender.id },
        attention: m.attention,
        payload: { text: m.text },
      })
      if (captured !== 'self_filtered') read.push({ routeId, providerMessageId: m.id })
    }
    if (page.length) await session.advanceCursor(routeId, 'history', claim.token, page.at(-1).id, read)
    else await session.releaseCursor(routeId, 'history', claim.token)
    ok++
  }
  const reads = await session.recordFirstReads(input.turn.turn_instance_id)
  let added = 0
  for (const m of await session.reactionCandidates(
    input.hook_id,
    input.budget.max_attempts_per_dispatch - ok - failed.length,
  )) {
    if ((await session.beginReaction(m)) !== 'proceed') continue
    service[m.routeId].reactions.add(m.providerMessageId) // the service's "eyes" reaction
    await session.finishReaction(m, 'added')
    added++
  }
  return {
    schema_version: 'loopx_turn_start_hook_receipt_v0',
    hook_id: input.hook_id,
    status: failed.length ? 'partial' : reads.observationsNew ? 'ok' : 'empty',
    error_code: failed[0] ?? null,
    agent_read_required: reads.pending > 0,
    observations_new: reads.observationsNew,
    pending: reads.pending,
    direct_questions: reads.directQuestions,
    verified_replies: reads.verifiedReplies,
    routes_ok: ok,
    routes_failed: failed.length,
    reactions_added: added,
    external_writes_performed: added,
  }
}

const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
kernel.register({ registration, provider })

const tintStatus = (s) => ({ ok: green, empty: dim, partial: yellow })[s] ?? red
const tintLane = (d) =>
  ({ keep_selected: dim, notify_keep_selected: cyan, preempt_material_review: yellow })[d] ?? String
let turnNo = 0
async function turn(title, quota = 2) {
  turnNo += 1
  console.log(bold(`\n${turnNo + 1}. Turn ${turnNo}: ${title}`))
  const request = {
    turn: { goal_id: 'goal_demo', agent_id: 'agent_demo', turn_instance_id: `turn_${turnNo}` },
    quota: { max_units: quota },
  }
  const outcome = await kernel.dispatchTurnStart(request)
  if (!outcome.admitted) {
    line('request', red(`refused before any read: ${outcome.violations.map((v) => `${v.path} ${v.rule}`).join(', ')}`))
    return outcome
  }
  for (const { hookId, receipt: r } of outcome.hooks) {
    line(
      `receipt ${hookId}`,
      `${tintStatus(r.status)(r.status)}${r.error_code ? ` (${r.error_code})` : ''}  new ${r.observations_new}, pending ${r.pending}, questions ${r.direct_questions}, routes ${r.routes_ok} ok / ${r.routes_failed} failed, reactions ${r.reactions_added}, external writes ${r.external_writes_performed}, read required ${r.agent_read_required}`,
    )
  }
  for (const r of outcome.requiredReads) line(`required read (${r.channel})`, `${r.command}  ${dim(r.ordering)}`)
  line('lane', `${tintLane(outcome.lane.decision)(outcome.lane.decision)}  ${dim(outcome.lane.reason)}`)
  return outcome
}

await turn('an invalid quota request', 0)
post('team', 'm1', 'Can we ship the migration today?', 'direct_question')
post('ops', 'm2', 'fyi: nightly build is green')
post('ops', 'm3', 'deploying now', 'ordinary', { kind: 'bot', id: SELF })
await turn('fresh messages: a direct question preempts on its first turn')
console.log(dim('  private drain (inbox only, never in a receipt):'))
for (const m of await inbox.pending())
  console.log(dim(`    ${m.routeId}/${m.providerMessageId} [${m.attention}] ${m.payload.text}`))

await turn('nothing new, the material is still pending: material review preempts')
const m1 = { routeId: 'team', providerMessageId: 'm1' }
const m2 = { routeId: 'ops', providerMessageId: 'm2' }
line('agent: m1 record_context', await inbox.dispose(m1, 'record_context'))
line('agent: ACK m1 before its effect', red(await inbox.ack(m1)))
line(
  'agent: bind effect receipt, ACK m1',
  `${await inbox.dispose(m1, 'record_context', 'effect_answer_1')}, ${green(await inbox.ack(m1))}`,
)
line(
  'agent: m2 continue_current_work, ACK',
  `${await inbox.dispose(m2, 'continue_current_work')}, ${green(await inbox.ack(m2))}`,
)

service.ops.down = true
post('team', 'm4', 'thanks, looks good')
await turn('one route down: partial, the accepted message is still read')
console.log(
  dim(
    `\n  public outcomes hold counts and codes only; message text, routes, identities and cursors live in ${join(dir, 'inbox.sqlite')}`,
  ),
)
await inbox.close()
