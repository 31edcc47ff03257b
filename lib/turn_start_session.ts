/**
 * `TurnStartSession`: the owner-private inbox as one turn-start invocation
 * may use it. The kernel hands one to each
 * provider call when it has an inbox store (`TurnStartKernel({ inbox })`);
 * core grants only the registration's write scopes, counts route reads and
 * reaction attempts against the dispatch's budget, and refuses every call
 * once the invocation is over. First reads, cursor writes and reactions
 * exist only here: the `InboxStore` itself has none of them.
 */
import type { NativeTurnStartSession } from '../index.js'
import type {
  AdvanceOutcome,
  CaptureInput,
  CaptureOutcome,
  ClaimOutcome,
  CursorKind,
  FirstReads,
  MessageRef,
  ReactionBegin,
  ReactionFinish,
  ReactionResult,
} from '../bindings/index'
import { answer, inboxArgs } from './inbox.js'

/**
 * Makes the session of one invocation: how the kernel's wrapper makes a
 * `TurnStartSession`. The constructor is private so that a user cannot make
 * one that no invocation holds.
 *
 * @internal
 */
export let sessionOf: (native: NativeTurnStartSession) => TurnStartSession

/**
 * One turn-start invocation's view of the owner-private inbox, handed to
 * its provider as `context.session` when the kernel has an inbox. Every
 * method rejects with `ERR_LOOPX_SCOPE_NOT_GRANTED` for a write the
 * registration's write scopes do not grant, `ERR_LOOPX_BUDGET_EXHAUSTED`
 * past the dispatch's budget, `ERR_LOOPX_SESSION_CLOSED` once the
 * invocation is over, `ERR_LOOPX_INVALID_ARGUMENT` for an argument that is
 * not what the signature says, and the inbox's own codes (see `InboxStore`).
 */
export class TurnStartSession {
  readonly #native: NativeTurnStartSession

  static {
    sessionOf = (native) => new TurnStartSession(native)
  }

  /** Made by the kernel for one invocation. */
  private constructor(native: NativeTurnStartSession) {
    this.#native = native
  }

  /**
   * Declares one external read of a route before it is made: one attempt of
   * `max_attempts_per_dispatch`, and a new route one of `max_routes`; past
   * either, `ERR_LOOPX_BUDGET_EXHAUSTED` and the read must not be made.
   */
  readRoute(routeId: string): Promise<void> {
    return answer(() => this.#native.readRoute(inboxArgs('readRoute', { routeId })))
  }

  /** A turn-start capture (`owner_private_inbox`); a `collector` capture is refused. */
  capture(input: CaptureInput): Promise<CaptureOutcome> {
    return answer(() => this.#native.capture(inboxArgs('capture', { input })))
  }

  /** First Agent-read receipts for every unread pending message, once each; the counts for the receipt. */
  recordFirstReads(readRef: string): Promise<FirstReads> {
    return answer(() => this.#native.recordFirstReads(inboxArgs('recordFirstReads', { readRef })))
  }

  /** Cursor writes need `owner_private_cursor`. */
  claimCursor(scope: string, kind: CursorKind, leaseMs: number): Promise<ClaimOutcome> {
    return answer(() => this.#native.claimCursor(inboxArgs('claimCursor', { scope, kind, leaseMs })))
  }

  /**
   * Advances a claimed cursor once every message in `read` is in the inbox,
   * reads the value back and releases the claim: `advanced`, or why not.
   */
  advanceCursor(
    scope: string,
    kind: CursorKind,
    token: string,
    value: string,
    read: MessageRef[],
  ): Promise<AdvanceOutcome> {
    return answer(() => this.#native.advanceCursor(inboxArgs('advanceCursor', { scope, kind, token, value, read })))
  }

  /** Releases a cursor claim without advancing it; `false` when `token` no longer holds it. */
  releaseCursor(scope: string, kind: CursorKind, token: string): Promise<boolean> {
    return answer(() => this.#native.releaseCursor(inboxArgs('releaseCursor', { scope, kind, token })))
  }

  /** Reactions need `provider_message_reaction`; each `beginReaction` is one attempt. */
  reactionCandidates(collectorId: string, max: number): Promise<MessageRef[]> {
    return answer(() => this.#native.reactionCandidates(inboxArgs('reactionCandidates', { collectorId, max })))
  }

  /** Records an attempt before the provider creates a reaction; only `proceed` admits the create. */
  beginReaction(message: MessageRef): Promise<ReactionBegin> {
    return answer(() => this.#native.beginReaction(inboxArgs('beginReaction', { message })))
  }

  /** Records how a begun reaction attempt ended. */
  finishReaction(message: MessageRef, result: ReactionResult): Promise<ReactionFinish> {
    return answer(() => this.#native.finishReaction(inboxArgs('finishReaction', { message, result })))
  }

  /** Settles an uncertain attempt after a provider readback. */
  resolveReaction(message: MessageRef, result: ReactionResult): Promise<ReactionFinish> {
    return answer(() => this.#native.resolveReaction(inboxArgs('resolveReaction', { message, result })))
  }
}
