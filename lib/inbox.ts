/**
 * `InboxStore`: the owner-private inbox that turn-start providers use. Its
 * own SQLite file, never the public journal: captured messages and their
 * private payloads, first Agent-read receipts, dispositions and effect
 * bindings, acknowledgement reactions and provider cursors. Nothing from it
 * belongs in a public receipt except the counts a session's
 * `recordFirstReads` returns.
 *
 * Its surface is split by who holds it: the store is the owner's (the
 * private drain, dispositions, ACK, retention); `InboxCollector` can only
 * capture as realtime collection; first reads, cursor writes and reactions
 * exist only on a `TurnStartSession`, under its registration's write scopes
 * and budget. Every rule is in the Rust addon; this layer adds types.
 */
import { openNativeInbox, type NativeInboxCollector, type NativeInboxStore } from './addon.js'
import type {
  AckOutcome,
  CaptureInput,
  CaptureOutcome,
  CursorKind,
  DisposeOutcome,
  Disposition,
  MessageRef,
  PendingMessage,
  RetentionCounts,
} from '../bindings/index'
import { expectArgs, expectMembers, expectOptions, type Kind } from './args.js'
import { LoopxHooksError } from './errors.js'

/** How `InboxStore.open` opens the inbox. */
export interface InboxOptions {
  /** The configured profile's own identity, exactly as the provider verifies senders. */
  selfIdentity?: string
  /**
   * How long to wait for another process's write lock (ms) before `ERR_LOOPX_INBOX_BUSY`.
   * @default 5000
   */
  busyTimeoutMs?: number
  /**
   * How long a begun reaction attempt that has not finished counts as in
   * flight (`in_flight`) before it is uncertain and due for a readback (ms).
   * @default 60000
   */
  attemptStaleMs?: number
  /**
   * How long an acknowledged message keeps its private payload. After it the
   * payload is purged (on the next first reads, ACK or `purgeExpired()`); the
   * message's row and its receipts, and so every count, are kept (ms);
   * 0 purges at the next such write.
   * @default 604800000 (7 days)
   */
  retentionMs?: number
}

/** The native store behind each InboxStore, for the kernel to attach (not exported from the package). */
const natives = new WeakMap<InboxStore, NativeInboxStore>()

export function nativeInboxOf(store: InboxStore): NativeInboxStore {
  const found = natives.get(store)
  if (found === undefined) throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', 'inbox is not an InboxStore')
  return found
}

const OPTION_MEMBERS: Record<keyof InboxOptions, Kind> = {
  selfIdentity: 'string?',
  busyTimeoutMs: 'number?',
  attemptStaleMs: 'number?',
  retentionMs: 'number?',
}
const MESSAGE_REF: Record<keyof MessageRef, Kind> = { routeId: 'string', providerMessageId: 'string' }

/** The kind of each argument an inbox operation takes, by its name (the store's and a session's alike). */
const INBOX_ARGS: Record<string, Kind> = {
  input: 'object',
  message: 'object',
  read: 'array',
  readRef: 'string',
  routeId: 'string',
  disposition: 'string',
  collectorId: 'string',
  max: 'number',
  result: 'string',
  scope: 'string',
  kind: 'string',
  leaseMs: 'number',
  token: 'string',
  value: 'string',
}

/**
 * Checks an inbox operation's arguments for their kind, and each message
 * reference's members, before they cross as JSON; the addon judges their values.
 */
export function checkInboxArgs(op: string, args: Record<string, unknown>): void {
  expectArgs(
    op,
    Object.fromEntries(
      Object.keys(args)
        .filter((name) => name in INBOX_ARGS)
        .map((name) => [name, [args[name], INBOX_ARGS[name]!] as const]),
    ),
  )
  const refs = args.message !== undefined ? [args.message] : Array.isArray(args.read) ? args.read : []
  for (const ref of refs) expectMembers(op, 'message', ref as MessageRef, MESSAGE_REF, 'object')
}

/** `args` of `op`, their kinds checked, as the JSON text the addon reads. */
export function inboxArgs(op: string, args: Record<string, unknown>): string {
  checkInboxArgs(op, args)
  return JSON.stringify(args)
}

/** The parsed JSON text `call` resolves to; a throw in `call` is a rejection. */
export async function answer<T>(call: () => Promise<string>): Promise<T> {
  return JSON.parse(await call()) as T
}

/**
 * The owner-private inbox of a turn-start provider: its own SQLite file,
 * as its owner (the Agent side) holds it. It neither captures nor records
 * first reads, cursor writes or reactions: a realtime collector captures
 * through `collector()`, and a turn-start provider does the rest through
 * its `context.session`, which core bounds by the registration's write
 * scopes and budget. Every method rejects with `ERR_LOOPX_INVALID_ARGUMENT` for an argument
 * that is not what the signature says, `ERR_LOOPX_INBOX_CLOSED` after
 * `close`, and `ERR_LOOPX_INBOX_BUSY`, `ERR_LOOPX_INBOX_READONLY`,
 * `ERR_LOOPX_INBOX_IO` or `ERR_LOOPX_INBOX_SQLITE` when the file fails it.
 *
 * @example
 * ```ts
 * const inbox = await InboxStore.open('inbox.db', { selfIdentity: 'agent@example' })
 * console.log(await inbox.pendingCount())
 * await inbox.close()
 * ```
 */
export class InboxStore implements AsyncDisposable {
  readonly #native: NativeInboxStore

  private constructor(store: NativeInboxStore) {
    this.#native = store
    natives.set(this, store)
  }

  /**
   * Opens (creating on first use) the inbox file; refuses any other file, the public journal included.
   *
   * @param path - the inbox's SQLite file.
   * @param options - see `InboxOptions`.
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for arguments that are not what the
   *   signature says; `ERR_LOOPX_NOT_AN_INBOX` for another file (a journal
   *   included); `ERR_LOOPX_INBOX_TOO_NEW` for an inbox of a newer package;
   *   `ERR_LOOPX_NOT_A_FILE`, `ERR_LOOPX_INBOX_IO`, `ERR_LOOPX_INBOX_SQLITE`.
   */
  static async open(path: string, options?: InboxOptions): Promise<InboxStore> {
    expectArgs('InboxStore.open', { path: [path, 'string'] })
    const o = expectOptions('InboxStore.open', 'options', options, OPTION_MEMBERS)
    return new InboxStore(await openNativeInbox(path, o))
  }

  /**
   * A capture-only handle for a realtime collector: give the collector this,
   * not the store. It shares the store's file and is closed with it.
   */
  collector(): InboxCollector {
    return collectorOf(this.#native.collector())
  }

  /** Whether the message is in the inbox (readback before a cursor advance). */
  contains(message: MessageRef): Promise<boolean> {
    return answer(() => this.#native.contains(inboxArgs('contains', { message })))
  }

  /** How many captured messages are pending (not yet acknowledged). */
  pendingCount(): Promise<number> {
    return answer(() => this.#native.pendingCount())
  }

  /** The private drain: pending messages after `after` (a seq), oldest first; limit 1..=1000, default 100. */
  pending(query?: { after?: number; limit?: number }): Promise<PendingMessage[]> {
    query = expectOptions('pending', 'query', query, { after: 'number?', limit: 'number?' })
    return answer(() =>
      this.#native.pending(inboxArgs('pending', { after: query.after ?? null, limit: query.limit ?? null })),
    )
  }

  /** Records the Agent's disposition, with its durable effect receipt when it has one. */
  dispose(message: MessageRef, disposition: Disposition, effectReceiptId?: string): Promise<DisposeOutcome> {
    expectArgs('dispose', { effectReceiptId: [effectReceiptId, 'string?'] })
    return answer(() =>
      this.#native.dispose(inboxArgs('dispose', { message, disposition, effectReceiptId: effectReceiptId ?? null })),
    )
  }

  /** Acknowledges: refused until read, disposed and (when material) bound to an effect receipt. */
  ack(message: MessageRef): Promise<AckOutcome> {
    return answer(() => this.#native.ack(inboxArgs('ack', { message })))
  }

  /** Purges the payloads of acknowledged messages past retention now; how many were purged. */
  purgeExpired(): Promise<number> {
    return answer(() => this.#native.purgeExpired())
  }

  /** Acknowledged messages by whether their private payload is still kept (counts only). */
  retentionCounts(): Promise<RetentionCounts> {
    return answer(() => this.#native.retentionCounts())
  }

  /** A provider cursor's stored value, `null` before its first advance. */
  cursor(scope: string, kind: CursorKind): Promise<string | null> {
    return answer(() => this.#native.cursor(inboxArgs('cursor', { scope, kind })))
  }

  /** Closes the inbox; later calls reject with `ERR_LOOPX_INBOX_CLOSED`. */
  close(): Promise<void> {
    return this.#native.close()
  }

  /** `await using inbox = …` closes it at the end of the block: the same as `close()`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}

/** Makes an `InboxCollector` over a native one; its constructor stays private. */
let collectorOf: (native: NativeInboxCollector) => InboxCollector

/**
 * A realtime collector's handle on the owner-private inbox, from
 * `InboxStore.collector()`: it can only capture, as realtime collection
 * (`source: "collector"`). It cannot record first reads, write cursors or
 * react, so realtime collection cannot spend the reaction scope. `capture`
 * rejects with `ERR_LOOPX_INVALID_ARGUMENT` naming the member for a source
 * other than `"collector"` (a turn-start capture goes through a session),
 * `ERR_LOOPX_INBOX_CLOSED` once the store is closed, and the store's other
 * codes when the file fails it.
 *
 * @example
 * ```ts
 * const collector = inbox.collector()
 * await collector.capture({
 *   routeId: 'C1',
 *   providerMessageId: '1700000000.000100',
 *   source: 'collector',
 *   sender: { kind: 'human', verifiedIdentity: 'U123' },
 *   attention: 'ordinary',
 *   payload: { text: 'hello' },
 * })
 * ```
 */
export class InboxCollector {
  readonly #native: NativeInboxCollector

  static {
    collectorOf = (native) => new InboxCollector(native)
  }

  /** Made by `InboxStore.collector()`. */
  private constructor(native: NativeInboxCollector) {
    this.#native = native
  }

  /** Captures a message, collapsing a repeat of its provider message identity; applies the self filter. */
  capture(input: CaptureInput): Promise<CaptureOutcome> {
    return answer(() => this.#native.capture(inboxArgs('capture', { input })))
  }
}
