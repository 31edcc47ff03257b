// The turn-start RFC, bullet by bullet: one test per bullet of "Failure and
// replay" (the long reaction bullet one per sentence) and one per step of
// "Ordering", named after it, driving a fake multi-route provider
// (./turn_start_fake.ts, not part of the package) through the owner-private
// inbox; then a secrecy scan of the public outcomes, receipts and the public
// journal. The table runs over both runtimes (support/turn_start_runtimes.ts):
// the contract-v0 `TurnStartKernel` and `ShippedTurnStart`, LoopX's
// documents on the same core. Each row asserts the behaviour on both in one
// vocabulary, and what only one dialect says on that one.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  InboxStore,
  defineHook,
  notApplicable,
  type IntentKindDefinition,
  type PostWritebackHookRegistration,
  type ShippedTurnStartOutcome,
  type TurnStartOutcome,
  type TurnStartReceipt,
} from '../lib/index.js'
import { inSession } from './support/inbox_session.js'
import {
  RUNTIMES,
  commandOf,
  shippedRegistration,
  type FakeProviderFn,
  type HookOptions,
  type Host,
  type TurnStartRuntime,
  type View,
} from './support/turn_start_runtimes.js'
import { FakeRoute, fakeProvider, human, type FakeProviderOptions } from './turn_start_fake.js'

const dir = mkdtempSync(join(tmpdir(), 'loopx-turn-start-rfc-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const file = (name: string) => join(dir, `${name}-${++files}.sqlite`)
const example = (name: string) => JSON.parse(readFileSync(join(__dirname, '..', 'examples', `${name}.json`), 'utf8'))

const SELF = 'U_AGENT'
const COMMAND = commandOf('team_inbox')
const HOOK = 'team_inbox.turn_start_read'

/** The contract-v0 outcome of a view; a row asks for it only on that runtime. */
function v0(view: View): TurnStartOutcome {
  if (view.raw.runtime !== 'v0') throw new Error('not a contract-v0 outcome')
  return view.raw.outcome
}

/** The first hook's contract-v0 receipt. */
const receipt = (view: View): TurnStartReceipt => v0(view).hooks[0]!.receipt

/** The `ShippedTurnStart` outcome of a view. */
function shipped(view: View): ShippedTurnStartOutcome {
  if (view.raw.runtime !== 'shipped') throw new Error('not a shipped outcome')
  return view.raw.outcome
}

interface Scene {
  inbox: InboxStore
  routes: Record<string, FakeRoute>
  host: Host
  log: ReturnType<typeof fakeProvider>['log']
  dispatch: (quota?: number) => Promise<View>
}

async function scene(
  rt: TurnStartRuntime,
  routeNames: string[] = ['alpha', 'beta'],
  options: HookOptions & {
    provider?: Partial<FakeProviderOptions>
    wrap?: (p: FakeProviderFn) => FakeProviderFn
  } = {},
): Promise<Scene> {
  const inbox = await InboxStore.open(file('inbox'), { selfIdentity: SELF })
  const routes = Object.fromEntries(routeNames.map((r) => [r, new FakeRoute()]))
  const { provider, log } = fakeProvider({ inbox, routes, reactions: options.reactions ?? true, ...options.provider })
  const host = rt.open(inbox)
  host.register('team_inbox', options.wrap ? options.wrap(provider) : provider, options)
  return { inbox, routes, host, log, dispatch: (quota) => host.dispatch(quota) }
}

const ref = (routeId: string, providerMessageId: string) => ({ routeId, providerMessageId })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.each(RUNTIMES)('$name', (rt) => {
  describe('RFC: CLI request validation runs before hook dispatch', () => {
    it('an invalid quota request performs no provider read or owner-private write', async () => {
      const s = await scene(rt)
      s.routes.alpha!.post(human('a1'))
      let refused: View
      if (rt.kind === 'v0') {
        refused = await s.dispatch(0)
        expect(v0(refused).violations).toEqual([{ path: '/quota/max_units', rule: 'out_of_range' }])
      } else {
        // ShippedTurnStart takes no request (the host owns the Turn and its
        // quota); what it refuses before any provider runs is a registration.
        const bad = rt.open(s.inbox)
        bad.register('team_inbox', fakeProvider({ inbox: s.inbox, routes: s.routes, reactions: true }).provider, {
          command: `${COMMAND}\u0007`, // a control character: LoopX's rules refuse it
        })
        refused = await bad.dispatch()
        expect([shipped(refused).document.failures, shipped(refused).hooks]).toEqual([
          [{ hook_id: HOOK, capability_id: 'team_inbox', error_code: 'registration_rejected' }],
          [],
        ])
        await expect(s.dispatch(0)).rejects.toThrow('takes no request')
      }
      expect(refused.admitted).toBe(false)
      expect([
        s.routes.alpha!.historyCalls,
        await s.inbox.pendingCount(),
        await s.inbox.cursor('alpha', 'history'),
      ]).toEqual([0, 0, null])
      // A valid dispatch still runs the hook.
      const valid = await s.dispatch()
      expect([valid.admitted, valid.hook.observations]).toEqual([true, 1])
    })
  })

  describe('RFC: Failure and replay', () => {
    it('empty means a valid provider success envelope was read and no pending message received its first Agent-owned turn-start read in this dispatch', async () => {
      const s = await scene(rt)
      const nothing = await s.dispatch()
      expect(nothing.hook).toMatchObject({ status: 'empty', observations: 0, pending: 0, readRequired: false })
      if (rt.kind === 'v0') expect(receipt(nothing)).toMatchObject({ routes_ok: 2, agent_read_required: false })
      else
        expect(shipped(nothing).document.results[0]).toMatchObject({ status: 'empty', external_reads_performed: true })
      s.routes.beta!.post(human('b1'))
      const fresh = await s.dispatch()
      expect(fresh.hook).toMatchObject({ status: 'ok', observations: 1, pending: 1, readRequired: true })
      // Still pending, already read: empty, with the pending material counted.
      const carried = await s.dispatch()
      expect(carried.hook).toMatchObject({ status: 'empty', observations: 0, pending: 1, readRequired: true })
      expect([carried.reads, carried.lane.reason]).toEqual([[COMMAND], 'material_still_pending'])
      if (rt.kind === 'v0') {
        expect(receipt(carried)).toMatchObject({ status: 'empty', pending: 1, agent_read_required: true })
      } else {
        // LoopX's empty may not claim a read: core's count of what is still pending requires it, beside the document.
        const out = shipped(carried)
        expect([out.document.results[0]!.agent_read_required, out.document.required_reads]).toEqual([false, []])
        expect(out.requiredReads.map((r) => r.basis)).toEqual(['fail_closed'])
        expect(out.hooks[0]).toMatchObject({ failed: false, pending: 1, read_required: true })
      }
    })

    it('provider_contract_error means the success envelope did not match its declared schema; it must never degrade to empty', async () => {
      const s = await scene(rt, ['alpha'])
      s.routes.alpha!.failure = 'bad_envelope'
      const bad = await s.dispatch()
      expect([bad.hook.status, bad.hook.errorCode]).toEqual(['failed', 'provider_contract_error'])
      if (rt.kind === 'v0') {
        const r = receipt(bad)
        expect([r.status, r.error_code, r.routes_failed]).toEqual([
          'provider_contract_error',
          'provider_contract_error',
          1,
        ])
      } else {
        // LoopX has no provider_contract_error status: it travels as the code of `failed`.
        expect(shipped(bad).document.results[0]).toMatchObject({
          status: 'failed',
          error_code: 'provider_contract_error',
        })
      }
      // One bad route of two: partial, never empty or ok.
      const two = await scene(rt)
      two.routes.alpha!.failure = 'bad_envelope'
      const half = await two.dispatch()
      expect([half.hook.status, half.hook.errorCode]).toEqual(['partial', 'provider_contract_error'])
      if (rt.kind === 'v0') {
        expect(receipt(half)).toMatchObject({
          status: 'partial',
          error_code: 'provider_contract_error',
          routes_ok: 1,
          routes_failed: 1,
        })
      } else {
        expect(shipped(half).document.results[0]).toMatchObject({
          status: 'partial',
          error_code: 'provider_contract_error',
        })
      }
      // A provider that reports new observations without the read obligation
      // is turned into a contract failure by core, not into empty.
      const k = rt.open()
      k.register('liar', async (i) => ({
        schema_version: 'loopx_turn_start_hook_receipt_v0',
        hook_id: i.hook_id,
        status: 'ok',
        error_code: null,
        agent_read_required: false,
        observations_new: 1,
        pending: 1,
        direct_questions: 0,
        verified_replies: 0,
        routes_ok: 1,
        routes_failed: 0,
        reactions_added: 0,
        external_writes_performed: 0,
      }))
      const lie = await k.dispatch()
      expect(lie.hook.status).toBe('failed')
      if (rt.kind === 'v0') {
        const h = v0(lie).hooks[0]!
        expect([h.receipt.status, h.kernelFailure]).toEqual([
          'provider_contract_error',
          { code: 'result_contract_rejected', rule: 'not_allowed_value' },
        ])
      } else {
        // The same lie as a LoopX result (observed, no read) breaks LoopX's rules: isolated, no result.
        expect([shipped(lie).document.results, shipped(lie).document.failures]).toEqual([
          [],
          [{ hook_id: 'liar.turn_start_read', capability_id: 'liar', error_code: 'contract_rejected' }],
        ])
      }
    })

    it('provider permission and availability failures remain typed and isolated', async () => {
      const inbox = await InboxStore.open(file('capabilities'))
      const host = rt.open(inbox)
      for (const [capability, failure] of [
        ['chat', 'permission'],
        ['mail', 'unavailable'],
        ['tickets', null],
      ] as const) {
        const route = new FakeRoute().post(human(`${capability}1`))
        route.failure = failure
        host.register(capability, fakeProvider({ inbox, routes: { main: route }, reactions: true }).provider)
      }
      const outcome = await host.dispatch()
      expect(outcome.hooks.map((h) => [h.hookId, h.status, h.errorCode])).toEqual([
        ['chat.turn_start_read', 'failed', 'provider_permission_denied'],
        ['mail.turn_start_read', 'unavailable', 'provider_unavailable'],
        ['tickets.turn_start_read', 'ok', null],
      ])
      // Isolated, yet an outage does not drop the read obligation: core counts a
      // failed hook's pending material in the inbox itself, and its read is
      // still required before work (fail closed).
      expect(outcome.hooks.map((h) => h.readRequired)).toEqual([true, true, true])
      expect([...outcome.reads].sort()).toEqual(['chat', 'mail', 'tickets'].map((c) => commandOf(c)))
      if (rt.kind === 'v0') {
        const o = v0(outcome)
        expect(o.hooks.map((h) => [h.receipt.status, h.kernelFailure])).toEqual([
          ['provider_permission_denied', null],
          ['provider_unavailable', null],
          ['ok', null],
        ])
        expect(o.hooks.map((h) => h.pendingStanding)).toEqual(['inbox_store', 'inbox_store', 'reported'])
        expect(o.requiredReads.map((r) => r.command)).toEqual([
          'loopx inbox read --hook=chat',
          'loopx inbox read --hook=chat',
          'loopx inbox read --hook=mail',
          'loopx inbox read --hook=mail',
          'loopx inbox read --hook=tickets',
          'loopx inbox read --hook=tickets',
        ])
      } else {
        // The failed results may claim no read under LoopX's rules: their
        // reads are core's fail-closed ones, after the document's.
        const o = shipped(outcome)
        expect(o.document.results.map((r) => [r.status, r.agent_read_required])).toEqual([
          ['failed', false],
          ['unavailable', false],
          ['observed', true],
        ])
        expect(o.document.failures).toEqual([])
        expect(o.hooks.map((h) => [h.failed, h.pending_standing])).toEqual([
          [true, 'inbox_store'],
          [true, 'inbox_store'],
          [false, 'reported'],
        ])
        expect(o.requiredReads.map((r) => [r.command, r.basis])).toEqual([
          ['loopx inbox read --hook=tickets', 'result'],
          ['loopx inbox read --hook=chat', 'fail_closed'],
          ['loopx inbox read --hook=mail', 'fail_closed'],
        ])
      }
    })

    it('duplicate hook identities run once; duplicate messages collapse by provider message identity, and separate private read/effect receipts prevent duplicate Agent-read observations and duplicate provider reactions', async () => {
      const s = await scene(rt, ['alpha'])
      let secondRan = false
      const second = s.host.register('team_inbox', async () => {
        secondRan = true
        throw new Error('second provider never runs')
      })
      // v0 refuses the identity at register; LoopX judges it at each dispatch.
      expect(second).toEqual(rt.kind === 'v0' ? { alreadyInstalled: true } : undefined)
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
      expect([secondRan, s.log.dispatches, first.hooks.length, first.hook.observations]).toEqual([false, 1, 1, 1])
      expect(
        await inSession(s.inbox, (session) => session.advanceCursor('alpha', 'history', 'forged', 'rewind', [])),
      ).toBe('lease_lost')
      s.routes.alpha!.post(m) // the service repeats the same identity
      const again = await s.dispatch()
      expect([secondRan, s.log.dispatches, again.hook.observations]).toEqual([false, 2, 0])
      expect([await s.inbox.pendingCount(), s.routes.alpha!.reactions.get('a1')]).toEqual([1, 1])
      if (rt.kind === 'v0') {
        expect([receipt(first).reactions_added, receipt(again).reactions_added]).toEqual([1, 0])
      } else {
        const duplicate = { hook_id: HOOK, capability_id: 'team_inbox', error_code: 'duplicate_hook_id' }
        expect([shipped(first).document.failures, shipped(again).document.failures]).toEqual([[duplicate], [duplicate]])
        expect([first, again].map((v) => shipped(v).document.results[0]!.external_writes_performed)).toEqual([
          true,
          false,
        ])
      }
    })

    it('collector-only capture performs no provider write; the acknowledgement is admitted only after the turn-start hook reads and confirms a pending message', async () => {
      const s = await scene(rt, ['alpha'])
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
      const view = await s.dispatch()
      expect([view.hook.observations, s.routes.alpha!.reactions.get('c1')]).toEqual([1, 1])
      if (rt.kind === 'v0') expect(receipt(view).reactions_added).toBe(1)
      else expect(shipped(view).document.results[0]!.external_writes_performed).toBe(true)
    })

    describe('reaction disablement never cancels the first-read obligation ... every pending read remains eligible across routes and messages', () => {
      it('reaction disablement never cancels the first-read obligation', async () => {
        const s = await scene(rt, ['alpha'], { reactions: false })
        s.routes.alpha!.post(human('a1'), human('a2'))
        const view = await s.dispatch()
        expect([view.hook.observations, view.hook.readRequired, view.reads, s.routes.alpha!.reactCalls]).toEqual([
          2,
          true,
          [COMMAND],
          0,
        ])
        if (rt.kind === 'v0') {
          const r = receipt(view)
          expect([r.observations_new, r.agent_read_required, r.reactions_added, r.external_writes_performed]).toEqual([
            2,
            true,
            0,
            0,
          ])
        } else {
          expect(shipped(view).document.results[0]).toMatchObject({
            status: 'observed',
            observation_count: 2,
            agent_read_required: true,
            external_writes_performed: false,
          })
        }
      })

      it('failed effects retry from the owner-private pending-read set rather than relying on the bounded provider overlap window', async () => {
        const s = await scene(rt, ['alpha'])
        s.routes.alpha!.post(human('a1'))
        s.routes.alpha!.reactFailure = 'fail'
        const failed = await s.dispatch()
        expect([failed.hook.status, failed.hook.errorCode, s.routes.alpha!.reactions.get('a1')]).toEqual([
          'partial',
          'reaction_failed',
          undefined,
        ])
        if (rt.kind === 'v0') {
          expect(receipt(failed)).toMatchObject({
            status: 'partial',
            error_code: 'reaction_failed',
            reactions_added: 0,
          })
        }
        s.routes.alpha!.reactFailure = null
        const retry = await s.dispatch()
        // The service's next page is empty (the window has passed); the retry comes from the inbox.
        expect([retry.hook.status, retry.hook.observations, s.routes.alpha!.reactions.get('a1')]).toEqual([
          'empty',
          0,
          1,
        ])
        if (rt.kind === 'v0') {
          expect(receipt(retry).reactions_added).toBe(1)
        } else {
          expect(shipped(retry).document.results[0]).toMatchObject({ status: 'empty', external_writes_performed: true })
        }
      })

      it('uncertain effects fail closed before create', async () => {
        const s = await scene(rt, ['alpha'])
        s.routes.alpha!.post(human('a1'))
        s.routes.alpha!.reactFailure = 'uncertain'
        const uncertain = await s.dispatch()
        expect([uncertain.hook.status, uncertain.hook.errorCode]).toEqual(['partial', 'reaction_failed'])
        if (rt.kind === 'v0')
          expect(receipt(uncertain)).toMatchObject({ status: 'partial', error_code: 'reaction_failed' })
        else
          expect(shipped(uncertain).document.results[0]).toMatchObject({
            status: 'partial',
            error_code: 'reaction_failed',
          })
        s.routes.alpha!.reactFailure = null
        await s.dispatch()
        // Read back, found, resolved: no second create.
        expect([s.routes.alpha!.reactCalls, s.routes.alpha!.reactions.get('a1')]).toEqual([1, 1])
        expect(await inSession(s.inbox, (session) => session.beginReaction(ref('alpha', 'a1')))).toBe('already_added')
      })

      it('replay is bounded by one aggregate per-dispatch attempt budget', async () => {
        // v0: the registration's budget, enforced by core. Shipped: the
        // registration has none; the provider is told 4 and keeps to it.
        const s = await scene(rt, ['alpha'], { attempts: 4 })
        s.routes.alpha!.post(...Array.from({ length: 10 }, (_, i) => human(`a${i}`)))
        s.routes.alpha!.reactFailure = 'fail'
        for (let turn = 1; turn <= 3; turn++) {
          const before = s.routes.alpha!.reactCalls + s.routes.alpha!.historyCalls
          await s.dispatch()
          expect(s.routes.alpha!.reactCalls + s.routes.alpha!.historyCalls - before).toBeLessThanOrEqual(4)
        }
        expect(s.routes.alpha!.reactCalls).toBe(9) // 3 per dispatch: the budget, less its history read
        if (rt.kind === 'shipped') {
          // What binds a shipped provider is core's ceiling per call (16
          // attempts): one told 40 is refused the 17th and fails closed.
          const greedy = await scene(rt, ['alpha'], { attempts: 40 })
          greedy.routes.alpha!.post(...Array.from({ length: 40 }, (_, i) => human(`g${i}`)))
          greedy.routes.alpha!.reactFailure = 'fail'
          const view = await greedy.dispatch()
          expect(greedy.routes.alpha!.reactCalls).toBe(16)
          expect([view.hook.status, view.hook.errorCode, view.hook.readRequired, view.reads]).toEqual([
            'failed',
            'producer_failed',
            true,
            [COMMAND],
          ])
        }
      })

      it('a private collector-scoped cursor rotates route priority across dispatches while each route keeps a private round-robin message cursor, so a large or failing acknowledgement backlog cannot block turn admission and every pending read remains eligible', async () => {
        const s = await scene(rt, ['alpha', 'beta'], { attempts: 4 })
        s.routes.alpha!.post(...Array.from({ length: 6 }, (_, i) => human(`a${i}`)))
        s.routes.alpha!.reactFailure = 'fail'
        s.routes.beta!.post(human('b0'), human('b1'))
        const attempted = new Set<string>()
        const react = s.routes.alpha!.react.bind(s.routes.alpha!)
        s.routes.alpha!.react = (id: string) => (attempted.add(id), react(id))
        for (let turn = 1; turn <= 6; turn++) {
          const view = await s.dispatch()
          expect(view.admitted && view.hooks.length === 1).toBe(true) // admission never blocked
          if (rt.kind === 'v0') expect(v0(view).admitted).toBe(true)
          else expect(shipped(view).document.invoked_count).toBe(1)
        }
        expect([...s.routes.beta!.reactions.keys()].sort()).toEqual(['b0', 'b1'])
        expect([...attempted].sort()).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5'])
      })
    })

    it('attention classification affects scheduling and reply policy, never whether a successfully read pending message receives the acknowledgement', async () => {
      const s = await scene(rt, ['alpha'])
      const classes = ['ordinary', 'mention', 'direct_question', 'verified_reply'] as const
      s.routes.alpha!.post(...classes.map((attention) => human(attention, 'x', { attention })))
      const view = await s.dispatch()
      expect(view.lane).toEqual({ decision: 'preempt_material_review', reason: 'direct_question' })
      expect([...s.routes.alpha!.reactions.keys()].sort()).toEqual([...classes].sort())
      if (rt.kind === 'v0') expect([receipt(view).direct_questions, receipt(view).verified_replies]).toEqual([1, 1])
      else expect(shipped(view).document.results[0]).toMatchObject({ status: 'observed', observation_count: 4 })
    })

    it('a provider-owned self-message filter runs before inbox ingestion only from a typed sender and an exact verified identity; unresolved identity fails open to capture, with no display-name or body heuristics', async () => {
      const s = await scene(rt, ['alpha'])
      s.routes.alpha!.post(
        { id: 'own', sender: { kind: 'bot', id: SELF }, text: 'posted by the agent itself' },
        { id: 'untyped', sender: { kind: 'unknown', id: SELF }, text: 'identity unresolved' },
        { id: 'named', sender: { kind: 'human', id: null, displayName: 'LoopX Agent' }, text: 'display name only' },
        { id: 'claims', sender: { kind: 'human', id: 'U_bob' }, text: `I am ${SELF}` },
        { id: 'case', sender: { kind: 'human', id: SELF.toLowerCase() }, text: 'not exact' },
      )
      expect((await s.dispatch()).hook.observations).toBe(4)
      expect((await s.inbox.pending()).map((m) => m.providerMessageId)).toEqual(['untyped', 'named', 'claims', 'case'])
    })

    it("provider-local cursors are single-flight and advance only after inbox and cursor readback; history and acknowledgement replay use independent positions, so an old topic's new reply is admitted while older acknowledgement debt remains", async () => {
      let crash = true
      const s = await scene(rt, ['alpha'], {
        provider: {
          leaseMs: 50,
          afterCapture: (m) => {
            if (crash && m.providerMessageId === 'a2') throw new Error('crash mid-read')
          },
        },
      })
      s.routes.alpha!.post(human('a1'), human('a2'))
      const crashed = await s.dispatch()
      expect(crashed.hook.status).toBe('failed')
      if (rt.kind === 'v0') {
        const h = v0(crashed).hooks[0]!
        expect([h.receipt.status, h.kernelFailure?.code]).toEqual(['provider_contract_error', 'producer_failed'])
      } else {
        // A provider that throws has no result in LoopX's dispatch: it is a failure.
        expect([crashed.hook.errorCode, shipped(crashed).document.results]).toEqual(['producer_failed', []])
      }
      expect(await s.inbox.cursor('alpha', 'history')).toBe(null) // not advanced: no readback happened
      // Single flight: while the crashed claim's lease holds, the route is not read again.
      const busy = await s.dispatch()
      expect([busy.hook.status, busy.hook.errorCode, s.log.cursorBusy]).toEqual([
        'unavailable',
        'provider_unavailable',
        1,
      ])
      if (rt.kind === 'v0') expect(receipt(busy).status).toBe('provider_unavailable')
      else expect(shipped(busy).document.results[0]!.status).toBe('unavailable')
      await sleep(60)
      crash = false
      const resumed = await s.dispatch()
      expect([resumed.hook.status, resumed.hook.observations, await s.inbox.cursor('alpha', 'history')]).toEqual([
        'ok',
        2,
        'a2',
      ])
      // Acknowledgement debt on the old topic; its new reply comes in by its new identity.
      s.routes.alpha!.reactFailure = 'fail'
      s.routes.alpha!.post(human('t1', 'old topic', { thread: 't1' }))
      await s.dispatch()
      s.routes.alpha!.post(human('t1r', 'a new reply', { thread: 't1' }))
      const reply = await s.dispatch()
      expect([reply.hook.observations, await s.inbox.cursor('alpha', 'history')]).toEqual([1, 't1r'])
      // The debt is still owed.
      expect(await inSession(s.inbox, (session) => session.beginReaction(ref('alpha', 't1')))).toBe('proceed')
    })

    it('partial multi-route success still requires Agent reading for accepted observations while retaining a compact failure code for the incomplete routes', async () => {
      const s = await scene(rt, ['alpha', 'beta'])
      s.routes.alpha!.post(human('a1'))
      s.routes.beta!.failure = 'unavailable'
      const view = await s.dispatch()
      expect(view.hook).toMatchObject({
        status: 'partial',
        errorCode: 'provider_unavailable',
        observations: 1,
        readRequired: true,
      })
      expect(view.reads).toEqual([COMMAND])
      if (rt.kind === 'v0') {
        expect(receipt(view)).toMatchObject({
          status: 'partial',
          error_code: 'provider_unavailable',
          observations_new: 1,
          agent_read_required: true,
          routes_ok: 1,
          routes_failed: 1,
        })
        expect(v0(view).requiredReads.map((r) => r.channel)).toEqual(['agent', 'cli'])
      } else {
        const out = shipped(view)
        expect(out.document.results[0]).toMatchObject({
          status: 'partial',
          error_code: 'provider_unavailable',
          observation_count: 1,
          agent_read_required: true,
        })
        expect([out.document.required_reads.map((r) => r.command), out.requiredReads.map((r) => r.basis)]).toEqual([
          [COMMAND],
          ['result'],
        ])
      }
    })
  })

  /** A minimal CLI turn around the runtime, recording the order of its steps. */
  async function turn(
    s: Scene,
    events: string[],
    agent?: (drained: Awaited<ReturnType<InboxStore['pending']>>) => Promise<void>,
  ) {
    const view = await s.dispatch()
    events.push(`dispatched:${view.admitted}`)
    const status = await s.inbox.pendingCount()
    events.push(`status:${status}`)
    const lane = view.lane.decision === 'preempt_material_review' ? 'material_review' : 'ordinary_work'
    events.push(`quota:${lane}`)
    // v0 projects each read into two channels; LoopX's reads carry why they are required instead.
    if (view.raw.runtime === 'v0')
      for (const r of view.raw.outcome.requiredReads) events.push(`read:${r.channel}:${r.ordering}`)
    else for (const r of view.raw.outcome.requiredReads) events.push(`read:${r.basis}:${r.ordering}`)
    const drained = view.reads.length > 0 ? await s.inbox.pending() : []
    if (view.lane.decision === 'notify_keep_selected') events.push('notify')
    events.push(`work:${lane}`)
    await agent?.(drained)
    return { view, lane, drained }
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
      const host = rt.open(inbox)
      for (const capability of ['mail', 'chat']) {
        const { provider } = fakeProvider({
          inbox,
          routes: { main: new FakeRoute().post(human(`${capability}1`)) },
          reactions: false,
        })
        host.register(capability, async (i, c) => (events.push(i.hook_id), provider(i, c)), { reactions: false })
      }
      const view = await host.dispatch()
      events.push('status', 'quota')
      expect(events).toEqual(['chat.turn_start_read', 'mail.turn_start_read', 'status', 'quota'])
      expect(view.hooks.map((h) => [h.hookId, h.status])).toEqual([
        ['chat.turn_start_read', 'ok'],
        ['mail.turn_start_read', 'ok'],
      ])
    })

    it('provider read + owner-private inbox commit/readback', async () => {
      const s = await scene(rt, ['alpha'])
      s.routes.alpha!.post(human('a1'), human('a2'))
      await s.dispatch()
      expect([
        await s.inbox.contains(ref('alpha', 'a1')),
        await s.inbox.contains(ref('alpha', 'a2')),
        await s.inbox.cursor('alpha', 'history'),
      ]).toEqual([true, true, 'a2'])
    })

    it('first Agent-read receipt independent of optional provider reaction', async () => {
      const s = await scene(rt, ['alpha'])
      s.routes.alpha!.post(human('a1'))
      s.routes.alpha!.reactFailure = 'fail'
      const view = await s.dispatch()
      expect([view.hook.observations, view.hook.readRequired, s.routes.alpha!.reactions.get('a1')]).toEqual([
        1,
        true,
        undefined,
      ])
      if (rt.kind === 'v0') {
        const r = receipt(view)
        expect([r.observations_new, r.agent_read_required, r.reactions_added]).toEqual([1, true, 0])
      } else {
        expect(shipped(view).document.results[0]).toMatchObject({ observation_count: 1, agent_read_required: true })
      }
      expect((await s.inbox.pending()).map((m) => m.read)).toEqual([true])
    })

    it('retry optional reaction from durable pending reads', async () => {
      const s = await scene(rt, ['alpha'])
      s.routes.alpha!.post(human('a1'))
      s.routes.alpha!.reactFailure = 'fail'
      await s.dispatch()
      expect(s.routes.alpha!.reactions.get('a1')).toBeUndefined()
      s.routes.alpha!.reactFailure = null
      const retry = await s.dispatch()
      expect(s.routes.alpha!.reactions.get('a1')).toBe(1)
      if (rt.kind === 'v0') expect(receipt(retry).reactions_added).toBe(1)
      else expect(shipped(retry).document.results[0]!.external_writes_performed).toBe(true)
    })

    it('fresh status + quota projection', async () => {
      const events: string[] = []
      const s = await scene(rt, ['alpha'], { wrap: wrapWith(events) })
      s.routes.alpha!.post(human('q', 'can you look at this?', { attention: 'direct_question' }))
      const { lane } = await turn(s, events)
      // The hook ran before status, so status and quota see the fresh question.
      expect(events.slice(0, 4)).toEqual(['hook', 'dispatched:true', 'status:1', 'quota:material_review'])
      expect(lane).toBe('material_review')
    })

    it('generic kernel projects the registered required read before selected work', async () => {
      const events: string[] = []
      const s = await scene(rt, ['alpha'])
      s.routes.alpha!.post(human('a1'))
      const { view } = await turn(s, events)
      const work = events.indexOf('work:ordinary_work')
      if (rt.kind === 'v0') {
        expect(v0(view).requiredReads).toEqual([
          { channel: 'agent', command: 'loopx inbox read --hook=team_inbox', ordering: 'before_work' },
          { channel: 'cli', command: 'loopx inbox read --hook=team_inbox', ordering: 'before_work' },
        ])
        expect(events.indexOf('read:agent:before_work')).toBeLessThan(work)
        expect(events.indexOf('read:cli:before_work')).toBeLessThan(work)
      } else {
        const { required_read } = shippedRegistration('team_inbox')
        expect(shipped(view).requiredReads).toEqual([
          {
            ...required_read,
            hook_id: HOOK,
            capability_id: 'team_inbox',
            source: 'turn_start_capability_hook',
            basis: 'result',
          },
        ])
        expect(events.indexOf('read:result:before_work')).toBeGreaterThan(-1)
        expect(events.indexOf('read:result:before_work')).toBeLessThan(work)
      }
    })

    it('private drain into the active Agent turn (ordinary selection may remain)', async () => {
      const events: string[] = []
      const s = await scene(rt, ['alpha'])
      s.routes.alpha!.post(human('a1', 'fyi: the build is green'))
      const { view, lane, drained } = await turn(s, events)
      expect([view.lane.decision, lane]).toEqual(['notify_keep_selected', 'ordinary_work'])
      expect(events).toContain('notify')
      expect(drained.map((m) => (m.payload as any).text)).toEqual(['fyi: the build is green'])
      expect(JSON.stringify(view.raw.outcome)).not.toContain('build is green')
    })

    it('semantic disposition + durable settlement', async () => {
      const s = await scene(rt, ['alpha'])
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
      const s = await scene(rt, ['alpha'])
      s.routes.alpha!.post(human('q', 'is the migration safe?', { attention: 'direct_question' }))
      const first = await turn(s, [])
      expect(first.lane).toBe('material_review')
      // Not settled: the material preempts again on the next turn.
      expect((await turn(s, [])).view.lane.reason).toBe('material_still_pending')
      const message = ref('alpha', 'q')
      await s.inbox.dispose(message, 'record_context', 'effect_answer_1')
      expect(await s.inbox.ack(message)).toBe('acked')
      const resumed = await turn(s, [])
      expect([resumed.view.lane, resumed.lane, resumed.view.reads]).toEqual([
        { decision: 'keep_selected', reason: 'nothing_to_read' },
        'ordinary_work',
        [],
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
      const host = rt.open(inbox)
      host.register('team_inbox', provider)
      const views = [await host.dispatch(), await host.dispatch()]
      // The fake did read and react: the scan runs over outcomes that saw the secrets.
      expect([views[0]!.hook.observations, route.reactions.get(secrets.messageId)]).toEqual([1, 1])

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
      const publicText = JSON.stringify(views.map((v) => v.raw.outcome)) + journalBytes(journalFile)
      for (const [name, value] of Object.entries({ ...secrets, cursorValue }))
        expect(publicText.includes(value), name).toBe(false)
      for (const view of views) {
        if (view.raw.runtime === 'v0') {
          // Every receipt is a counts-only document.
          for (const h of view.raw.outcome.hooks)
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
        } else {
          // Every string in the document, the reads and the standings is the
          // registration's own, a schema, or a word of LoopX's or core's vocabulary.
          const registration = shippedRegistration('team_inbox')
          const allowed = new Set<string>([
            registration.hook_id,
            registration.capability_id,
            ...Object.values(registration.required_read!).map(String),
            'turn_start',
            'loopx_turn_start_capability_hook_dispatch_v1',
            'loopx_turn_start_capability_hook_result_v0',
            'turn_start_capability_hook',
            'result',
            'fail_closed',
            'observed',
            'empty',
            'reported',
            'inbox_store',
          ])
          const { document, requiredReads, hooks } = view.raw.outcome
          expect(stringsOf({ document, requiredReads, hooks }).filter((v) => !allowed.has(v))).toEqual([])
        }
      }
      // The scan would have found them: they are in the owner-private inbox file.
      const privateText = journalBytes(inboxFile)
      for (const value of [secrets.text, secrets.route, secrets.messageId])
        expect(privateText.includes(value)).toBe(true)
    })
  })
})

/** Every string value in a JSON document. */
function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value]
  if (value === null || typeof value !== 'object') return []
  return Object.values(value).flatMap(stringsOf)
}

/** The bytes of an SQLite file and its WAL, as latin1 text for substring search. */
function journalBytes(path: string): string {
  return [path, `${path}-wal`]
    .filter(existsSync)
    .map((p) => readFileSync(p).toString('latin1'))
    .join('')
}
