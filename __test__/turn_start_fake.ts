// A fake multi-route chat provider for the turn-start tests (never part of
// the package): an in-memory external API with per-route history pages,
// failures and reactions, and a provider that reads it through its session
// (`context.session`, the owner-private inbox as core grants it to the hook)
// the way a real one would. Its kernel must have the inbox.
import type {
  CaptureInput,
  InboxStore,
  MessageRef,
  TurnStartContext,
  TurnStartErrorCode,
  TurnStartHookInput,
  TurnStartReceipt,
} from '../lib/index.js'

export type RouteFailure = null | 'permission' | 'unavailable' | 'bad_envelope' | 'hang'
export type ReactFailure = null | 'fail' | 'uncertain'

export interface FakeMessage {
  id: string
  sender: { kind: 'human' | 'bot' | 'system' | 'unknown'; id: string | null; displayName?: string }
  attention?: 'ordinary' | 'mention' | 'direct_question' | 'verified_reply'
  thread?: string
  text: string
}

/** One route (a channel) of the external service. */
export class FakeRoute {
  messages: FakeMessage[] = []
  failure: RouteFailure = null
  reactFailure: ReactFailure = null
  /** message id -> reactions actually created on the service */
  readonly reactions = new Map<string, number>()
  historyCalls = 0
  reactCalls = 0

  post(...messages: FakeMessage[]): this {
    this.messages.push(...messages)
    return this
  }

  /** The service's history page after `cursor` (a message id), as its JSON envelope. */
  async history(cursor: string | null): Promise<unknown> {
    this.historyCalls++
    switch (this.failure) {
      case 'permission':
        throw Object.assign(new Error('forbidden'), { status: 403 })
      case 'unavailable':
        throw Object.assign(new Error('unavailable'), { status: 503 })
      case 'hang':
        return new Promise(() => {})
      case 'bad_envelope':
        return { ok: true, items: 'not a list' }
    }
    const at = cursor === null ? 0 : this.messages.findIndex((m) => m.id === cursor) + 1
    const page = this.messages.slice(at)
    return { ok: true, messages: page, next_cursor: page.at(-1)?.id ?? cursor }
  }

  async react(id: string): Promise<void> {
    this.reactCalls++
    if (this.reactFailure === 'fail') throw Object.assign(new Error('rate limited'), { status: 429 })
    this.reactions.set(id, (this.reactions.get(id) ?? 0) + 1)
    // The reaction exists, but the answer is lost: an uncertain effect.
    if (this.reactFailure === 'uncertain') throw Object.assign(new Error('timeout'), { status: 504 })
  }

  async hasReaction(id: string): Promise<boolean> {
    return (this.reactions.get(id) ?? 0) > 0
  }
}

export interface FakeProviderOptions {
  /** The inbox the provider's kernel has (the owner's count of pending messages). */
  inbox: InboxStore
  routes: Record<string, FakeRoute>
  /** Whether the registration requested provider_message_reaction. */
  reactions: boolean
  /** Scope of the collector's route-rotation cursor. */
  collectorId?: string
  /** Per-route read timeout (ms). */
  routeTimeoutMs?: number
  /** Called after each captured message (tests use it to crash mid-read). */
  afterCapture?: (ref: MessageRef) => void
  /** Lease of a history-cursor claim (ms). */
  leaseMs?: number
}

const ROUTE_CODE_ORDER: TurnStartErrorCode[] = [
  'provider_contract_error',
  'provider_permission_denied',
  'provider_unavailable',
  'timed_out',
]

/** The provider's own schema check of a success envelope. */
function envelopeMessages(envelope: any): FakeMessage[] | undefined {
  if (!envelope || envelope.ok !== true || !Array.isArray(envelope.messages)) return undefined
  if (!envelope.messages.every((m: any) => typeof m?.id === 'string' && typeof m?.text === 'string' && m?.sender))
    return undefined
  return envelope.messages
}

/** Stats a test can look at; nothing here reaches the public receipt. */
export interface FakeProviderLog {
  dispatches: number
  cursorBusy: number
}

export function fakeProvider(options: FakeProviderOptions): {
  provider: (input: TurnStartHookInput, context: TurnStartContext) => Promise<TurnStartReceipt>
  log: FakeProviderLog
} {
  const { inbox, routes } = options
  const log: FakeProviderLog = { dispatches: 0, cursorBusy: 0 }
  const provider = async (input: TurnStartHookInput, context: TurnStartContext): Promise<TurnStartReceipt> => {
    log.dispatches++
    const session = context.session
    if (session === undefined) throw new Error('the fake provider needs a kernel that has the inbox')
    let attempts = input.budget.max_attempts_per_dispatch
    let routesOk = 0
    const failed: TurnStartErrorCode[] = []
    const routeIds = Object.keys(routes).sort().slice(0, input.budget.max_routes)
    for (const routeId of routeIds) {
      if (attempts <= 0) break
      attempts--
      const route = routes[routeId]!
      const claim = await session.claimCursor(routeId, 'history', options.leaseMs ?? 30_000)
      if (claim.outcome !== 'claimed') {
        log.cursorBusy++
        failed.push('provider_unavailable')
        continue
      }
      let envelope: unknown
      try {
        const timeout = new Promise((_, reject) =>
          setTimeout(() => reject(Object.assign(new Error('t'), { status: 'timeout' })), options.routeTimeoutMs ?? 200),
        )
        envelope = await Promise.race([route.history(claim.value), timeout])
      } catch (e: any) {
        await session.releaseCursor(routeId, 'history', claim.token)
        failed.push(
          e.status === 403
            ? 'provider_permission_denied'
            : e.status === 'timeout'
              ? 'timed_out'
              : 'provider_unavailable',
        )
        continue
      }
      const messages = envelopeMessages(envelope)
      if (!messages) {
        await session.releaseCursor(routeId, 'history', claim.token)
        failed.push('provider_contract_error')
        continue
      }
      const read: MessageRef[] = []
      for (const m of messages) {
        const input: CaptureInput = {
          routeId,
          providerMessageId: m.id,
          source: 'turn_start',
          sender: { kind: m.sender.kind, verifiedIdentity: m.sender.id },
          attention: m.attention ?? 'ordinary',
          payload: { text: m.text, thread: m.thread ?? null, from: m.sender.displayName ?? null },
        }
        const captured = await session.capture(input)
        const ref = { routeId, providerMessageId: m.id }
        // A self-filtered message is deliberately not in the inbox: nothing to read back.
        if (captured !== 'self_filtered') read.push(ref)
        options.afterCapture?.(ref)
      }
      const next = (envelope as any).next_cursor
      const advanced = next
        ? await session.advanceCursor(routeId, 'history', claim.token, next, read)
        : (await session.releaseCursor(routeId, 'history', claim.token), 'advanced')
      if (advanced !== 'advanced') failed.push('provider_unavailable')
      else routesOk++
    }
    const pending = await inbox.pendingCount()
    const receipt = (fields: Partial<TurnStartReceipt>): TurnStartReceipt => ({
      schema_version: 'loopx_turn_start_hook_receipt_v0',
      hook_id: input.hook_id,
      status: 'empty',
      error_code: null,
      agent_read_required: false,
      observations_new: 0,
      pending,
      direct_questions: 0,
      verified_replies: 0,
      routes_ok: routesOk,
      routes_failed: failed.length,
      reactions_added: 0,
      external_writes_performed: 0,
      ...fields,
    })
    const routeCode = ROUTE_CODE_ORDER.find((c) => failed.includes(c)) ?? null
    if (routesOk === 0 && routeCode) {
      // Nothing was read: the captured material waits for the next dispatch.
      return receipt({ status: routeCode as TurnStartReceipt['status'], error_code: routeCode })
    }
    const reads = await session.recordFirstReads(input.turn.turn_instance_id)
    let added = 0
    let writes = 0
    let reactionTrouble = false
    if (options.reactions && input.write_scopes.includes('provider_message_reaction')) {
      for (const m of await session.reactionCandidates(options.collectorId ?? input.hook_id, Math.max(0, attempts))) {
        const route = routes[m.routeId]!
        let begin = await session.beginReaction(m)
        if (begin === 'uncertain') {
          // Read back before any new create (fail closed otherwise).
          const present = await route.hasReaction(m.providerMessageId)
          await session.resolveReaction(m, present ? 'added' : 'failed')
          if (present) continue
          begin = await session.beginReaction(m)
        }
        if (begin !== 'proceed') continue
        writes++
        try {
          await route.react(m.providerMessageId)
          await session.finishReaction(m, 'added')
          added++
        } catch (e: any) {
          await session.finishReaction(m, e.status === 504 ? 'uncertain' : 'failed')
          reactionTrouble = true
        }
      }
    }
    const fields: Partial<TurnStartReceipt> = {
      agent_read_required: reads.pending > 0,
      observations_new: reads.observationsNew,
      pending: reads.pending,
      direct_questions: reads.directQuestions,
      verified_replies: reads.verifiedReplies,
      reactions_added: added,
      external_writes_performed: writes,
    }
    if (routeCode) return receipt({ ...fields, status: 'partial', error_code: routeCode })
    if (reactionTrouble) return receipt({ ...fields, status: 'partial', error_code: 'reaction_failed' })
    return receipt({ ...fields, status: reads.observationsNew > 0 ? 'ok' : 'empty' })
  }
  return { provider, log }
}

export const human = (id: string, text = `text of ${id}`, more: Partial<FakeMessage> = {}): FakeMessage => ({
  id,
  sender: { kind: 'human', id: `U_${id}`, displayName: `Person ${id}` },
  text,
  ...more,
})
