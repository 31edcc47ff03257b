/**
 * Where a journal lives. Both the runtime and the journal handle take one,
 * so it sits below both of them.
 */

/** The journal on PostgreSQL: a schema (default `loopx_hooks`) created on first use. */
export interface PostgresJournalTarget {
  /** A libpq-style URL or key=value string; never echoed in errors or output. */
  connectionString: string
  /** `[a-z_][a-z0-9_]*`, at most 48 bytes; default `loopx_hooks`. */
  schema?: string
  /**
   * PEM certificates that verify the server when the connection string says
   * `sslmode=require` (TLS by rustls); default: the Mozilla root store.
   */
  caFile?: string
  /**
   * The bound of one statement's round trip, ms (default 5000): the session's
   * `statement_timeout`, and how long the client waits for a server that
   * stopped answering. A read past it rejects `ERR_LOOPX_JOURNAL_UNAVAILABLE`.
   * Connecting is bounded by the connection string's `connect_timeout`
   * (seconds, default 5), which covers TCP, TLS, startup and authentication.
   */
  statementTimeoutMs?: number
  /**
   * How long a write retries a lost or unreachable server, ms (default
   * 15000), before it rejects `ERR_LOOPX_JOURNAL_UNAVAILABLE`.
   */
  writeRetryMs?: number
}

/**
 * Where a journal lives: a SQLite file path, a `postgres://` or
 * `postgresql://` URL (default schema), `{ path }`, or `{ postgres }`.
 */
export type JournalTarget = string | { path: string } | { postgres: PostgresJournalTarget }
