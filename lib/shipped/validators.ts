/**
 * The validators of the `loopx-shipped-v0` dialect (the contract LoopX
 * shipped), beside the RFC dialect's in `validators.ts`, which stays the
 * default. Every rule is the addon's; this layer only forwards and names the
 * dialects (the addon's errors are coded at its boundary, `addon.ts`).
 */
import * as addon from '../addon.js'
import type { ValidationResult } from '../../index.js'
import type {
  ShippedDispatchResult,
  ShippedHookInput,
  ShippedHookResult,
  ShippedRegistration,
  ShippedSidecarReceipt,
  ShippedSource,
} from '../../bindings/index'
import { expectArgs } from '../args.js'
export { DIALECTS } from '../args.js'

type Context = ShippedRegistration | string

/** A shipped registration. */
export function validateShippedRegistration(doc: unknown): ValidationResult<ShippedRegistration> {
  return addon.validateShippedRegistration(doc)
}

/** A shipped source; an accepted one comes back as core reads it, every string stripped. */
export function validateShippedSource(doc: unknown): ValidationResult<ShippedSource> {
  return addon.validateShippedSource(doc)
}

/**
 * A shipped hook input against its registration.
 *
 * @returns the verdict: a bad document is `{ ok: false, violations }`, never a throw.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when the registration (the context, not
 *   the document) is not a valid loopx-shipped-v0 registration.
 */
export function validateShippedHookInput(doc: unknown, registration: Context): ValidationResult<ShippedHookInput> {
  return addon.validateShippedHookInput(doc, registration)
}

/**
 * A provider's shipped result against its registration and the `receipt.event_id` of its input.
 *
 * @returns the verdict: a bad document is `{ ok: false, violations }`, never a throw.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when the registration is not a valid
 *   loopx-shipped-v0 registration or `eventId` is not a string.
 */
export function validateShippedResult(
  doc: unknown,
  registration: Context,
  eventId: string,
): ValidationResult<ShippedHookResult> {
  expectArgs('validateShippedResult', { eventId: [eventId, 'string'] })
  return addon.validateShippedResult(doc, registration, eventId)
}

/** A sidecar receipt (one JSON file per dispatch id on a LoopX host). */
export function validateShippedReceipt(doc: unknown): ValidationResult<ShippedSidecarReceipt> {
  return addon.validateShippedReceipt(doc)
}

/** A shipped dispatch result. */
export function validateShippedDispatchResult(doc: unknown): ValidationResult<ShippedDispatchResult> {
  return addon.validateShippedDispatchResult(doc)
}
