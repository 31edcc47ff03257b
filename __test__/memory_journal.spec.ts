// `journal: ':memory:'` is refused with a coded argument error by
// HookRuntime.open and HookJournal.open: no file of that name (nor its -wal,
// -shm or -attempts companions) ever appears in the working directory.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { HookJournal, HookRuntime } from '../lib/index.js'

let dir = ''
let home = ''
beforeEach(() => {
  home = process.cwd()
  dir = mkdtempSync(join(tmpdir(), 'loopx-memory-'))
  process.chdir(dir)
})
afterEach(() => {
  process.chdir(home)
  rmSync(dir, { recursive: true, force: true })
})

const OPENS = [
  ['HookRuntime.open(:memory:)', () => HookRuntime.open({ journal: ':memory:' }), 'journal'],
  ['HookRuntime.open({ path: :memory: })', () => HookRuntime.open({ journal: { path: ':memory:' } }), 'journal.path'],
  ['HookJournal.open(:memory:)', () => HookJournal.open(':memory:'), 'journal'],
  ['HookJournal.openReadOnly(:memory:)', () => HookJournal.openReadOnly(':memory:'), 'journal'],
  ['HookJournal.open({ path: :memory: })', () => HookJournal.open({ path: ':memory:' }), 'journal.path'],
] as const

describe("journal ':memory:'", () => {
  it.each(OPENS)('%s is ERR_LOOPX_INVALID_ARGUMENT naming the argument, and creates no file', async (_, open, at) => {
    const error = await (open as () => Promise<unknown>)().then(
      () => null,
      (e: unknown) => e,
    )
    expect(error).toMatchObject({ code: 'ERR_LOOPX_INVALID_ARGUMENT' })
    const message = (error as Error).message
    expect(message).toContain(`${at} must be a file path or a postgres:// URL, not :memory:`)
    expect(readdirSync(dir)).toStrictEqual([])
  })

  it('a path that only ends in :memory: is a file like any other', async () => {
    const journal = await HookJournal.open('./x:memory:')
    await journal.close()
    expect(readdirSync(dir)).toContain('x:memory:')
  })
})
