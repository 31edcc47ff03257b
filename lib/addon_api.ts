/**
 * The addon's user-facing functions and classes as the package exports them:
 * the same functions, whose arguments are checked for their kind at the call
 * (`expectArgs`) and whose coded errors are `LoopxHooksError`s (`addon.ts`). A
 * document argument (`doc`, a registration, a hook input) is the addon's to
 * judge and is passed as it is; validators answer it with a verdict.
 */
import * as addon from './addon.js'
import type { DispatchIdentityParts } from '../index.js'
import type {
  IntentBudget,
  IntentKindDefinition,
  PostWritebackHookInput,
  PostWritebackHookRegistration,
  PostWritebackIntent,
} from '../bindings/index'
import { expectArgs, expectOptions, type Kind } from './args.js'
import { LoopxHooksError } from './errors.js'

/**
 * A registration compiled once for the validators' fast path
 * (`validateHookInputIn`, `validateHookResultIn`, `checkHookInputText`,
 * `checkHookResultText`).
 *
 * @example
 * ```ts
 * const context = new HookContext(registration)
 * const verdict = validateHookInputIn(input, context)
 * ```
 */
export class HookContext extends addon.HookContext {
  /**
   * @param registration - the hook's registration, as a value or JSON text.
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` when it does not have the
   *   registration contract's shape.
   */
  constructor(registration: PostWritebackHookRegistration | string) {
    super(registration)
  }
}

/** The defined intent kinds a registration and a result are judged against. */
export class IntentKinds extends addon.IntentKinds {
  /**
   * @param definitions - intent kind definitions (values, typed kinds from
   *   `defineIntentKind`, or JSON text).
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` when `definitions` is not an array;
   *   `ERR_LOOPX_INVALID_INTENT_KIND` (with `violations`, paths prefixed by
   *   the definition's index) when a definition is invalid or an
   *   intent_kind is defined twice.
   */
  constructor(definitions: ReadonlyArray<IntentKindDefinition | { readonly intent_kind: string } | string>) {
    if (!Array.isArray(definitions))
      throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', 'IntentKinds: invalid argument: definitions (array)')
    super(definitions)
  }
}

/** An intent spec's members (`buildIntent`, `intent`); the payload is a document, any JSON value. */
export function expectSpec(method: string, spec: object, more: Record<string, Kind> = {}): void {
  expectOptions(method, 'spec', spec, { ...more, ...SPEC }, 'object', ['payload'])
  if ((spec as { payload?: unknown }).payload === undefined)
    throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', `${method}: invalid argument: payload (a JSON value)`)
}

const SPEC: Record<string, Kind> = {
  operation: 'string',
  policyVersion: 'string',
  budget: 'object?',
  requestedWriteScope: 'array?',
}

function expectContext(method: string, value: unknown): void {
  if (!(value instanceof addon.HookContext))
    throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', `${method}: invalid argument: context (a HookContext)`)
}

export function expectKinds(method: string, value: unknown): void {
  if (!(value instanceof addon.IntentKinds))
    throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', `${method}: invalid argument: kinds (an IntentKinds)`)
}

/**
 * Builds a well-formed intent answering `input`: every id and fixed field
 * filled in. It judges nothing; the dispatcher validates the result.
 *
 * @param input - the hook input the provider was called with.
 * @param spec - the intent's kind, operation, policy version and payload,
 *   with its optional budget and requested write scope.
 * @returns the intent, its `intent_id` derived from its content.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when `input` does not have the hook
 *   input contract's shape or `spec` misses a member;
 *   `ERR_LOOPX_NOT_JSON_VALUE` when either holds a value JSON cannot hold.
 */
export function buildIntent(
  input: PostWritebackHookInput,
  spec: {
    intentKind: string
    operation: string
    policyVersion: string
    payload: unknown
    budget?: IntentBudget
    requestedWriteScope?: string[]
  },
): PostWritebackIntent {
  expectArgs('buildIntent', { input: [input, 'object'] })
  expectSpec('buildIntent', spec, { intentKind: 'string' })
  return addon.buildIntent(input, spec)
}

/**
 * RFC 8785 canonical JSON of a JS value (a string argument is a JSON string value).
 *
 * @param value - any JSON value.
 * @returns its canonical text.
 * @throws `ERR_LOOPX_NOT_JSON_VALUE` when it holds a value JSON cannot hold.
 */
export function canonicalJson(value: unknown): string {
  return addon.canonicalJson(value)
}

/**
 * Judges a hook input given as JSON text against a compiled context: the
 * fastest check, with no parsed document returned.
 *
 * @param text - the hook input's JSON text.
 * @param context - the registration compiled by `new HookContext`.
 * @returns `null` when accepted, else the rejection with its violations.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when `text` is not a string or
 *   `context` is not a `HookContext`.
 */
export function checkHookInputText(
  text: string,
  context: addon.HookContext,
): ReturnType<typeof addon.checkHookInputText> {
  expectArgs('checkHookInputText', { text: [text, 'string'] })
  expectContext('checkHookInputText', context)
  return addon.checkHookInputText(text, context)
}

/**
 * Judges a hook result given as JSON text against a compiled context and
 * the dispatch id core derived.
 *
 * @param text - the hook result's JSON text.
 * @param context - the registration compiled by `new HookContext`.
 * @param dispatchId - the dispatch the result answers.
 * @param kinds - the defined intent kinds its intents are judged against.
 * @returns `null` when accepted, else the rejection with its violations.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when an argument is not of the kind
 *   the signature says.
 */
export function checkHookResultText(
  text: string,
  context: addon.HookContext,
  dispatchId: string,
  kinds: addon.IntentKinds,
): ReturnType<typeof addon.checkHookResultText> {
  expectArgs('checkHookResultText', { text: [text, 'string'] })
  expectContext('checkHookResultText', context)
  expectArgs('checkHookResultText', { dispatchId: [dispatchId, 'string'] })
  expectKinds('checkHookResultText', kinds)
  return addon.checkHookResultText(text, context, dispatchId, kinds)
}

/**
 * Judges a registration given as JSON text against the defined intent kinds.
 *
 * @param text - the registration's JSON text.
 * @param kinds - the defined intent kinds.
 * @returns `null` when accepted, else the rejection with its violations.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when `text` is not a string or
 *   `kinds` is not an `IntentKinds`.
 */
export function checkRegistrationText(
  text: string,
  kinds: addon.IntentKinds,
): ReturnType<typeof addon.checkRegistrationText> {
  expectArgs('checkRegistrationText', { text: [text, 'string'] })
  expectKinds('checkRegistrationText', kinds)
  return addon.checkRegistrationText(text, kinds)
}

const PARTS: Record<keyof DispatchIdentityParts, Kind> = {
  receiptId: 'string',
  effectId: 'string',
  hookId: 'string',
  capabilityId: 'string',
  registrationDigest: 'string',
  registrationSchemaVersion: 'string',
  eventKind: 'string',
}

/**
 * The dispatch id of contract-v0 section 3:
 * `"pwh_" + sha256(JCS({domain, ...parts}))`.
 *
 * @param parts - the seven identity parts, all strings.
 * @returns the `pwh_` id.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when a part is missing or not a string.
 */
export function dispatchId(parts: DispatchIdentityParts): string {
  expectArgs('dispatchId', { parts: [parts, 'object'] })
  expectArgs(
    'dispatchId',
    Object.fromEntries(
      Object.entries(PARTS).map(([k, kind]) => [k, [(parts as unknown as Record<string, unknown>)[k], kind] as const]),
    ),
  )
  return addon.dispatchId(parts)
}

/**
 * The intent id of contract-v0 section 3:
 * `"pwi_" + sha256(JCS({domain, dispatch_id, intent_kind, policy_version, payload}))`.
 *
 * @param parts - the dispatch id, intent kind, policy version and payload.
 * @returns the `pwi_` id.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when a member is missing or of the
 *   wrong kind; `ERR_LOOPX_NOT_JSON_VALUE` when they hold a value JSON
 *   cannot hold.
 */
export function intentId(parts: {
  dispatchId: string
  intentKind: string
  policyVersion: string
  payload: unknown
}): string {
  expectArgs('intentId', { parts: [parts, 'object'] })
  return addon.intentId(parts)
}

/**
 * sha256 of the registration's canonical JSON (no prefix), the
 * `registration_digest` of contract-v0 section 3.
 *
 * @param registration - the registration as a value or JSON text.
 * @returns the hex digest.
 * @throws `ERR_LOOPX_NOT_JSON_VALUE` when it is neither a JSON value nor JSON text.
 */
export function registrationDigest(registration: PostWritebackHookRegistration | string): string {
  return addon.registrationDigest(registration)
}

/**
 * `validateHookInput` against a compiled context: the exact walk for a JS
 * value, or JSON text, with the full verdict.
 *
 * @param doc - the hook input, as a value or JSON text.
 * @param context - the registration compiled by `new HookContext`.
 * @returns the verdict: `{ ok: true, value }` or `{ ok: false, violations }`.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when `context` is not a `HookContext`
 *   (a bad document is a verdict, never a throw).
 */
export function validateHookInputIn(
  doc: unknown,
  context: addon.HookContext,
): ReturnType<typeof addon.validateHookInputIn> {
  expectContext('validateHookInputIn', context)
  return addon.validateHookInputIn(doc, context)
}

/**
 * `validateHookResult` against a compiled context, as `validateHookInputIn`.
 *
 * @param doc - the hook result, as a value or JSON text.
 * @param context - the registration compiled by `new HookContext`.
 * @param dispatchId - the dispatch the result answers.
 * @param kinds - the defined intent kinds its intents are judged against.
 * @returns the verdict: `{ ok: true, value }` or `{ ok: false, violations }`.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when `context`, `dispatchId` or
 *   `kinds` is not of the kind the signature says.
 */
export function validateHookResultIn(
  doc: unknown,
  context: addon.HookContext,
  dispatchId: string,
  kinds: addon.IntentKinds,
): ReturnType<typeof addon.validateHookResultIn> {
  expectContext('validateHookResultIn', context)
  expectArgs('validateHookResultIn', { dispatchId: [dispatchId, 'string'] })
  expectKinds('validateHookResultIn', kinds)
  return addon.validateHookResultIn(doc, context, dispatchId, kinds)
}

/**
 * Judges a dispatch receipt (contract-v0).
 *
 * @param doc - the document, as a value or JSON text.
 * @returns the verdict: `{ ok: true, value }` or `{ ok: false, violations }`;
 *   a bad document is a verdict, never a throw.
 */
export const validateDispatchReceipt = (doc: unknown): ReturnType<typeof addon.validateDispatchReceipt> =>
  addon.validateDispatchReceipt(doc)
/**
 * Judges a failure receipt (contract-v0).
 *
 * @param doc - the document, as a value or JSON text.
 * @returns the verdict: `{ ok: true, value }` or `{ ok: false, violations }`;
 *   a bad document is a verdict, never a throw.
 */
export const validateFailureReceipt = (doc: unknown): ReturnType<typeof addon.validateFailureReceipt> =>
  addon.validateFailureReceipt(doc)
/**
 * Judges an intent kind definition.
 *
 * @param doc - the document, as a value or JSON text.
 * @returns the verdict: `{ ok: true, value }` or `{ ok: false, violations }`;
 *   a bad document is a verdict, never a throw.
 */
export const validateIntentKindDefinition = (doc: unknown): ReturnType<typeof addon.validateIntentKindDefinition> =>
  addon.validateIntentKindDefinition(doc)
/**
 * Judges a turn-start receipt.
 *
 * @param doc - the document, as a value or JSON text.
 * @returns the verdict: `{ ok: true, value }` or `{ ok: false, violations }`;
 *   a bad document is a verdict, never a throw.
 */
export const validateTurnStartReceipt = (doc: unknown): ReturnType<typeof addon.validateTurnStartReceipt> =>
  addon.validateTurnStartReceipt(doc)
/**
 * Judges a turn-start hook registration.
 *
 * @param doc - the document, as a value or JSON text.
 * @returns the verdict: `{ ok: true, value }` or `{ ok: false, violations }`;
 *   a bad document is a verdict, never a throw.
 */
export const validateTurnStartRegistration = (doc: unknown): ReturnType<typeof addon.validateTurnStartRegistration> =>
  addon.validateTurnStartRegistration(doc)
