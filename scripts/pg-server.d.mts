// Types of scripts/pg-server.mjs (plain Node, no build step) for the tests and the benchmark.

export interface PgServer {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` (trust auth, loopback only). */
  url: string
  /** The data folder: also the Unix socket folder and the home of `log`; give it to stop/restart. */
  dir: string
  port: number
  /** The PEM CA of the server's TLS certificate (`ssl=on`), or null when openssl is missing. */
  ca: string | null
}

/** The absolute path of a PostgreSQL server binary (initdb, pg_ctl), or null. */
export function findBin(name: string): string | null
/** Starts a throwaway server (installs Debian's postgresql first when root and it is missing). */
export function start(): PgServer
/** Fast shutdown, then removes the data folder. */
export function stop(dir: string): void
/** Fast restart on the same port and folder; returns when the server answers again. */
export function restart(dir: string): void
