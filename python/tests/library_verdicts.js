// The Node.js library's own answers, in process, for the Python tests to
// compare with the adapter's: reads a JSON array of requests on stdin (the
// serve protocol's shapes, without ids) and prints a JSON array of answers.
// It calls the library's exports directly, not the CLI's contract table, so
// the comparison covers serve's wiring too.
'use strict'
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS helper script run by plain node */
const { join } = require('node:path')
const lib = require(join(__dirname, '..', '..', 'dist', 'index.js'))

const validators = {
  registration: (doc, r) => lib.validateRegistration(doc, new lib.IntentKinds(r.kinds)),
  'hook-input': (doc, r) => lib.validateHookInput(doc, r.registration),
  'hook-result': (doc, r) => lib.validateHookResult(doc, r.registration, r.dispatch_id, new lib.IntentKinds(r.kinds)),
  'intent-kind': (doc) => lib.validateIntentKindDefinition(doc),
  'dispatch-receipt': (doc) => lib.validateDispatchReceipt(doc),
  'failure-receipt': (doc) => lib.validateFailureReceipt(doc),
  'turn-start-registration': (doc) => lib.validateTurnStartRegistration(doc),
  'turn-start-receipt': (doc) => lib.validateTurnStartReceipt(doc),
}

// The loopx-shipped-v0 dialect's validators (a request's "dialect").
const shipped = {
  registration: (doc) => lib.validateShippedRegistration(doc),
  source: (doc) => lib.validateShippedSource(doc),
  'hook-input': (doc, r) => lib.validateShippedHookInput(doc, r.registration),
  'hook-result': (doc, r) => lib.validateShippedResult(doc, r.registration, r.event_id),
  'sidecar-receipt': (doc) => lib.validateShippedReceipt(doc),
  'dispatch-result': (doc) => lib.validateShippedDispatchResult(doc),
}

function answer(r) {
  switch (r.op) {
    case 'validate': {
      const v = (r.dialect === 'loopx-shipped-v0' ? shipped : validators)[r.contract](r.document, r)
      return v.ok ? { ok: true } : { ok: false, violations: v.violations }
    }
    case 'registration_digest':
      return lib.registrationDigest(r.registration)
    case 'dispatch_id':
      return lib.dispatchId({
        receiptId: r.parts.receipt_id,
        effectId: r.parts.effect_id,
        hookId: r.parts.hook_id,
        capabilityId: r.parts.capability_id,
        registrationDigest: r.parts.registration_digest,
        registrationSchemaVersion: r.parts.registration_schema_version,
        eventKind: r.parts.event_kind,
      })
    case 'intent_id':
      return lib.intentId({
        dispatchId: r.dispatch_id,
        intentKind: r.intent_kind,
        policyVersion: r.policy_version,
        payload: JSON.parse(r.payload),
      })
    case 'intent':
      return lib.intent(
        JSON.parse(r.input),
        { intent_kind: r.intent_kind },
        {
          operation: r.operation,
          policyVersion: r.policy_version,
          payload: JSON.parse(r.payload),
          ...(r.budget !== undefined ? { budget: JSON.parse(r.budget) } : {}),
          ...(r.requested_write_scope !== undefined
            ? { requestedWriteScope: JSON.parse(r.requested_write_scope) }
            : {}),
        },
      )
    case 'canonical_json':
      return lib.canonicalJson(JSON.parse(r.value))
    default:
      throw new Error(`unknown op ${r.op}`)
  }
}

const chunks = []
process.stdin.on('data', (c) => chunks.push(c))
process.stdin.on('end', () => {
  const requests = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  process.stdout.write(JSON.stringify(requests.map(answer)))
})
