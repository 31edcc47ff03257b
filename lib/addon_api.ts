/**
 * The addon's user-facing functions and classes as the package exports them:
 * the same functions, whose arguments are checked for their kind at the call
 * (`expectArgs`) and whose coded errors are `LoopxHooksError`s (`sync`). A
 * document argument (`doc`, a registration, a hook input) is the addon's to
 * judge and is passed as it is; validators answer it with a verdict.
 */
import * as addon from '../index.js'
import type { DispatchIdentityParts } from '../index.js'
import type {
  IntentBudget,
  IntentKindDefinition,
  PostWritebackHookInput,
  PostWritebackHookRegistration,
  PostWritebackIntent,
} from '../bindings/index'
import { expectArgs, expectOptions, type Kind } from './args.js'
import { LoopxHooksError, sync } from './errors.js'

/** Rethrows what a constructor threw as the `sync` wrapper does. */
function coded(error: unknown): never {
  sync(() => {
    throw error
  })
  throw error
}

/** A registration compiled once for the validators' fast path (`validateHookInput`, `validateHookResult`). */
export class HookContext extends addon.HookContext {
  constructor(registration: PostWritebackHookRegistration | string) {
    try {
      super(registration)
    } catch (error) {
      coded(error)
    }
  }
}

/** The defined intent kinds a registration and a result are judged against. */
export class IntentKinds extends addon.IntentKinds {
  constructor(definitions: ReadonlyArray<IntentKindDefinition | { readonly intent_kind: string } | string>) {
    if (!Array.isArray(definitions))
      throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', 'IntentKinds: invalid argument: definitions (array)')
    try {
      super(definitions)
    } catch (error) {
      coded(error)
    }
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
  return sync(() => addon.buildIntent(input, spec))
}

export function canonicalJson(value: unknown): string {
  return sync(() => addon.canonicalJson(value))
}

export function checkHookInputText(
  text: string,
  context: addon.HookContext,
): ReturnType<typeof addon.checkHookInputText> {
  expectArgs('checkHookInputText', { text: [text, 'string'] })
  expectContext('checkHookInputText', context)
  return sync(() => addon.checkHookInputText(text, context))
}

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
  return sync(() => addon.checkHookResultText(text, context, dispatchId, kinds))
}

export function checkRegistrationText(
  text: string,
  kinds: addon.IntentKinds,
): ReturnType<typeof addon.checkRegistrationText> {
  expectArgs('checkRegistrationText', { text: [text, 'string'] })
  expectKinds('checkRegistrationText', kinds)
  return sync(() => addon.checkRegistrationText(text, kinds))
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

export function dispatchId(parts: DispatchIdentityParts): string {
  expectArgs('dispatchId', { parts: [parts, 'object'] })
  expectArgs(
    'dispatchId',
    Object.fromEntries(
      Object.entries(PARTS).map(([k, kind]) => [k, [(parts as unknown as Record<string, unknown>)[k], kind] as const]),
    ),
  )
  return sync(() => addon.dispatchId(parts))
}

export function intentId(parts: {
  dispatchId: string
  intentKind: string
  policyVersion: string
  payload: unknown
}): string {
  expectArgs('intentId', { parts: [parts, 'object'] })
  return sync(() => addon.intentId(parts))
}

export function registrationDigest(registration: PostWritebackHookRegistration | string): string {
  return sync(() => addon.registrationDigest(registration))
}

export function validateHookInputIn(
  doc: unknown,
  context: addon.HookContext,
): ReturnType<typeof addon.validateHookInputIn> {
  expectContext('validateHookInputIn', context)
  return sync(() => addon.validateHookInputIn(doc, context))
}

export function validateHookResultIn(
  doc: unknown,
  context: addon.HookContext,
  dispatchId: string,
  kinds: addon.IntentKinds,
): ReturnType<typeof addon.validateHookResultIn> {
  expectContext('validateHookResultIn', context)
  expectArgs('validateHookResultIn', { dispatchId: [dispatchId, 'string'] })
  expectKinds('validateHookResultIn', kinds)
  return sync(() => addon.validateHookResultIn(doc, context, dispatchId, kinds))
}

export const validateDispatchReceipt = (doc: unknown): ReturnType<typeof addon.validateDispatchReceipt> =>
  sync(() => addon.validateDispatchReceipt(doc))
export const validateFailureReceipt = (doc: unknown): ReturnType<typeof addon.validateFailureReceipt> =>
  sync(() => addon.validateFailureReceipt(doc))
export const validateIntentKindDefinition = (doc: unknown): ReturnType<typeof addon.validateIntentKindDefinition> =>
  sync(() => addon.validateIntentKindDefinition(doc))
export const validateTurnStartReceipt = (doc: unknown): ReturnType<typeof addon.validateTurnStartReceipt> =>
  sync(() => addon.validateTurnStartReceipt(doc))
export const validateTurnStartRegistration = (doc: unknown): ReturnType<typeof addon.validateTurnStartRegistration> =>
  sync(() => addon.validateTurnStartRegistration(doc))
