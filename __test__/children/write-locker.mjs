// Holds a SQLite file's write lock from another process (a lock taken in the
// test's own process would not be seen: POSIX locks are per process) until
// its stdin closes.
import Database from 'better-sqlite3'

const db = new Database(process.argv[2])
db.exec('BEGIN IMMEDIATE')
process.stdout.write('locked\n')
process.stdin.resume()
process.stdin.on('end', () => {
  db.exec('ROLLBACK')
  db.close()
  process.exit(0)
})
