// Core's turn-start enforcement on both paths: the contract-v0
// `TurnStartKernel` and `ShippedTurnStart`, the path LoopX runs, given the
// same owner-private inbox. The same table runs over both: a provider that
// fails, hangs or under-reports while pending material is in the inbox
// still leaves the Agent its read, and a private write the store did not
// commit (another connection holds the write lock, the store is closed
// mid-call) is never published as success or as a read the store does not
// hold. The rules are tested where they live, in
// src/turn_start/tests/kernel/session/writes.rs and
// src/dialect/shipped/turn_start/tests/kernel.rs.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

import { afterAll, describe, expect, it } from 'vitest'

import {
  InboxStore,
  ShippedTurnStart,
  TurnStartKernel,
  validateShippedTurnStartDispatch,
  validateTurnStartReceipt,
  type CaptureInput,
  type ShippedTurnStartRegistrationV1,
  type ShippedTurnStartResult,
  type TurnStartHookRegistration,
  type TurnStartReceipt,
  type TurnStartSession,
} from '../lib/index.js'

const dir = mkdtempSync(join(tmpdir(), 'loopx-two-paths-'))
const stores: InboxStore[] = []
const lockers: Locker[] = []
afterAll(async () => {
  for (const l of lockers) await l.stop()
  for (const s of stores) await s.close().catch(() => undefined)
  rmSync(dir, { recursive: true, force: true })
})
let files = 0

const LOCKER = join(dirname(fileURLToPath(import.meta.url)), 'children', 'write-locker.mjs')
const COMMAND = 'loopx inbox read --pending'
/** The hooks' limit; a row that hangs waits this out, so it is short there. */
const LIMIT_MS = 5_000
const HANG_LIMIT_MS = 300

/** What a provider answers, in neither dialect's words. */
type Answer =
  | { kind: 'throw' }
  | { kind: 'hang' }
  | { kind: 'status'; status: 'ok' | 'empty' | 'failed' | 'unavailable'; observations?: number; questions?: number }

/** What a path published for its one hook. */
interface Seen {
  /** The commands the Agent must read before work. */
  reads: string[]
  lane: string
  /** The published status, or the failure code that isolated the hook. */
  status: string
  errorCode: string | null
  observations: number
  questions: number | null
}

interface Path {
  name: string
  dispatch(
    inbox: InboxStore,
    provider: (session: TurnStartSession | undefined) => Promise<Answer>,
    limitMs?: number,
  ): Promise<Seen>
}

const v0Registration: TurnStartHookRegistration = {
  schema_version: 'loopx_turn_start_capability_hook_registration_v0',
  hook_id: 'team_inbox.turn_start_read',
  capability_id: 'team_inbox',
  phase: 'turn_start',
  required_read: { command: COMMAND },
  write_scopes: ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction'],
  budget: { timeout_ms: LIMIT_MS, max_attempts_per_dispatch: 8, max_routes: 4 },
  failure_policy: 'isolate',
}

function v0Receipt(answer: Extract<Answer, { kind: 'status' }>): TurnStartReceipt {
  const observations = answer.observations ?? 0
  const failed = answer.status === 'failed' || answer.status === 'unavailable'
  const status =
    answer.status === 'failed'
      ? 'provider_contract_error'
      : answer.status === 'unavailable'
        ? 'provider_unavailable'
        : answer.status
  return {
    schema_version: 'loopx_turn_start_hook_receipt_v0',
    hook_id: v0Registration.hook_id,
    status,
    error_code: failed ? (status as TurnStartReceipt['error_code']) : null,
    agent_read_required: observations > 0,
    observations_new: observations,
    pending: observations,
    direct_questions: answer.questions ?? 0,
    verified_replies: 0,
    routes_ok: failed ? 0 : 1,
    routes_failed: 0,
    reactions_added: 0,
    external_writes_performed: 0,
  }
}

const shippedRegistration: ShippedTurnStartRegistrationV1 = {
  schema_version: 'loopx_turn_start_capability_hook_registration_v1',
  hook_id: 'team_inbox.turn_start',
  capability_id: 'team-inbox',
  phase: 'turn_start',
  budget: { max_invocations_per_dispatch: 1, max_result_bytes: 16384 },
  failure_policy: 'isolate',
  requested_read_scope: [],
  requested_write_scope: ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction'],
  required_read: { kind: 'team_inbox_drain', command: COMMAND, reason: 'Fresh messages.', ordering: 'before_work' },
}

function shippedResult(answer: Extract<Answer, { kind: 'status' }>): ShippedTurnStartResult {
  const observations = answer.observations ?? 0
  const status = answer.status === 'ok' ? 'observed' : answer.status
  const failed = status === 'failed' || status === 'unavailable'
  return {
    schema_version: 'loopx_turn_start_capability_hook_result_v0',
    hook_id: shippedRegistration.hook_id,
    capability_id: shippedRegistration.capability_id,
    phase: 'turn_start',
    status,
    observation_count: observations,
    agent_read_required: observations > 0,
    external_reads_performed: !failed,
    external_writes_performed: false,
    local_private_state_mutated: observations > 0,
    private_content_returned: false,
    provider_payload_returned: false,
    error_code: failed ? `provider_${status === 'failed' ? 'contract_error' : 'unavailable'}` : null,
  }
}

/** A provider's answer as a promise that never settles, throws, or resolves to `make(answer)`. */
async function settle<T>(answer: Answer, make: (a: Extract<Answer, { kind: 'status' }>) => T): Promise<T> {
  if (answer.kind === 'hang') return new Promise<T>(() => undefined)
  if (answer.kind === 'throw') throw new Error('provider failed')
  return make(answer)
}

const PATHS: Path[] = [
  {
    name: 'contract-v0 TurnStartKernel',
    async dispatch(inbox, provider, limitMs = LIMIT_MS) {
      const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
      kernel.register({
        registration: { ...v0Registration, budget: { ...v0Registration.budget, timeout_ms: limitMs } },
        provider: async (_input, { session }) => settle(await provider(session), v0Receipt),
      })
      const outcome = await kernel.dispatchTurnStart({
        turn: { goal_id: 'goal_1', agent_id: 'agent_1', turn_instance_id: `turn_${++files}` },
        quota: { max_units: 1 },
      })
      const receipt = outcome.hooks[0]!.receipt
      expect(validateTurnStartReceipt(receipt).ok).toBe(true)
      return {
        reads: [...new Set(outcome.requiredReads.map((r) => r.command))],
        lane: outcome.lane.reason,
        status: receipt.status,
        errorCode: receipt.error_code,
        observations: receipt.observations_new,
        questions: receipt.direct_questions,
      }
    },
  },
  {
    name: 'loopx-shipped-v0 ShippedTurnStart',
    async dispatch(inbox, provider, limitMs = LIMIT_MS) {
      const turnStart = new ShippedTurnStart({ inbox, callLimitMs: limitMs })
      turnStart.register({
        registration: shippedRegistration,
        provider: async (_registration, { session }) => settle(await provider(session), shippedResult),
      })
      const { document, requiredReads, lane } = await turnStart.dispatch()
      expect(validateShippedTurnStartDispatch(document).ok).toBe(true)
      const result = document.results[0]
      return {
        reads: requiredReads.map((r) => r.command),
        lane: lane.reason,
        status: result?.status ?? document.failures[0]!.error_code,
        errorCode: result?.error_code ?? null,
        observations: result?.observation_count ?? 0,
        questions: null,
      }
    },
  },
]

async function openInbox(options: { busyTimeoutMs?: number } = {}): Promise<{ inbox: InboxStore; path: string }> {
  const path = join(dir, `inbox-${++files}.sqlite`)
  const inbox = await InboxStore.open(path, options)
  stores.push(inbox)
  return { inbox, path }
}

function message(id: string, attention: CaptureInput['attention'] = 'ordinary'): CaptureInput {
  return {
    routeId: 'team_chat',
    providerMessageId: id,
    source: 'turn_start',
    sender: { kind: 'human', verifiedIdentity: null },
    attention,
    payload: { text: `private ${id}` },
  }
}

/** An earlier turn read one message through its session; nobody acknowledged it. */
async function readAndPending(inbox: InboxStore): Promise<void> {
  const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
  kernel.register({
    registration: { ...v0Registration, hook_id: 'primer.turn_start_read', capability_id: 'primer' },
    provider: async (input, { session }) => {
      await session!.capture(message('m0'))
      const { observationsNew, pending } = await session!.recordFirstReads('turn_0')
      return {
        ...v0Receipt({ kind: 'status', status: 'ok', observations: observationsNew }),
        hook_id: input.hook_id,
        pending,
      }
    },
  })
  await kernel.dispatchTurnStart({
    turn: { goal_id: 'goal_1', agent_id: 'agent_1', turn_instance_id: 'turn_0' },
    quota: { max_units: 1 },
  })
  expect(await inbox.pendingCount()).toBe(1)
}

/** Another process, started ahead, that holds the inbox's write lock on request. */
class Locker {
  readonly #child: ChildProcessWithoutNullStreams
  readonly #lines: AsyncIterator<string>

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.#child = child
    this.#lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  }

  static async start(path: string): Promise<Locker> {
    const locker = new Locker(spawn(process.execPath, [LOCKER, path]))
    expect(await locker.#next()).toBe('ready')
    return locker
  }

  async #next(): Promise<string | undefined> {
    return (await this.#lines.next()).value as string | undefined
  }

  /** Runs `body` while the lock is held. */
  async holding<T>(body: () => Promise<T>): Promise<T> {
    this.#child.stdin.write('lock\n')
    expect(await this.#next()).toBe('locked')
    try {
      return await body()
    } finally {
      this.#child.stdin.write('unlock\n')
      expect(await this.#next()).toBe('unlocked')
    }
  }

  async stop(): Promise<void> {
    const exited = once(this.#child, 'exit')
    this.#child.stdin.end()
    await exited
  }
}

/** A fresh inbox that gives up on a held write lock after 50 ms, with its locker. */
async function lockable(): Promise<{ inbox: InboxStore; locker: Locker }> {
  const { inbox, path } = await openInbox({ busyTimeoutMs: 50 })
  const locker = await Locker.start(path)
  lockers.push(locker)
  return { inbox, locker }
}

const FAILING: [string, (session: TurnStartSession | undefined) => Promise<Answer>][] = [
  ['throws', async () => ({ kind: 'throw' })],
  ['hangs', async () => ({ kind: 'hang' })],
  ['answers failed', async () => ({ kind: 'status', status: 'failed' })],
  ['answers unavailable', async () => ({ kind: 'status', status: 'unavailable' })],
  ['answers empty', async () => ({ kind: 'status', status: 'empty' })],
  [
    'under-counts the first reads it made',
    async (session) => {
      await session!.capture(message('m1'))
      await session!.recordFirstReads('turn_1')
      return { kind: 'status', status: 'empty' }
    },
  ],
]

describe.each(PATHS)('$name', (path) => {
  it.each(FAILING)(
    'a provider that %s while material is pending still leaves the Agent its read',
    async (name, provider) => {
      const { inbox } = await openInbox()
      await readAndPending(inbox)
      const seen = await path.dispatch(inbox, provider, name === 'hangs' ? HANG_LIMIT_MS : LIMIT_MS)
      expect(seen.reads).toEqual([COMMAND])
      expect(seen.lane).not.toBe('nothing_to_read')
    },
  )

  it('failed first reads are partial, claim no read, and the captured message keeps its read', async () => {
    const { inbox, locker } = await lockable()
    const seen = await path.dispatch(inbox, async (session) => {
      await session!.capture(message('m1', 'direct_question'))
      const failed = await locker.holding(() =>
        session!.recordFirstReads('turn_1').catch((e: { code: string }) => e.code),
      )
      expect(failed).toBe('ERR_LOOPX_INBOX_BUSY')
      return { kind: 'status', status: 'ok', observations: 1, questions: 1 }
    })
    expect([seen.status, seen.errorCode, seen.observations]).toEqual(['partial', 'private_receipt_failed', 0])
    expect(seen.questions ?? 0).toBe(0)
    expect(seen.reads).toEqual([COMMAND])
    expect(await inbox.pending()).toHaveLength(1)
  })

  it('a failed capture is partial, not empty', async () => {
    const { inbox, locker } = await lockable()
    const seen = await path.dispatch(inbox, async (session) => {
      await locker.holding(() => session!.capture(message('m1')).catch(() => undefined))
      return { kind: 'status', status: 'empty' }
    })
    expect([seen.status, seen.errorCode]).toEqual(['partial', 'private_receipt_failed'])
    expect(await inbox.pendingCount()).toBe(0)
  })

  it('a failed cursor advance is partial, not a success', async () => {
    const { inbox, locker } = await lockable()
    const seen = await path.dispatch(inbox, async (session) => {
      await session!.capture(message('m1'))
      const { observationsNew } = await session!.recordFirstReads('turn_1')
      const claim = await session!.claimCursor('team_chat', 'history', 1000)
      if (claim.outcome !== 'claimed') throw new Error('not claimed')
      const ref = { routeId: 'team_chat', providerMessageId: 'm1' }
      await locker.holding(() =>
        session!.advanceCursor('team_chat', 'history', claim.token, 'c1', [ref]).catch(() => undefined),
      )
      return { kind: 'status', status: 'ok', observations: observationsNew }
    })
    expect([seen.status, seen.errorCode, seen.observations]).toEqual(['partial', 'private_receipt_failed', 1])
    expect(seen.reads).toEqual([COMMAND])
    expect(await inbox.cursor('team_chat', 'history')).toBeNull()
  })

  it('a store closed mid-call claims nothing it did not persist, and the read stays', async () => {
    const { inbox } = await openInbox()
    const seen = await path.dispatch(inbox, async (session) => {
      await session!.capture(message('m1', 'direct_question'))
      await inbox.close()
      await session!.recordFirstReads('turn_1').catch(() => undefined)
      return { kind: 'status', status: 'ok', observations: 1, questions: 1 }
    })
    expect([seen.status, seen.errorCode, seen.observations]).toEqual(['partial', 'private_receipt_failed', 0])
    expect(seen.questions ?? 0).toBe(0)
    expect(seen.reads).toEqual([COMMAND])
    expect(seen.lane).toBe('standing_unknown')
  })
})
