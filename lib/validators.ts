/**
 * The document validators, fast path. The rules all live in
 * the addon; this layer only decides how a document crosses:
 * - a registration given as context is parsed and digested once per object
 *   (a `HookContext`, cached by the object and re-made when its JSON text
 *   changes, so mutating it afterwards is seen) or per text;
 * - a JS object crosses as ONE JSON text when a quick walk (plain_json.ts) finds nothing
 *   JSON.stringify would hide or change (a hole, a function, a non-finite or
 *   unsafe number, a cycle, a class instance, a Proxy, toJSON, nesting past
 *   127); on any doubt it goes to the addon's exact walk, which reports each
 *   `not_json_value` at its path. Both give the same verdict, and an accepted
 *   object comes back as the very object given.
 */
import * as addon from './addon.js'
import type { ValidationResult } from '../index.js'
import { expectKinds } from './addon_api.js'
import { expectArgs } from './args.js'
import { acceptedRegistration } from './fast_path.js'
import { NOT_PLAIN, plainJsonSize } from './plain_json.js'
import type { PostWritebackHookInput, PostWritebackHookRegistration, PostWritebackHookResult } from '../bindings/index'
import type { DeepReadonly } from './readonly.js'

/** The JSON text of `doc` when it may cross as text; undefined to use the exact walk. */
function fastText(doc: unknown): string | undefined {
  if (doc === null || typeof doc !== 'object') return undefined
  try {
    return plainJsonSize(doc) === NOT_PLAIN ? undefined : JSON.stringify(doc)
  } catch {
    // A getter that throws: the exact walk reports it at its path.
    return undefined
  }
}

interface Compiled {
  text: string
  context: addon.HookContext
}
const byObject = new WeakMap<object, Compiled>()
const byText = new Map<string, addon.HookContext>()
const TEXT_CACHE = 64

/**
 * The compiled context of `registration`, or undefined when it cannot be
 * compiled here (not JSON, or a shape the addon refuses: the addon's own
 * call then throws its coded error).
 */
function compiled(registration: unknown): addon.HookContext | undefined {
  try {
    if (typeof registration === 'string') {
      let context = byText.get(registration)
      if (context === undefined) {
        context = new addon.HookContext(registration)
        if (byText.size >= TEXT_CACHE) byText.delete(byText.keys().next().value!)
        byText.set(registration, context)
      }
      return context
    }
    if (registration === null || typeof registration !== 'object') return undefined
    const text = fastText(registration)
    if (text === undefined) return undefined
    const hit = byObject.get(registration)
    if (hit !== undefined && hit.text === text) return hit.context
    const context = new addon.HookContext(text)
    byObject.set(registration, { text, context })
    return context
  } catch {
    return undefined
  }
}

type Context = DeepReadonly<PostWritebackHookRegistration> | string | addon.HookContext

function contextOf(registration: Context): addon.HookContext | undefined {
  return registration instanceof addon.HookContext ? registration : compiled(registration)
}

/**
 * A registration against the defined intent kinds.
 *
 * @returns the verdict: a bad document is `{ ok: false, violations }`, never a throw.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when `kinds` is not an `IntentKinds`.
 */
export function validateRegistration(
  doc: unknown,
  kinds: addon.IntentKinds,
): ValidationResult<PostWritebackHookRegistration> {
  expectKinds('validateRegistration', kinds)
  const accepted = acceptedRegistration(doc, kinds)
  if (accepted !== undefined) return { ok: true, value: accepted }
  const text = fastText(doc)
  if (text === undefined) return addon.validateRegistration(doc, kinds)
  return addon.checkRegistrationText(text, kinds) ?? { ok: true, value: doc as PostWritebackHookRegistration }
}

/**
 * A hook input against the registration it was built for (an object, its text, or a `HookContext`).
 *
 * @returns the verdict: a bad document is `{ ok: false, violations }`, never a throw.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when the registration (the context the
 *   document is judged in, not the document) does not have the registration
 *   contract's shape or is not JSON.
 */
export function validateHookInput(doc: unknown, registration: Context): ValidationResult<PostWritebackHookInput> {
  const context = contextOf(registration)
  // A registration the addon refuses: its own call throws the coded error.
  if (context === undefined) return addon.validateHookInput(doc, registration as PostWritebackHookRegistration | string)
  const text = fastText(doc)
  if (text === undefined) return addon.validateHookInputIn(doc, context)
  return addon.checkHookInputText(text, context) ?? { ok: true, value: doc as PostWritebackHookInput }
}

/**
 * A provider's result against the admitted registration, core's dispatch id and the intent kinds.
 *
 * @returns the verdict: a bad document is `{ ok: false, violations }`, never a throw.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when the context is misused: a
 *   registration without the registration contract's shape, a `dispatchId`
 *   that is not a string, `kinds` that are not an `IntentKinds`.
 */
export function validateHookResult(
  doc: unknown,
  registration: Context,
  dispatchId: string,
  kinds: addon.IntentKinds,
): ValidationResult<PostWritebackHookResult> {
  expectArgs('validateHookResult', { dispatchId: [dispatchId, 'string'] })
  expectKinds('validateHookResult', kinds)
  const context = contextOf(registration)
  if (context === undefined)
    return addon.validateHookResult(doc, registration as PostWritebackHookRegistration | string, dispatchId, kinds)
  const text = fastText(doc)
  if (text === undefined) return addon.validateHookResultIn(doc, context, dispatchId, kinds)
  return (
    addon.checkHookResultText(text, context, dispatchId, kinds) ?? {
      ok: true,
      value: doc as PostWritebackHookResult,
    }
  )
}
