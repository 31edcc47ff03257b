// The addon's probe of an SQLite file (the core's file recognition, which the
// reference stores' pre-check asks): what is at a path, as data, and coded
// errors that never name the path.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'

import { probeSqliteFile } from '../index.js'

const dir = mkdtempSync(join(tmpdir(), 'loopx-probe-secret-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('probeSqliteFile', () => {
  it('reports the kind and the header fields that say whose file it is', () => {
    expect(probeSqliteFile(join(dir, 'absent.db'))).toEqual({ kind: 'missing', applicationId: 0, userVersion: 0 })
    writeFileSync(join(dir, 'empty.db'), '')
    expect(probeSqliteFile(join(dir, 'empty.db'))).toEqual({ kind: 'empty', applicationId: 0, userVersion: 0 })
    writeFileSync(join(dir, 'text.db'), 'not a database, but long enough to hold a header? '.repeat(4))
    expect(probeSqliteFile(join(dir, 'text.db'))).toEqual({ kind: 'not_sqlite', applicationId: 0, userVersion: 0 })
    const db = new Database(join(dir, 'stamped.db'))
    db.pragma('application_id = 1280852290')
    db.pragma('user_version = 7')
    db.exec('CREATE TABLE t (x)')
    db.close()
    expect(probeSqliteFile(join(dir, 'stamped.db'))).toEqual({
      kind: 'sqlite',
      applicationId: 1280852290,
      userVersion: 7,
    })
  })

  it('refuses a special file with a code, without opening it or naming the path', () => {
    const fifo = join(dir, 'pipe.db')
    if (spawnSync('mkfifo', [fifo]).status !== 0) mkdirSync(fifo)
    let thrown: unknown
    try {
      probeSqliteFile(fifo)
    } catch (error) {
      thrown = error
    }
    expect((thrown as { code?: string }).code).toBe('ERR_LOOPX_NOT_A_FILE')
    expect(String((thrown as Error).message)).not.toContain('secret')
  })
})
