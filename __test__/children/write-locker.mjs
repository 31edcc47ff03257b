// Holds a SQLite file's write lock from another process (a lock taken in the
// test's own process would not be seen: POSIX locks are per process). Started
// ahead of time so that taking the lock costs a line, not a process start:
// "lock" takes it and answers "locked", "unlock" releases it and answers
// "unlocked"; the process ends with its stdin.
import Database from 'better-sqlite3'
import { createInterface } from 'node:readline'

const db = new Database(process.argv[2])
process.stdout.write('ready\n')
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'lock') {
    db.exec('BEGIN IMMEDIATE')
    process.stdout.write('locked\n')
  } else if (line === 'unlock') {
    db.exec('ROLLBACK')
    process.stdout.write('unlocked\n')
  }
}
db.close()
