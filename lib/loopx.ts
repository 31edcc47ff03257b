/**
 * `loopx-hooks/loopx`: LoopX's own post-writeback hook transaction, served
 * by this package. LoopX's Python composition roots send
 * `capability_hook.post_writeback.transaction` to its Node runtime in two
 * phases (`preflight`, then `finalize` with the providers' outcomes); a
 * runtime that answers it with `evaluatePostWritebackHookTransaction` from
 * here adopts the package by swapping one handler. Admission, ids, the
 * sidecar receipts under `<runtime_root>/goals/<goal>/post_writeback_hooks/`
 * (LoopX's lock files honoured), intent-key reduction and the envelope are
 * the addon's; this module only carries JSON across.
 */
import { evaluatePostWritebackTransaction } from './addon.js'
import { LoopxHooksError } from './errors.js'

export const POST_WRITEBACK_HOOK_TRANSACTION_REQUEST_SCHEMA_VERSION = 'loopx_post_writeback_hook_transaction_request_v0'
export const POST_WRITEBACK_HOOK_TRANSACTION_RESULT_SCHEMA_VERSION = 'loopx_post_writeback_hook_transaction_result_v0'
export const POST_WRITEBACK_HOOK_SOURCE_SCHEMA_VERSION = 'loopx_post_writeback_hook_source_v0'

/** A JSON object, as LoopX's runtime passes documents. */
export type JsonObject = Record<string, unknown>

/**
 * Evaluates one `loopx_post_writeback_hook_transaction_request_v0` and
 * resolves to its `loopx_post_writeback_hook_transaction_result_v0`. A
 * request that breaks the protocol rejects with a `LoopxHooksError`
 * (`ERR_LOOPX_TRANSACTION_INVALID`, `..._SOURCE_INVALID`, `..._ENVELOPE`,
 * `..._TOO_DEEP`) whose message is LoopX's; everything about one hook is a
 * failure inside the answered dispatch.
 */
export async function evaluatePostWritebackHookTransaction(request: unknown): Promise<JsonObject> {
  let text: string | undefined
  try {
    text = JSON.stringify(request)
  } catch {
    text = undefined
  }
  if (typeof text !== 'string' || request === null || typeof request !== 'object' || Array.isArray(request)) {
    throw new LoopxHooksError(
      'ERR_LOOPX_TRANSACTION_INVALID',
      'post-writeback hook transaction request must be a JSON object',
    )
  }
  return JSON.parse(await evaluatePostWritebackTransaction(text)) as JsonObject
}
