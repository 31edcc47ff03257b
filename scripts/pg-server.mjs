#!/usr/bin/env node
// A throwaway PostgreSQL server for the tests and the benchmark: initdb into a
// fresh temporary folder, listen on 127.0.0.1 on a free port, trust auth for
// the `postgres` role, default durability (fsync and synchronous_commit on,
// so a benchmark compares like with like). Plain Node, no dependencies.
//
//   node scripts/pg-server.mjs start [--env]   prints the URL and the data folder
//                                               (--env: LOOPX_TEST_PG_URL=... and
//                                               LOOPX_TEST_PG_DIR=... lines for eval)
//   node scripts/pg-server.mjs stop DIR         fast shutdown, then removes DIR
//   node scripts/pg-server.mjs restart DIR      fast restart, same port and folder
//
// As a module: start(), stop(dir), restart(dir), findBin(name).
// initdb refuses to run as root, so root runs the binaries as `postgres`
// (runuser); any other user runs them directly and owns the folder.
// Without the binaries, root installs Debian's `postgresql` package first.
import { execFileSync, spawnSync } from 'node:child_process'
import {
  accessSync,
  chownSync,
  constants,
  existsSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join, parse } from 'node:path'
import { fileURLToPath } from 'node:url'

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0

function executable(path) {
  try {
    accessSync(path, constants.X_OK)
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** Debian keeps the server binaries in /usr/lib/postgresql/<major>/bin, off the PATH; newest major first. */
function debianBinDirs() {
  const base = '/usr/lib/postgresql'
  if (!existsSync(base)) return []
  return readdirSync(base)
    .filter((v) => /^\d+(\.\d+)?$/.test(v))
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => join(base, v, 'bin'))
}

/** The absolute path of a PostgreSQL server binary (initdb, pg_ctl), or null. */
export function findBin(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const p = join(dir, name)
    // Resolved, so that pg_ctl finds its `postgres` beside its real file.
    if (executable(p)) return realpathSync(p)
  }
  for (const dir of debianBinDirs()) {
    const p = join(dir, name)
    if (executable(p)) return p
  }
  return null
}

/** initdb and pg_ctl from one installation, installing Debian's package when they are missing (root only). */
function binaries() {
  let initdb = findBin('initdb')
  let pgCtl = findBin('pg_ctl')
  if (initdb && pgCtl) return { initdb, pgCtl }
  if (!isRoot()) {
    throw new Error(
      'pg-server: initdb/pg_ctl not found on PATH or in /usr/lib/postgresql/*/bin; install PostgreSQL (Debian: apt-get install postgresql) or set LOOPX_TEST_PG_URL',
    )
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const apt = (args) => spawnSync('apt-get', args, { env, stdio: ['ignore', 'inherit', 'inherit'] }).status === 0
  process.stderr.write('pg-server: PostgreSQL not found; apt-get install -y postgresql\n')
  // A fresh machine may have no package lists yet: update and try once more.
  if (!apt(['install', '-y', '--no-install-recommends', 'postgresql'])) {
    if (!apt(['update']) || !apt(['install', '-y', '--no-install-recommends', 'postgresql'])) {
      throw new Error('pg-server: apt-get install postgresql failed')
    }
  }
  initdb = findBin('initdb')
  pgCtl = findBin('pg_ctl')
  if (!initdb || !pgCtl) throw new Error('pg-server: postgresql installed, but initdb/pg_ctl are still missing')
  return { initdb, pgCtl }
}

/** Runs a server binary, as `postgres` when we are root; throws with its output on failure. */
function run(bin, args) {
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args]
  // cwd: a folder `postgres` may enter (root's own cwd may be closed to it).
  const res = spawnSync(cmd, argv, { cwd: '/', encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  if (res.status !== 0) {
    const out = `${res.stdout ?? ''}${res.stderr ?? ''}`.trim()
    throw new Error(`pg-server: ${parse(bin).name} ${args[0] ?? ''} failed (status ${res.status}): ${out}`)
  }
  return res.stdout
}

/** A port nobody listens on right now (the server may still lose a race for it: start() retries). */
function freePort() {
  const script =
    "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})"
  // A child process keeps start() synchronous, so it also works where top-level await does not.
  return Number(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }))
}

/** A parent for the data folder that `postgres` can reach when we are root (every ancestor searchable by others). */
function baseDir() {
  const base = tmpdir()
  if (!isRoot()) return base
  for (let d = base; ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return '/tmp'
    if (dirname(d) === d) return base
  }
}

/**
 * A throwaway CA and a server certificate for 127.0.0.1 and localhost, made
 * with openssl in `dir`, so the tests can prove TLS with verification
 * (`sslmode=require` and the CA file). Answers the CA file, or null without
 * openssl (the server then runs without TLS).
 */
function certificates(dir, owner) {
  const openssl = (args) => spawnSync('openssl', args, { cwd: dir, stdio: 'ignore' }).status === 0
  writeFileSync(
    join(dir, 'server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n',
  )
  const made =
    openssl([
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '7',
      '-subj',
      '/CN=loopx-hooks test CA',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
    ]) &&
    openssl([
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      '/CN=127.0.0.1',
      '-keyout',
      'server.key',
      '-out',
      'server.csr',
    ]) &&
    openssl([
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '7',
      '-extfile',
      'server.ext',
      '-out',
      'server.crt',
    ])
  if (!made) return null
  // The server refuses a key others may read; it must be its own.
  if (owner) for (const f of ['server.key', 'server.crt']) chownSync(join(dir, f), owner.uid, owner.gid)
  rmSync(join(dir, 'ca.key'))
  return join(dir, 'ca.crt')
}

function opts(dir, port, tls) {
  const ssl = tls ? ` -c ssl=on -c ssl_cert_file=${dir}/server.crt -c ssl_key_file=${dir}/server.key` : ''
  return `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1${ssl}`
}

/**
 * Starts a throwaway server. Returns { url, dir, port, ca }; `dir` is the data
 * folder (also the Unix socket folder and the home of `log`), for stop/restart;
 * `ca` the PEM CA of its TLS certificate (null when openssl is missing).
 */
export function start() {
  const { initdb, pgCtl } = binaries()
  const dir = mkdtempSync(join(baseDir(), 'loopx-pg-'))
  try {
    let owner = null
    if (isRoot()) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }))
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }))
      chownSync(dir, uid, gid)
      owner = { uid, gid }
    }
    run(initdb, ['-D', dir, '-A', 'trust', '-U', 'postgres', '--no-instructions', '-E', 'UTF8', '--locale', 'C'])
    const ca = certificates(dir, owner)
    for (let tries = 1; ; tries++) {
      const port = freePort()
      try {
        run(pgCtl, ['-D', dir, '-w', '-t', '60', '-l', join(dir, 'log'), '-o', opts(dir, port, ca !== null), 'start'])
        return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, dir, port, ca }
      } catch (e) {
        if (tries >= 3) throw e
      }
    }
  } catch (e) {
    rmSync(dir, { recursive: true, force: true })
    throw e
  }
}

/** Fast shutdown (open sessions are ended), then the folder is removed. */
export function stop(dir) {
  const pgCtl = findBin('pg_ctl')
  try {
    if (pgCtl && existsSync(join(dir, 'postmaster.pid'))) run(pgCtl, ['-D', dir, '-w', '-m', 'fast', 'stop'])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Fast restart on the same port and folder: sessions are cut, the server answers again when this returns. */
export function restart(dir) {
  const pgCtl = findBin('pg_ctl')
  if (!pgCtl) throw new Error('pg-server: pg_ctl not found')
  // -l again: without it the new postmaster would write to (and hold open) our stdout.
  run(pgCtl, ['-D', dir, '-w', '-t', '60', '-m', 'fast', '-l', join(dir, 'log'), 'restart'])
}

const quote = (s) => `'${s.replaceAll("'", "'\\''")}'`

function main(argv) {
  const [cmd, arg] = argv
  if (cmd === 'start') {
    const { url, dir, ca } = start()
    process.stdout.write(
      arg === '--env'
        ? `LOOPX_TEST_PG_URL=${quote(url)}\nLOOPX_TEST_PG_DIR=${quote(dir)}\nLOOPX_TEST_PG_CA=${quote(ca ?? '')}\n`
        : `${url}\n${dir}\n`,
    )
  } else if ((cmd === 'stop' || cmd === 'restart') && arg) {
    if (cmd === 'stop') stop(arg)
    else restart(arg)
  } else {
    process.stderr.write('usage: pg-server.mjs start [--env] | stop DIR | restart DIR\n')
    process.exit(2)
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2))
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`)
    process.exit(1)
  }
}
