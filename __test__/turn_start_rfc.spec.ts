// The turn-start RFC, bullet by bullet: one test per bullet of "Failure and
// replay" (the long reaction bullet one per sentence) and one per step of
// "Ordering", named after it, driving a fake multi-route provider
// (./turn_start_fake.ts, not part of the package) through the kernel and the
// owner-private inbox; then a secrecy scan of the public outcomes, receipts
// and the public journal.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  InboxStore,
  TurnStartKernel,
  defineHook,
  notApplicable,
  type IntentKindDefinition,
  type PostWritebackHookRegistration,
  type TurnStartContext,
  type TurnStartHookInput,
  type TurnStartHookRegistration,
  type TurnStartOutcome,
  type TurnStartReceipt,
  type TurnStartRequest,
} from '../lib/index.js'
import { inSession } from './support/inbox_session.js'
import { FakeRoute, fakeProvider, human, type FakeProviderOptions } from './turn_start_fake.js'

const dir = mkdtempSync(join(tmpdir(), 'loopx-turn-start-rfc-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const file = (name: string) => join(dir, `${name}-${++files}.sqlite`)
const example = (name: string) => JSON.parse(readFileSync(join(__dirname, '..', 'examples', `${name}.json`), 'utf8'))

const SELF = 'U_AGENT'

function registration(
  capability = 'team_inbox',
  options: { reactions?: boolean; attempts?: number; routes?: number; command?: string } = {},
): TurnStartHookRegistration {
  return {
    schema_version: 'loopx_turn_start_capability_hook_registration_v0',
    hook_id: `${capability}.turn_start_read`,
    capability_id: capability,
    phase: 'turn_start',
    required_read: { command: options.command ?? `loopx inbox read --hook=${capability}` },
    write_scopes:
      options.reactions === false
        ? ['owner_private_inbox', 'owner_private_cursor']
        : ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction'],
    budget: { timeout_ms: 3000, max_attempts_per_dispatch: options.attempts ?? 8, max_routes: options.routes ?? 4 },
    failure_policy: 'isolate',
  }
}

interface Scene {
  inbox: InboxStore
  routes: Record<string, FakeRoute>
  kernel: TurnStartKernel
  log: ReturnType<typeof fakeProvider>['log']
  dispatch: (quota?: number) => Promise<TurnStartOutcome>
  receipt: (o: TurnStartOutcome) => TurnStartReceipt
}

type FakeProviderFn = (i: TurnStartHookInput, c: TurnStartContext) => Promise<TurnStartReceipt>

let turns = 0
const request = (maxUnits = 2): TurnStartRequest => ({
  turn: { goal_id: 'goal_1', agent_id: 'agent_1', turn_instance_id: `turn_${++turns}` },
  quota: { max_units: maxUnits },
})

async function scene(
  routeNames: string[] = ['alpha', 'beta'],
  options: {
    reactions?: boolean
    attempts?: number
    provider?: Partial<FakeProviderOptions>
    wrap?: (p: FakeProviderFn) => FakeProviderFn
  } = {},
): Promise<Scene> {
  const inbox = await InboxStore.open(file('inbox'), { selfIdentity: SELF })
  const routes = Object.fromEntries(routeNames.map((r) => [r, new FakeRoute()]))
  const { provider, log } = fakeProvider({ inbox, routes, reactions: options.reactions ?? true, ...options.provider })
  const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
  kernel.register({
    registration: registration('team_inbox', options),
    provider: options.wrap ? options.wrap(provider) : provider,
  })
  return {
    inbox,
    routes,
    kernel,
    log,
    dispatch: (quota = 2) => kernel.dispatchTurnStart(request(quota)),
    receipt: (o) => o.hooks[0]!.receipt,
  }
}

const ref = (routeId: string, providerMessageId: string) => ({ routeId, providerMessageId })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('RFC: CLI request validation runs before hook dispatch', () => {
  it('an invalid quota request performs no provider read or owner-private write', async () => {
    const s = await scene()
    s.routes.alpha!.post(human('a1'))
    const refused = await s.dispatch(0)
    expect([refused.admitted, refused.violations]).toEqual([
      false,
      [{ path: '/quota/max_units', rule: 'out_of_range' }],
    ])
    expect([
      s.routes.alpha!.historyCalls,
      await s.inbox.pendingCount(),
      await s.inbox.cursor('alpha', 'history'),
    ]).toEqual([0, 0, null])
    // A valid request still dispatches the hook.
    expect(s.receipt(await s.dispatch()).observations_new).toBe(1)
  })
})

describe('RFC: Failure and replay', () => {
  it('empty means a valid provider success envelope was read and no pending message received its first Agent-owned turn-start read in this dispatch', async () => {
    const s = await scene()
    expect(s.receipt(await s.dispatch())).toMatchObject({
      status: 'empty',
      observations_new: 0,
      pending: 0,
      routes_ok: 2,
      agent_read_required: false,
    })
    s.routes.beta!.post(human('b1'))
    expect(s.receipt(await s.dispatch())).toMatchObject({ status: 'ok', observations_new: 1, pending: 1 })
    // Still pending, already read: empty, with the pending material counted.
    expect(s.receipt(await s.dispatch())).toMatchObject({
      status: 'empty',
      observations_new: 0,
      pending: 1,
      agent_read_required: true,
    })
  })

  it('provider_contract_error means the success envelope did not match its declared schema; it must never degrade to empty', async () => {
    const s = await scene(['alpha'])
    s.routes.alpha!.failure = 'bad_envelope'
    const r = s.receipt(await s.dispatch())
    expect([r.status, r.error_code, r.routes_failed]).toEqual(['provider_contract_error', 'provider_contract_error', 1])
    // One bad route of two: partial, never empty or ok.
    const two = await scene()
    two.routes.alpha!.failure = 'bad_envelope'
    expect(two.receipt(await two.dispatch())).toMatchObject({
      status: 'partial',
      error_code: 'provider_contract_error',
      routes_ok: 1,
      routes_failed: 1,
    })
    // A provider that reports new observations without the read obligation
    // is turned into provider_contract_error by core, not into empty.
    const k = new TurnStartKernel({ profile: { enabled: true } })
    k.register({
      registration: registration('liar'),
      provider: (i) => ({
        ...r,
        hook_id: i.hook_id,
        status: 'ok',
        error_code: null,
        routes_ok: 1,
        routes_failed: 0,
        observations_new: 1,
        pending: 1,
        agent_read_required: false,
      }),
    })
    const lie = (await k.dispatchTurnStart(request())).hooks[0]!
    expect([lie.receipt.status, lie.kernelFailure]).toEqual([
      'provider_contract_error',
      { code: 'result_contract_rejected', rule: 'not_allowed_value' },
    ])
  })

  it('provider permission and availability failures remain typed and isolated', async () => {
    const inbox = await InboxStore.open(file('capabilities'))
    const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
    const routesOf: Record<string, FakeRoute> = {}
    for (const [capability, failure] of [
      ['chat', 'permission'],
      ['mail', 'unavailable'],
      ['tickets', null],
    ] as const) {
      const route = (routesOf[capability] = new FakeRoute().post(human(`${capability}1`)))
      route.failure = failure
      kernel.register({
        registration: registration(capability),
        provider: fakeProvider({ inbox, routes: { main: route }, reactions: true }).provider,
      })
    }
    const outcome = await kernel.dispatchTurnStart(request())
    expect(outcome.hooks.map((h) => [h.hookId, h.receipt.status, h.receipt.error_code, h.kernelFailure])).toEqual([
      ['chat.turn_start_read', 'provider_permission_denied', 'provider_permission_denied', null],
      ['mail.turn_start_read', 'provider_unavailable', 'provider_unavailable', null],
      ['tickets.turn_start_read', 'ok', null, null],
    ])
    // Isolated, yet an outage does not drop the read obligation: core counts a
    // failed hook's pending material in the kernel's inbox itself, and its read
    // is still projected before work (fail closed).
    expect(outcome.hooks.map((h) => h.pendingStanding)).toEqual(['inbox_store', 'inbox_store', 'reported'])
    expect(outcome.requiredReads.map((r) => r.command)).toEqual([
      'loopx inbox read --hook=chat',
      'loopx inbox read --hook=chat',
      'loopx inbox read --hook=mail',
      'loopx inbox read --hook=mail',
      'loopx inbox read --hook=tickets',
      'loopx inbox read --hook=tickets',
    ])
  })

  it('duplicate hook identities run once; duplicate messages collapse by provider message identity, and separate private read/effect receipts prevent duplicate Agent-read observations and duplicate provider reactions', async () => {
    const s = await scene(['alpha'])
    expect(
      s.kernel.register({
        registration: registration(),
        provider: () => {
          throw new Error('second provider never runs')
        },
      }),
    ).toEqual({ alreadyInstalled: true })
    const m = human('a1')
    // The collector captured it already, and the service repeats it in a later page.
    await s.inbox.collector().capture({
      routeId: 'alpha',
      providerMessageId: 'a1',
      source: 'collector',
      sender: { kind: 'human', verifiedIdentity: 'U_a1' },
      attention: 'ordinary',
      payload: {},
    })
    s.routes.alpha!.post(m)
    const first = await s.dispatch()
    expect([s.log.dispatches, s.receipt(first).observations_new, s.receipt(first).reactions_added]).toEqual([1, 1, 1])
    expect(
      await inSession(s.inbox, (session) => session.advanceCursor('alpha', 'history', 'forged', 'rewind', [])),
    ).toBe('lease_lost')
    s.routes.alpha!.post(m) // the service repeats the same identity
    const second = await s.dispatch()
    expect([s.log.dispatches, s.receipt(second).observations_new, s.receipt(second).reactions_added]).toEqual([2, 0, 0])
    expect([await s.inbox.pendingCount(), s.routes.alpha!.reactions.get('a1')]).toEqual([1, 1])
  })

  it('collector-only capture performs no provider write; the acknowledgement is admitted only after the turn-start hook reads and confirms a pending message', async () => {
    const s = await scene(['alpha'])
    await s.inbox.collector().capture({
      routeId: 'alpha',
      providerMessageId: 'c1',
      source: 'collector',
      sender: { kind: 'human', verifiedIdentity: 'U_c1' },
      attention: 'ordinary',
      payload: {},
    })
    // Even a granted session finds no reaction due on a message no turn-start dispatch read.
    const due = await inSession(s.inbox, async (session) => [
      await session.reactionCandidates('collector_realtime', 8),
      await session.beginReaction(ref('alpha', 'c1')),
    ])
    expect(due).toEqual([[], 'not_read'])
    expect(s.routes.alpha!.reactCalls).toBe(0)
    const r = s.receipt(await s.dispatch())
    expect([r.observations_new, r.reactions_added, s.routes.alpha!.reactions.get('c1')]).toEqual([1, 1, 1])
  })

  describe('reaction disablement never cancels the first-read obligation ... every pending read remains eligible across routes and messages', () => {
    it('reaction disablement never cancels the first-read obligation', async () => {
      const s = await scene(['alpha'], { reactions: false })
      s.routes.alpha!.post(human('a1'), human('a2'))
      const r = s.receipt(await s.dispatch())
      expect([
        r.observations_new,
        r.agent_read_required,
        r.reactions_added,
        r.external_writes_performed,
        s.routes.alpha!.reactCalls,
      ]).toEqual([2, true, 0, 0, 0])
    })

    it('failed effects retry from the owner-private pending-read set rather than relying on the bounded provider overlap window', async () => {
      const s = await scene(['alpha'])
      s.routes.alpha!.post(human('a1'))
      s.routes.alpha!.reactFailure = 'fail'
      expect(s.receipt(await s.dispatch())).toMatchObject({
        status: 'partial',
        error_code: 'reaction_failed',
        reactions_added: 0,
      })
      s.routes.alpha!.reactFailure = null
      const retry = s.receipt(await s.dispatch())
      // The service's next page is empty (the window has passed); the retry comes from the inbox.
      expect([
        retry.status,
        retry.observations_new,
        retry.reactions_added,
        s.routes.alpha!.reactions.get('a1'),
      ]).toEqual(['empty', 0, 1, 1])
    })

    it('uncertain effects fail closed before create', async () => {
      const s = await scene(['alpha'])
      s.routes.alpha!.post(human('a1'))
      s.routes.alpha!.reactFailure = 'uncertain'
      expect(s.receipt(await s.dispatch())).toMatchObject({ status: 'partial', error_code: 'reaction_failed' })
      s.routes.alpha!.reactFailure = null
      await s.dispatch()
      // Read back, found, resolved: no second create.
      expect([s.routes.alpha!.reactCalls, s.routes.alpha!.reactions.get('a1')]).toEqual([1, 1])
      expect(await inSession(s.inbox, (session) => session.beginReaction(ref('alpha', 'a1')))).toBe('already_added')
    })

    it('replay is bounded by one aggregate per-dispatch attempt budget', async () => {
      const s = await scene(['alpha'], { attempts: 4 })
      s.routes.alpha!.post(...Array.from({ length: 10 }, (_, i) => human(`a${i}`)))
      s.routes.alpha!.reactFailure = 'fail'
      for (let turn = 1; turn <= 3; turn++) {
        const before = s.routes.alpha!.reactCalls + s.routes.alpha!.historyCalls
        await s.dispatch()
        expect(s.routes.alpha!.reactCalls + s.routes.alpha!.historyCalls - before).toBeLessThanOrEqual(4)
      }
    })

    it('a private collector-scoped cursor rotates route priority across dispatches while each route keeps a private round-robin message cursor, so a large or failing acknowledgement backlog cannot block turn admission and every pending read remains eligible', async () => {
      const s = await scene(['alpha', 'beta'], { attempts: 4 })
      s.routes.alpha!.post(...Array.from({ length: 6 }, (_, i) => human(`a${i}`)))
      s.routes.alpha!.reactFailure = 'fail'
      s.routes.beta!.post(human('b0'), human('b1'))
      const attempted = new Set<string>()
      const react = s.routes.alpha!.react.bind(s.routes.alpha!)
      s.routes.alpha!.react = (id: string) => (attempted.add(id), react(id))
      for (let turn = 1; turn <= 6; turn++) {
        const outcome = await s.dispatch()
        expect(outcome.admitted && outcome.hooks.length === 1).toBe(true) // admission never blocked
      }
      expect([...s.routes.beta!.reactions.keys()].sort()).toEqual(['b0', 'b1'])
      expect([...attempted].sort()).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5'])
    })
  })

  it('attention classification affects scheduling and reply policy, never whether a successfully read pending message receives the acknowledgement', async () => {
    const s = await scene(['alpha'])
    const classes = ['ordinary', 'mention', 'direct_question', 'verified_reply'] as const
    s.routes.alpha!.post(...classes.map((attention) => human(attention, 'x', { attention })))
    const outcome = await s.dispatch()
    expect(outcome.lane).toEqual({ decision: 'preempt_material_review', reason: 'direct_question' })
    expect([...s.routes.alpha!.reactions.keys()].sort()).toEqual([...classes].sort())
  })

  it('a provider-owned self-message filter runs before inbox ingestion only from a typed sender and an exact verified identity; unresolved identity fails open to capture, with no display-name or body heuristics', async () => {
    const s = await scene(['alpha'])
    s.routes.alpha!.post(
      { id: 'own', sender: { kind: 'bot', id: SELF }, text: 'posted by the agent itself' },
      { id: 'untyped', sender: { kind: 'unknown', id: SELF }, text: 'identity unresolved' },
      { id: 'named', sender: { kind: 'human', id: null, displayName: 'LoopX Agent' }, text: 'display name only' },
      { id: 'claims', sender: { kind: 'human', id: 'U_bob' }, text: `I am ${SELF}` },
      { id: 'case', sender: { kind: 'human', id: SELF.toLowerCase() }, text: 'not exact' },
    )
    expect(s.receipt(await s.dispatch()).observations_new).toBe(4)
    expect((await s.inbox.pending()).map((m) => m.providerMessageId)).toEqual(['untyped', 'named', 'claims', 'case'])
  })

  it("provider-local cursors are single-flight and advance only after inbox and cursor readback; history and acknowledgement replay use independent positions, so an old topic's new reply is admitted while older acknowledgement debt remains", async () => {
    let crash = true
    const s = await scene(['alpha'], {
      provider: {
        leaseMs: 50,
        afterCapture: (m) => {
          if (crash && m.providerMessageId === 'a2') throw new Error('crash mid-read')
        },
      },
    })
    s.routes.alpha!.post(human('a1'), human('a2'))
    const crashed = (await s.dispatch()).hooks[0]!
    expect([crashed.receipt.status, crashed.kernelFailure?.code]).toEqual([
      'provider_contract_error',
      'producer_failed',
    ])
    expect(await s.inbox.cursor('alpha', 'history')).toBe(null) // not advanced: no readback happened
    // Single flight: while the crashed claim's lease holds, the route is not read again.
    const busy = s.receipt(await s.dispatch())
    expect([busy.status, s.log.cursorBusy]).toEqual(['provider_unavailable', 1])
    await sleep(60)
    crash = false
    const resumed = s.receipt(await s.dispatch())
    expect([resumed.status, resumed.observations_new, await s.inbox.cursor('alpha', 'history')]).toEqual([
      'ok',
      2,
      'a2',
    ])
    // Acknowledgement debt on the old topic; its new reply comes in by its new identity.
    s.routes.alpha!.reactFailure = 'fail'
    s.routes.alpha!.post(human('t1', 'old topic', { thread: 't1' }))
    await s.dispatch()
    s.routes.alpha!.post(human('t1r', 'a new reply', { thread: 't1' }))
    const reply = s.receipt(await s.dispatch())
    expect([reply.observations_new, await s.inbox.cursor('alpha', 'history')]).toEqual([1, 't1r'])
    // The debt is still owed.
    expect(await inSession(s.inbox, (session) => session.beginReaction(ref('alpha', 't1')))).toBe('proceed')
  })

  it('partial multi-route success still requires Agent reading for accepted observations while retaining a compact failure code for the incomplete routes', async () => {
    const s = await scene(['alpha', 'beta'])
    s.routes.alpha!.post(human('a1'))
    s.routes.beta!.failure = 'unavailable'
    const outcome = await s.dispatch()
    expect(s.receipt(outcome)).toMatchObject({
      status: 'partial',
      error_code: 'provider_unavailable',
      observations_new: 1,
      agent_read_required: true,
      routes_ok: 1,
      routes_failed: 1,
    })
    expect(outcome.requiredReads.map((r) => r.channel)).toEqual(['agent', 'cli'])
  })
})

/** A minimal CLI turn around the kernel, recording the order of its steps. */
async function turn(
  s: Scene,
  events: string[],
  agent?: (drained: Awaited<ReturnType<InboxStore['pending']>>) => Promise<void>,
) {
  const outcome = await s.kernel.dispatchTurnStart(request())
  events.push(`dispatched:${outcome.admitted}`)
  const status = await s.inbox.pendingCount()
  events.push(`status:${status}`)
  const lane = outcome.lane.decision === 'preempt_material_review' ? 'material_review' : 'ordinary_work'
  events.push(`quota:${lane}`)
  for (const read of outcome.requiredReads) events.push(`read:${read.channel}:${read.ordering}`)
  const drained = outcome.requiredReads.length > 0 ? await s.inbox.pending() : []
  if (outcome.lane.decision === 'notify_keep_selected') events.push('notify')
  events.push(`work:${lane}`)
  await agent?.(drained)
  return { outcome, lane, drained }
}

describe('RFC: Ordering', () => {
  const wrapWith =
    (events: string[]) =>
    (p: FakeProviderFn): FakeProviderFn =>
    async (i, c) => {
      events.push('hook')
      return p(i, c)
    }

  it('provider-neutral turn_start dispatch', async () => {
    const events: string[] = []
    const inbox = await InboxStore.open(file('capabilities'))
    const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
    for (const capability of ['mail', 'chat']) {
      const { provider } = fakeProvider({
        inbox,
        routes: { main: new FakeRoute().post(human(`${capability}1`)) },
        reactions: false,
      })
      kernel.register({
        registration: registration(capability, { reactions: false }),
        provider: async (i, c) => (events.push(i.hook_id), provider(i, c)),
      })
    }
    await kernel.dispatchTurnStart(request())
    events.push('status', 'quota')
    expect(events).toEqual(['chat.turn_start_read', 'mail.turn_start_read', 'status', 'quota'])
  })

  it('provider read + owner-private inbox commit/readback', async () => {
    const s = await scene(['alpha'])
    s.routes.alpha!.post(human('a1'), human('a2'))
    await s.dispatch()
    expect([
      await s.inbox.contains(ref('alpha', 'a1')),
      await s.inbox.contains(ref('alpha', 'a2')),
      await s.inbox.cursor('alpha', 'history'),
    ]).toEqual([true, true, 'a2'])
  })

  it('first Agent-read receipt independent of optional provider reaction', async () => {
    const s = await scene(['alpha'])
    s.routes.alpha!.post(human('a1'))
    s.routes.alpha!.reactFailure = 'fail'
    const r = s.receipt(await s.dispatch())
    expect([r.observations_new, r.agent_read_required, r.reactions_added]).toEqual([1, true, 0])
    expect((await s.inbox.pending()).map((m) => m.read)).toEqual([true])
  })

  it('retry optional reaction from durable pending reads', async () => {
    const s = await scene(['alpha'])
    s.routes.alpha!.post(human('a1'))
    s.routes.alpha!.reactFailure = 'fail'
    await s.dispatch()
    s.routes.alpha!.reactFailure = null
    expect(s.receipt(await s.dispatch()).reactions_added).toBe(1)
  })

  it('fresh status + quota projection', async () => {
    const events: string[] = []
    const s = await scene(['alpha'], { wrap: wrapWith(events) })
    s.routes.alpha!.post(human('q', 'can you look at this?', { attention: 'direct_question' }))
    const { lane } = await turn(s, events)
    // The hook ran before status, so status and quota see the fresh question.
    expect(events.slice(0, 4)).toEqual(['hook', 'dispatched:true', 'status:1', 'quota:material_review'])
    expect(lane).toBe('material_review')
  })

  it('generic kernel projects the registered required read before selected work', async () => {
    const events: string[] = []
    const s = await scene(['alpha'])
    s.routes.alpha!.post(human('a1'))
    const { outcome } = await turn(s, events)
    expect(outcome.requiredReads).toEqual([
      { channel: 'agent', command: 'loopx inbox read --hook=team_inbox', ordering: 'before_work' },
      { channel: 'cli', command: 'loopx inbox read --hook=team_inbox', ordering: 'before_work' },
    ])
    expect(events.indexOf('read:agent:before_work')).toBeLessThan(events.indexOf('work:ordinary_work'))
    expect(events.indexOf('read:cli:before_work')).toBeLessThan(events.indexOf('work:ordinary_work'))
  })

  it('private drain into the active Agent turn (ordinary selection may remain)', async () => {
    const events: string[] = []
    const s = await scene(['alpha'])
    s.routes.alpha!.post(human('a1', 'fyi: the build is green'))
    const { outcome, lane, drained } = await turn(s, events)
    expect([outcome.lane.decision, lane]).toEqual(['notify_keep_selected', 'ordinary_work'])
    expect(events).toContain('notify')
    expect(drained.map((m) => (m.payload as any).text)).toEqual(['fyi: the build is green'])
    expect(JSON.stringify(outcome)).not.toContain('build is green')
  })

  it('semantic disposition + durable settlement', async () => {
    const s = await scene(['alpha'])
    s.routes.alpha!.post(human('a1', 'please move the release to Friday'))
    await turn(s, [], async ([m]) => {
      const message = ref(m!.routeId, m!.providerMessageId)
      expect(await s.inbox.dispose(message, 'replan_goal')).toBe('recorded')
      expect(await s.inbox.ack(message)).toBe('effect_not_bound') // no ACK before the durable effect
      expect(await s.inbox.dispose(message, 'replan_goal', 'effect_replan_1')).toBe('recorded')
    })
    expect((await s.inbox.pending())[0]).toMatchObject({
      disposition: 'replan_goal',
      effectReceiptId: 'effect_replan_1',
    })
  })

  it('ACK and resume the prior lane when appropriate', async () => {
    const s = await scene(['alpha'])
    s.routes.alpha!.post(human('q', 'is the migration safe?', { attention: 'direct_question' }))
    const first = await turn(s, [])
    expect(first.lane).toBe('material_review')
    // Not settled: the material preempts again on the next turn.
    expect((await turn(s, [])).outcome.lane.reason).toBe('material_still_pending')
    const message = ref('alpha', 'q')
    await s.inbox.dispose(message, 'record_context', 'effect_answer_1')
    expect(await s.inbox.ack(message)).toBe('acked')
    const resumed = await turn(s, [])
    expect([resumed.outcome.lane, resumed.lane]).toEqual([
      { decision: 'keep_selected', reason: 'nothing_to_read' },
      'ordinary_work',
    ])
  })
})

describe('secrecy', () => {
  it('public receipts, outcomes and the public journal hold no message content, route, identity, profile or cursor value', async () => {
    const secrets = {
      text: 'wire 4000 EUR to account 1234',
      route: 'room_finance_private',
      messageId: 'msg_7f3a9c',
      sender: 'U_carol_verified',
      displayName: 'Carol Finance',
      profile: 'U_AGENT_profile_7',
    }
    const inboxFile = file('inbox-secret')
    const inbox = await InboxStore.open(inboxFile, { selfIdentity: secrets.profile })
    const route = new FakeRoute().post({
      id: secrets.messageId,
      sender: { kind: 'human', id: secrets.sender, displayName: secrets.displayName },
      attention: 'direct_question',
      text: secrets.text,
    })
    const { provider } = fakeProvider({ inbox, routes: { [secrets.route]: route }, reactions: true })
    const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
    kernel.register({ registration: registration(), provider })
    const outcomes = [await kernel.dispatchTurnStart(request()), await kernel.dispatchTurnStart(request())]

    // The public journal of the same Turn: a post-writeback dispatch.
    const journalFile = file('journal')
    const runtime = await HookRuntime.open({ journal: journalFile, profile: { enabled: true } })
    const kind = example('intent_kind') as IntentKindDefinition
    runtime.defineIntentKind(kind)
    runtime.register(
      defineHook({
        kinds: [kind] as any,
        registration: example('registration') as PostWritebackHookRegistration,
        provider: () => notApplicable(),
      }) as any,
    )
    await runtime.dispatch({
      settlement: {
        goal_id: 'goal_1',
        agent_id: 'agent_1',
        todo_id: 'todo_1',
        turn_instance_id: 'turn_1',
        effect_id: 'effect_1',
      },
      receipt: {
        receipt_id: 'receipt_1',
        effect_id: 'effect_1',
        step_kind: 'durable_writeback',
        status: 'committed',
        checkpointed: true,
        state_revision: 'rev_1',
        committed_at: '2026-08-26T00:00:00Z',
      },
      event: { event_kind: 'todo_completed', fact_refs: [] },
    })
    await runtime.close()
    await inbox.close()

    const cursorValue = secrets.messageId // the history cursor's value is a message id
    const publicText = JSON.stringify(outcomes) + journalBytes(journalFile)
    for (const [name, value] of Object.entries({ ...secrets, cursorValue }))
      expect(publicText.includes(value), name).toBe(false)
    // Every receipt is a counts-only document.
    for (const o of outcomes)
      for (const h of o.hooks)
        expect(
          Object.values(h.receipt)
            .filter((v) => typeof v === 'string')
            .sort(),
        ).toEqual(
          [
            h.hookId,
            h.receipt.status,
            'loopx_turn_start_hook_receipt_v0',
            ...(h.receipt.error_code ? [h.receipt.error_code] : []),
          ].sort(),
        )
    // The scan would have found them: they are in the owner-private inbox file.
    const privateText = journalBytes(inboxFile)
    for (const value of [secrets.text, secrets.route, secrets.messageId]) expect(privateText.includes(value)).toBe(true)
  })
})

/** The bytes of an SQLite file and its WAL, as latin1 text for substring search. */
function journalBytes(path: string): string {
  return [path, `${path}-wal`]
    .filter(existsSync)
    .map((p) => readFileSync(p).toString('latin1'))
    .join('')
}
