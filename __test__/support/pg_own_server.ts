// A PostgreSQL server of one test file's own, for the tests that restart or
// stop it while dispatches are in flight: doing that to the suite's shared
// server (LOOPX_TEST_PG_URL) would cut every other file's connections.
// Started and removed by scripts/pg-server.mjs; restarted, stopped and
// started again here with pg_ctl run asynchronously, so the event loop (and
// the dispatches it drives) keeps running meanwhile.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { userInfo } from 'node:os'

import { findBin, start, stop, type PgServer } from '../../scripts/pg-server.mjs'

const run = promisify(execFile)

export type OwnServer = PgServer

/** pg_ctl on the server's folder, as the postgres user when we are root (as pg-server.mjs runs it). */
export async function pgCtl(server: OwnServer, args: string[]): Promise<void> {
  const bin = findBin('pg_ctl')
  if (!bin) throw new Error('pg_ctl not found')
  const argv = ['-D', server.dir, ...args]
  if (userInfo().uid === 0) await run('runuser', ['-u', 'postgres', '--', bin, ...argv])
  else await run(bin, argv)
}

export async function startOwnServer(): Promise<OwnServer> {
  return start()
}

// -l: a new postmaster writes to the log, not to our pipes (which would keep execFile waiting).

/** A fast restart (`-m fast`: open sessions are cut), back when the server answers. */
export async function restartOwnServer(server: OwnServer): Promise<void> {
  await pgCtl(server, ['-w', '-t', '60', '-m', 'fast', '-l', join(server.dir, 'log'), 'restart'])
}

/** Stops the server (fast: open sessions are cut) and keeps its folder, for `startAgain`. */
export async function stopOnly(server: OwnServer): Promise<void> {
  await pgCtl(server, ['-w', '-t', '60', '-m', 'fast', 'stop'])
}

/** Starts a stopped server again: `restart` of a stopped server starts it with its last options (postmaster.opts). */
export async function startAgain(server: OwnServer): Promise<void> {
  await pgCtl(server, ['-w', '-t', '60', '-l', join(server.dir, 'log'), 'restart'])
}

/** Stops it and removes its folder. */
export async function stopOwnServer(server: OwnServer): Promise<void> {
  stop(server.dir)
}
