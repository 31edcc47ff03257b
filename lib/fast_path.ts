/**
 * Where a validator may skip the addon: the generated checks of
 * lib/generated/ (written by `npm run codegen` from the Rust validators' own
 * constants) say "certainly valid" or "don't know", and on "don't know" the
 * caller asks the addon, which alone reports violations. No rule lives here.
 */
import * as addon from './addon.js'
import type { PostWritebackHookRegistration } from '../bindings/index'
import { parsedRegistrationCertainlyValid, registrationCertainlyValid } from './generated/fast_valid.js'

// A registration's text is a few hundred bytes; a far longer one is not the
// common valid document, and parsing it here as well as in the addon would
// only double the cost of its rejection.
const FAST_TEXT_MAX = 16 * 1024
// Taken at load: the fast path trusts what it returns to be plain data.
const parseJson = JSON.parse.bind(JSON) as (text: string) => unknown

// An IntentKinds never changes once made, so its owners are read once.
const ownersByKinds = new WeakMap<addon.IntentKinds, ReadonlyMap<string, string>>()

function ownersOf(kinds: addon.IntentKinds): ReadonlyMap<string, string> {
  let owners = ownersByKinds.get(kinds)
  if (owners === undefined) {
    const flat = addon.intentKindOwners(kinds)
    const map = new Map<string, string>()
    for (let i = 0; i + 1 < flat.length; i += 2) map.set(flat[i]!, flat[i + 1]!)
    owners = map
    ownersByKinds.set(kinds, owners)
  }
  return owners
}

/**
 * The value `validateRegistration` accepts `doc` as (the object itself, or
 * the parse of its JSON text, as the addon returns them) when the fast path
 * is certain; undefined to ask the addon.
 */
export function acceptedRegistration(
  doc: unknown,
  kinds: addon.IntentKinds,
): PostWritebackHookRegistration | undefined {
  let owners: ReadonlyMap<string, string>
  try {
    owners = ownersOf(kinds)
  } catch {
    // Not an IntentKinds the addon made: its own call throws the coded error.
    return undefined
  }
  if (typeof doc === 'string') {
    if (doc.length > FAST_TEXT_MAX) return undefined
    let parsed: unknown
    try {
      parsed = parseJson(doc)
    } catch {
      return undefined
    }
    return parsedRegistrationCertainlyValid(parsed, owners) ? (parsed as PostWritebackHookRegistration) : undefined
  }
  try {
    return registrationCertainlyValid(doc, owners) ? (doc as PostWritebackHookRegistration) : undefined
  } catch {
    // A getter that throws: the addon reports it.
    return undefined
  }
}
