// The PostgreSQL journal's schema and its version (issue 11, item 2): a
// journal schema is created on first use and stamped in its `meta` table; a
// newer stamp is refused by every way in (runtime, read-write and read-only
// journal, CLI) with ERR_LOOPX_JOURNAL_TOO_NEW, the same code as SQLite's,
// and nothing in the schema changes (a pg_dump before and after is
// byte-identical); a schema holding someone else's tables is not a journal
// and is left alone too. The intents are readable through `outbox_events`
// with the columns of Debezium's outbox event router.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { afterAll, describe, expect, it } from 'vitest'

import { HookRuntime, type DispatchRequest, type Profile } from '../lib/index.js'
import { POSTGRES, openJournal, openJournalReadOnly, postgresTarget, pgUrl, withPg } from './support/backends'

const CHILDREN = join(__dirname, 'children')
const BIN = join(__dirname, '..', 'bin', 'loopx-hooks.js')

interface Fixture {
  PROFILE: Partial<Profile>
  install(runtime: HookRuntime): void
  request(rid: string): DispatchRequest
}
const fixture = async () => (await import(pathToFileURL(join(CHILDREN, 'fixture.mjs')).href)) as Fixture

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    const opened = (await promise) as { close(): Promise<void> }
    await opened.close()
    return 'opened'
  } catch (e) {
    return (e as { code?: string }).code
  }
}

/**
 * The schema's pg_dump without the random `\\restrict KEY` / `\\unrestrict KEY`
 * lines newer pg_dump versions write into every dump (so two dumps of an
 * unchanged schema compare equal).
 */
const schemaDump = (target: ReturnType<typeof postgresTarget>) =>
  target
    .persistedBytes()[0]!
    .bytes.toString('utf8')
    .split('\n')
    .filter((line) => !/^\\(un)?restrict /.test(line))
    .join('\n')

const cli = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 30_000 })

describe('PostgreSQL journal schema', () => {
  const made: ReturnType<typeof postgresTarget>[] = []
  const fresh = (label: string) => {
    expect(POSTGRES.name).toBe('postgres')
    const t = postgresTarget(pgUrl(), label)
    made.push(t)
    return t
  }
  afterAll(async () => {
    for (const t of made) await t.cleanup()
  })

  /** One dispatch recorded, so the refused schema holds rows that must stay as they were. */
  async function journalWithOneIntent(target: ReturnType<typeof postgresTarget>) {
    const fx = await fixture()
    const runtime = await HookRuntime.open({ ...target.runtimeOptions(), profile: fx.PROFILE })
    fx.install(runtime)
    const out = await runtime.dispatch(fx.request('r7'))
    expect(out.hooks[0]?.outcome).toBe('recorded')
    const intents = (await runtime.journal.listIntents()).items
    await runtime.close()
    return intents
  }

  it('is created on first use, stamped in meta, and serves the intents as Debezium outbox events', async () => {
    const target = fresh('created')
    expect(await target.exists()).toBe(false)
    const intents = await journalWithOneIntent(target)
    expect(intents).toHaveLength(1)
    await withPg(target.connectionString, async (c) => {
      const meta = await c.query(`SELECT application_id, version FROM "${target.schema}".meta`)
      expect(meta.rows).toHaveLength(1)
      // 'LXHK', as SQLite's PRAGMA application_id.
      expect(meta.rows[0].application_id).toBe(0x4c58484b)
      expect(meta.rows[0].version).toBeGreaterThanOrEqual(1)
      const events = await c.query(
        `SELECT id, aggregatetype, aggregateid, type, payload FROM "${target.schema}".outbox_events`,
      )
      const i = intents[0]!
      expect(events.rows).toEqual([
        {
          id: i.intentId,
          aggregatetype: i.capabilityId,
          aggregateid: i.dispatchId,
          type: i.intent.intent_kind,
          payload: i.intent,
        },
      ])
    })
  })

  it('a newer version stamp is refused everywhere with ERR_LOOPX_JOURNAL_TOO_NEW, and nothing changes', async () => {
    const target = fresh('too_new')
    await journalWithOneIntent(target)
    await withPg(target.connectionString, (c) => c.query(`UPDATE "${target.schema}".meta SET version = version + 1`))
    const before = schemaDump(target)

    const fx = await fixture()
    expect(await codeOf(HookRuntime.open({ ...target.runtimeOptions(), profile: fx.PROFILE }))).toBe(
      'ERR_LOOPX_JOURNAL_TOO_NEW',
    )
    expect(await codeOf(openJournal(target))).toBe('ERR_LOOPX_JOURNAL_TOO_NEW')
    expect(await codeOf(openJournalReadOnly(target))).toBe('ERR_LOOPX_JOURNAL_TOO_NEW')
    const shown = cli(['journal', 'show', ...target.cliArgs])
    expect(shown.status).toBe(1)
    expect(shown.stderr).toContain('ERR_LOOPX_JOURNAL_TOO_NEW')
    // Nor does any message name the server.
    expect(shown.stderr + shown.stdout).not.toContain(target.connectionString)

    expect(schemaDump(target), 'the schema changed').toBe(before)
  })

  it('a schema holding foreign tables is not a journal and is left alone', async () => {
    const target = fresh('foreign')
    await withPg(target.connectionString, (c) =>
      c.query(
        `CREATE SCHEMA "${target.schema}"; CREATE TABLE "${target.schema}".dispatches (x integer); ` +
          `INSERT INTO "${target.schema}".dispatches VALUES (1)`,
      ),
    )
    const before = schemaDump(target)
    const fx = await fixture()
    expect(await codeOf(HookRuntime.open({ ...target.runtimeOptions(), profile: fx.PROFILE }))).toBe(
      'ERR_LOOPX_NOT_A_JOURNAL',
    )
    expect(await codeOf(openJournal(target))).toBe('ERR_LOOPX_NOT_A_JOURNAL')
    expect(await codeOf(openJournalReadOnly(target))).toBe('ERR_LOOPX_NOT_A_JOURNAL')
    expect(schemaDump(target), 'the schema changed').toBe(before)
  })
})
