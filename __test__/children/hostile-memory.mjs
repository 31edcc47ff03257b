// Run with a small V8 heap by hostile_inputs.spec.ts: validates a million-item
// event_kinds and a million unknown members, as values and as text, and
// prints each verdict's size and the process's peak memory as one JSON line.
// With violations uncapped (1M violation objects) the heap limit kills it.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { IntentKinds, validateRegistration } from '../../dist/index.js'

const examples = join(import.meta.dirname, '..', '..', 'examples')
const registration = JSON.parse(readFileSync(join(examples, 'registration.json'), 'utf8'))
const kinds = new IntentKinds([JSON.parse(readFileSync(join(examples, 'intent_kind.json'), 'utf8'))])
const N = 1_000_000

const out = {}
const record = (name, verdict) => {
  out[name] = { ok: verdict.ok, listed: verdict.violations?.length, more: verdict.more }
}
{
  const doc = { ...registration, event_kinds: Array.from({ length: N }, (_, i) => `k${i}`) }
  record('eventKindsValue', validateRegistration(doc, kinds))
  record('eventKindsText', validateRegistration(JSON.stringify(doc), kinds))
}
{
  const doc = { ...registration }
  for (let i = 0; i < N; i++) doc[`x${i}`] = null
  record('unknownKeysValue', validateRegistration(doc, kinds))
  record('unknownKeysText', validateRegistration(JSON.stringify(doc), kinds))
}
out.peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024)
process.stdout.write(`${JSON.stringify(out)}\n`)
