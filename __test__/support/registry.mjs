// A minimal npm registry on loopback for the pack test: it serves the
// packuments and tarballs of the .tgz files in one folder, and 404 for every
// other name, so npm resolves `loopx-hooks` and its optionalDependencies as it
// would from registry.npmjs.org (platform packages filtered by os/cpu/libc,
// unpublished ones skipped). Prints its port, then serves until killed.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { join } from 'node:path'

const dir = process.argv[2]
const packages = new Map()
for (const file of readdirSync(dir).filter((f) => f.endsWith('.tgz'))) {
  const bytes = readFileSync(join(dir, file))
  const manifest = JSON.parse(
    execFileSync('tar', ['-xOzf', join(dir, file), 'package/package.json'], { encoding: 'utf8' }),
  )
  packages.set(manifest.name, {
    file,
    bytes,
    manifest,
    integrity: 'sha512-' + createHash('sha512').update(bytes).digest('base64'),
    shasum: createHash('sha1').update(bytes).digest('hex'),
  })
}

const server = createServer((req, res) => {
  const url = decodeURIComponent(req.url ?? '/')
  const base = `http://127.0.0.1:${server.address().port}`
  const tarball = /^\/(.+)\/-\/([^/]+\.tgz)$/.exec(url)
  if (tarball) {
    const p = packages.get(tarball[1])
    if (p && p.file === tarball[2]) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      return res.end(p.bytes)
    }
  }
  const p = packages.get(url.slice(1))
  if (p && req.method === 'GET') {
    const version = {
      ...p.manifest,
      _id: `${p.manifest.name}@${p.manifest.version}`,
      dist: { tarball: `${base}/${p.manifest.name}/-/${p.file}`, integrity: p.integrity, shasum: p.shasum },
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    return res.end(
      JSON.stringify({
        name: p.manifest.name,
        'dist-tags': { latest: p.manifest.version },
        versions: { [p.manifest.version]: version },
      }),
    )
  }
  res.writeHead(404, { 'content-type': 'application/json' })
  res.end('{"error":"not_found"}')
})
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`))
