// scripts/pg-server.mjs keeps its promises: the run's shared server (vitest
// globalSetup) reaches every test file, a server it starts answers on
// 127.0.0.1 with default durability, a restart cuts sessions and answers again
// on the same port, and stop removes the folder. The CLI prints what
// scripts/test.sh evals.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import pg from 'pg'
import { afterAll, describe, expect, inject, it } from 'vitest'

import { findBin, restart, start, stop, type PgServer } from '../scripts/pg-server.mjs'

const SCRIPT = join(__dirname, '..', 'scripts', 'pg-server.mjs')

async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(sql)).rows
  } finally {
    await client.end()
  }
}

async function setting(url: string, name: string): Promise<unknown> {
  return (await query(url, `SELECT current_setting('${name}') AS v`))[0]!.v
}

describe('the shared test server (vitest globalSetup)', () => {
  it('is injected and in the environment, and answers', async () => {
    const url = inject('pgUrl')
    expect(url).toMatch(/^postgres(ql)?:\/\//)
    expect(process.env.LOOPX_TEST_PG_URL).toBe(url)
    if (inject('pgDir') !== null) expect(existsSync(join(inject('pgDir')!, 'PG_VERSION'))).toBe(true)
    const rows = await query(url, 'SELECT 1 + 1 AS two')
    expect(rows[0]!.two).toBe(2)
  })

  it('lets a test create and drop a schema of its own', async () => {
    const url = inject('pgUrl')
    const schema = `t_${Math.random().toString(16).slice(2, 10)}`
    await query(url, `CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.x (id int); DROP SCHEMA ${schema} CASCADE`)
  })
})

describe('scripts/pg-server.mjs', () => {
  let server: PgServer | undefined
  afterAll(() => {
    if (server && existsSync(server.dir)) stop(server.dir)
  })

  it('finds initdb and pg_ctl', () => {
    expect(findBin('initdb')).toMatch(/\/initdb$/)
    expect(findBin('pg_ctl')).toMatch(/\/pg_ctl$/)
  })

  it('starts a server on 127.0.0.1 with fsync and synchronous_commit on, trust auth for postgres', async () => {
    server = start()
    expect(server.url).toBe(`postgres://postgres@127.0.0.1:${server.port}/postgres`)
    expect(existsSync(join(server.dir, 'PG_VERSION'))).toBe(true)
    expect(await setting(server.url, 'synchronous_commit')).toBe('on')
    expect(await setting(server.url, 'fsync')).toBe('on')
    expect(await setting(server.url, 'listen_addresses')).toBe('127.0.0.1')
    expect(await setting(server.url, 'port')).toBe(String(server.port))
    expect((await query(server.url, 'SELECT current_user AS u'))[0]!.u).toBe('postgres')
  })

  it('restarts: an open session is cut, the server answers again on the same port with its data', async () => {
    const s = server!
    await query(s.url, 'CREATE TABLE kept (v text); INSERT INTO kept VALUES ($$before$$)')
    const open = new pg.Client({ connectionString: s.url })
    await open.connect()
    // The cut session reports its end as an 'error' event; without a listener it would be thrown.
    const ended: Error[] = []
    open.on('error', (e) => ended.push(e))
    const pidBefore = (await open.query('SELECT pg_backend_pid() AS p')).rows[0].p
    restart(s.dir)
    await expect(open.query('SELECT 1')).rejects.toThrow()
    await open.end().catch(() => {})
    expect((await query(s.url, 'SELECT v FROM kept'))[0]!.v).toBe('before')
    expect((await query(s.url, 'SELECT pg_backend_pid() AS p'))[0]!.p).not.toBe(pidBefore)
    expect(await setting(s.url, 'synchronous_commit')).toBe('on')
  })

  it('stops: the folder is gone and nothing listens', async () => {
    const s = server!
    stop(s.dir)
    expect(existsSync(s.dir)).toBe(false)
    await expect(query(s.url, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/)
  })

  it('as a CLI: start --env prints shell assignments, stop DIR removes it', async () => {
    const started = spawnSync(process.execPath, [SCRIPT, 'start', '--env'], { encoding: 'utf8' })
    expect(started.status, started.stderr).toBe(0)
    const env = Object.fromEntries(
      started.stdout
        .trim()
        .split('\n')
        .map((line) => /^(\w+)='(.*)'$/.exec(line)!.slice(1, 3)),
    )
    expect(Object.keys(env).sort()).toEqual(['LOOPX_TEST_PG_CA', 'LOOPX_TEST_PG_DIR', 'LOOPX_TEST_PG_URL'])
    try {
      expect(await setting(env.LOOPX_TEST_PG_URL!, 'synchronous_commit')).toBe('on')
      // TLS is on, with the throwaway CA beside the data (the Rust TLS test verifies a session with it).
      expect(await setting(env.LOOPX_TEST_PG_URL!, 'ssl')).toBe('on')
      expect(readFileSync(env.LOOPX_TEST_PG_CA!, 'utf8')).toContain('BEGIN CERTIFICATE')
    } finally {
      const stopped = spawnSync(process.execPath, [SCRIPT, 'stop', env.LOOPX_TEST_PG_DIR!], { encoding: 'utf8' })
      expect(stopped.status, stopped.stderr).toBe(0)
    }
    expect(existsSync(env.LOOPX_TEST_PG_DIR!)).toBe(false)
    const usage = spawnSync(process.execPath, [SCRIPT, 'bogus'], { encoding: 'utf8' })
    expect(usage.status).toBe(2)
  })
})
