// vitest globalSetup: one throwaway PostgreSQL server (scripts/pg-server.mjs)
// for the whole run, unless LOOPX_TEST_PG_URL names one already (set by the
// user, or by scripts/test.sh, which starts one for cargo test and python too).
// Every test file gets the URL and the data folder two ways: `inject('pgUrl')`
// / `inject('pgDir')`, and LOOPX_TEST_PG_URL / LOOPX_TEST_PG_DIR in its
// environment (the forked workers and the children they spawn inherit it).
// `pgDir` is null for a server this run did not start. A test that restarts a
// server starts its own (pg-server's start()): restarting the shared one would
// cut every other file's connections.
import type { TestProject } from 'vitest/node'

import { start, stop } from '../scripts/pg-server.mjs'

declare module 'vitest' {
  export interface ProvidedContext {
    pgUrl: string
    pgDir: string | null
  }
}

export default function setup(project: TestProject): () => void {
  const given = process.env.LOOPX_TEST_PG_URL
  if (given) {
    project.provide('pgUrl', given)
    project.provide('pgDir', process.env.LOOPX_TEST_PG_DIR || null)
    return () => {}
  }
  const server = start()
  process.env.LOOPX_TEST_PG_URL = server.url
  process.env.LOOPX_TEST_PG_DIR = server.dir
  if (server.ca !== null) process.env.LOOPX_TEST_PG_CA = server.ca
  project.provide('pgUrl', server.url)
  project.provide('pgDir', server.dir)
  return () => {
    delete process.env.LOOPX_TEST_PG_URL
    delete process.env.LOOPX_TEST_PG_DIR
    delete process.env.LOOPX_TEST_PG_CA
    stop(server.dir)
  }
}
