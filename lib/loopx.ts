/**
 * `loopx-hooks/loopx`: LoopX's own post-writeback hook transaction, served
 * by this package. LoopX's Python composition roots send
 * `capability_hook.post_writeback.transaction` to its Node runtime in two
 * phases (`preflight`, then `finalize` with the providers' outcomes); a
 * runtime that answers it with `evaluatePostWritebackHookTransaction` from
 * here adopts the package by swapping one handler. Admission, ids, the
 * sidecar receipts under `<runtime_root>/goals/<goal>/post_writeback_hooks/`
 * (LoopX's lock files honoured), intent-key reduction, the envelope and
 * keeping a journal in step are the addon's; this module only carries JSON
 * across and publishes what the journal did not take.
 */
import diagnostics_channel from 'node:diagnostics_channel'

import { evaluatePostWritebackTransaction } from './addon.js'
import { expectArgs, expectOptions } from './args.js'
import { LoopxHooksError } from './errors.js'
import { HookJournal, nativeOf } from './journal.js'

/** The `schema_version` of a transaction request. */
export const POST_WRITEBACK_HOOK_TRANSACTION_REQUEST_SCHEMA_VERSION = 'loopx_post_writeback_hook_transaction_request_v0'
/** The `schema_version` of a transaction result. */
export const POST_WRITEBACK_HOOK_TRANSACTION_RESULT_SCHEMA_VERSION = 'loopx_post_writeback_hook_transaction_result_v0'
/** The `schema_version` of the source a request carries. */
export const POST_WRITEBACK_HOOK_SOURCE_SCHEMA_VERSION = 'loopx_post_writeback_hook_source_v0'

/** The channel a receipt the journal did not take is published on. */
export const TRANSACTION_JOURNAL_CHANNEL = 'loopx-hooks:transaction-journal'

/** A JSON object, as LoopX's runtime passes documents. */
type JsonObject = Record<string, unknown>

/** What `evaluatePostWritebackHookTransaction` takes beside the request. */
export interface TransactionOptions {
  /**
   * A journal kept in step with the sidecar folder: after the transaction,
   * each admitted hook's receipt, as the folder holds it, is imported into
   * it (its rows, replays and outbox follow the folder).
   */
  journal?: HookJournal
}

/**
 * A `loopx-hooks:transaction-journal` message: one receipt the journal did
 * not take; the transaction's answer stands (the folder is the store).
 */
export interface TransactionJournalMessage {
  /** The hook's dispatch whose receipt the journal did not take. */
  dispatchId: string
  /** `conflict` (the journal holds another receipt), `journal_failed` or `invalid_receipt`. */
  outcome: string
  /** The journal's error code, for `journal_failed`. */
  code?: string
}

const channel = diagnostics_channel.channel(TRANSACTION_JOURNAL_CHANNEL)

const METHOD = 'evaluatePostWritebackHookTransaction'

/** The request as JSON text; a request that is no JSON object is the caller's misuse. */
function requestText(request: unknown): string {
  // Not the runtime's own check: a transaction's documents nest deeper than 127 levels.
  expectArgs(METHOD, { request: [request, 'object'] })
  try {
    return JSON.stringify(request)
  } catch {
    throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', `${METHOD}: invalid argument: request (a JSON value)`)
  }
}

/**
 * Evaluates one `loopx_post_writeback_hook_transaction_request_v0` and
 * resolves to its `loopx_post_writeback_hook_transaction_result_v0`. A
 * request that breaks the protocol rejects with a `LoopxHooksError`
 * (`ERR_LOOPX_TRANSACTION_INVALID`, `..._SOURCE_INVALID`, `..._ENVELOPE`,
 * `..._TOO_DEEP`) whose message is LoopX's; everything about one hook is a
 * failure inside the answered dispatch. A request that is no JSON object,
 * or options of the wrong kind, throw `ERR_LOOPX_INVALID_ARGUMENT`.
 */
export async function evaluatePostWritebackHookTransaction(
  request: unknown,
  options: TransactionOptions = {},
): Promise<JsonObject> {
  const text = requestText(request)
  const { journal } = expectOptions(METHOD, 'options', options, { journal: 'object?' })
  if (journal === undefined) return JSON.parse(await evaluatePostWritebackTransaction(text)) as JsonObject
  if (!(journal instanceof HookJournal)) {
    throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', `${METHOD}: invalid argument: journal (a HookJournal)`)
  }
  const answer = JSON.parse(await nativeOf(journal).evaluatePostWritebackTransaction(text)) as {
    result: JsonObject
    journal: TransactionJournalMessage[]
  }
  for (const step of answer.journal) {
    if (step.outcome !== 'imported' && step.outcome !== 'already_present' && channel.hasSubscribers) {
      channel.publish(step)
    }
  }
  return answer.result
}
