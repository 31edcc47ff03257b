// A PostgreSQL server of one test file's own, for the test that restarts it
// while dispatches are in flight: restarting the suite's shared server
// (LOOPX_TEST_PG_URL) would cut every other file's connections. initdb into
// a temp folder (as the `postgres` user when we are root), a free loopback
// port, pg_ctl start/restart/stop; the folder is removed at stop.
import { execFile } from 'node:child_process'
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface OwnServer {
  url: string
  dir: string
  port: number
}

/** `cmd args` as the postgres user when we are root (initdb refuses root), else as ourselves. */
async function asPostgres(cmd: string, args: string[]): Promise<void> {
  if (userInfo().uid === 0) await run('runuser', ['-u', 'postgres', '--', cmd, ...args])
  else await run(cmd, args)
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port
      srv.close(() => resolve(port))
    })
  })
}

export async function startOwnServer(): Promise<OwnServer> {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-pg-own-'))
  chmodSync(dir, 0o755)
  if (userInfo().uid === 0) {
    const { stdout } = await run('id', ['-u', 'postgres'])
    const { stdout: gid } = await run('id', ['-g', 'postgres'])
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()))
  }
  await asPostgres('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres'])
  const port = await freePort()
  const server = { url: `postgres://postgres@127.0.0.1:${port}/postgres`, dir, port }
  await startAgain(server)
  return server
}

/** A fast restart (`-m fast`: open sessions are cut), back when the server answers. */
export async function restartOwnServer(server: OwnServer): Promise<void> {
  // -l: the new postmaster writes to the log, not to our pipes (which would keep execFile waiting).
  await asPostgres('pg_ctl', [
    '-D',
    join(server.dir, 'data'),
    '-w',
    '-l',
    join(server.dir, 'log'),
    '-m',
    'fast',
    'restart',
  ])
}

/** Stops the server (fast: open sessions are cut) and keeps its data, for `startAgain`. */
export async function stopOnly(server: OwnServer): Promise<void> {
  await asPostgres('pg_ctl', ['-D', join(server.dir, 'data'), '-w', '-m', 'fast', 'stop'])
}

/** Starts a stopped server again on its port and folder. */
export async function startAgain(server: OwnServer): Promise<void> {
  await asPostgres('pg_ctl', [
    '-D',
    join(server.dir, 'data'),
    '-w',
    '-l',
    join(server.dir, 'log'),
    'start',
    '-o',
    `-p ${server.port} -k ${server.dir} -c listen_addresses=127.0.0.1`,
  ])
}

export async function stopOwnServer(server: OwnServer): Promise<void> {
  try {
    await asPostgres('pg_ctl', ['-D', join(server.dir, 'data'), '-w', '-m', 'immediate', 'stop'])
  } finally {
    rmSync(server.dir, { recursive: true, force: true })
  }
}
