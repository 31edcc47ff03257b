// Run with `node --expose-gc`. Journals of one SQLite file collected by the
// GC while others of this process open or use it.
//   node --expose-gc finalizer-opens.mjs <journal path> race <rounds>
//     Each round starts an open, spins a random 0-2 ms, runs gc() (journals
//     dropped earlier are finalized while the new one makes its attempt
//     ledger), then drops the journal without closing it, or (every third
//     round) uses it after another gc() (stats, listIntents) and closes it.
//     Prints `done` {opens, used, rejected, rejections: [{round, what, code, message}]}.
//   node --expose-gc finalizer-opens.mjs <journal path> reclose <rounds>
//     Each round opens and closes a journal, makes an empty ledger folder
//     (what a new open makes first), drops the journal and waits until the
//     GC collected it: a closed journal must not close again on collection
//     and remove that folder. Prints `done` {collected, removed}.
import { existsSync, mkdirSync, rmdirSync } from 'node:fs'

import { HookJournal } from '../../dist/index.js'
import { emit } from './fixture.mjs'

const [journalPath, mode, roundsArg] = process.argv.slice(2)
const rounds = Number(roundsArg)
if (typeof globalThis.gc !== 'function') throw new Error('finalizer-opens: run with --expose-gc')
const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms))

if (mode === 'race') {
  const rejections = []
  let opens = 0
  let used = 0
  const note = (round, what, e) =>
    rejections.push({ round, what, code: e?.code ?? null, message: String(e?.message ?? e).slice(0, 200) })

  /** One round: its journal, closed every third round and dropped unclosed otherwise, is unreachable once it returns. */
  async function oneRound(round) {
    const opening = HookJournal.open(journalPath)
    // A random offset between the open (on a worker thread) and the finalizers.
    const until = performance.now() + Math.random() * 2
    while (performance.now() < until);
    globalThis.gc()
    let journal
    try {
      journal = await opening
      opens++
    } catch (e) {
      note(round, 'open', e)
      return
    }
    if (round % 3 !== 2) return // dropped without close: the finalizer closes it
    // Used after a gc, then closed (and later collected).
    await new Promise((resolve) => setImmediate(resolve))
    globalThis.gc()
    try {
      await journal.stats()
      await journal.listIntents({ limit: 5 })
      used++
    } catch (e) {
      note(round, 'read', e)
    }
    try {
      await journal.close()
    } catch (e) {
      note(round, 'close', e)
    }
  }

  for (let round = 0; round < rounds; round++) await oneRound(round)
  globalThis.gc()
  emit({ t: 'done', opens, used, rejected: rejections.length, rejections: rejections.slice(0, 20) })
} else if (mode === 'reclose') {
  const ledgers = `${journalPath}-attempts`
  let collected = 0
  let removed = 0
  const registry = new FinalizationRegistry(() => collected++)
  /** Opens and closes a journal, makes the empty ledger folder; the journal is unreachable once it returns. */
  async function closeThenMakeFolder(round) {
    const journal = await HookJournal.open(journalPath)
    await journal.close()
    if (existsSync(ledgers)) throw new Error('finalizer-opens: a clean close left its ledger folder')
    mkdirSync(ledgers, { mode: 0o700 })
    registry.register(journal, round)
  }

  for (let round = 0; round < rounds; round++) {
    await closeThenMakeFolder(round)
    const before = collected
    for (let i = 0; i < 200 && collected === before; i++) {
      globalThis.gc()
      await tick(5)
    }
    // The addon's own finalizers run from the event loop after the GC.
    for (let i = 0; i < 5; i++) await tick(5)
    if (existsSync(ledgers)) rmdirSync(ledgers)
    else removed++
  }
  emit({ t: 'done', collected, removed })
} else {
  throw new Error(`finalizer-opens: unknown mode ${mode}`)
}
