// The glibc symbol versions an ELF shared object needs, read from its
// .gnu.version_r section (SHT_GNU_verneed): what the dynamic loader checks
// against the running glibc. Only 64-bit little-endian ELF (x86_64, aarch64).
import { readFileSync } from 'node:fs'

const SHT_GNU_VERNEED = 0x6ffffffe

/** Every version name (`GLIBC_2.14`, `GCC_3.0`, ...) the file needs, per library. */
export function neededVersions(path: string): Map<string, string[]> {
  const b = readFileSync(path)
  if (b.readUInt32BE(0) !== 0x7f454c46) throw new Error(`${path} is not ELF`)
  if (b[4] !== 2 || b[5] !== 1) throw new Error(`${path} is not 64-bit little-endian ELF`)
  const shoff = Number(b.readBigUInt64LE(0x28))
  const shentsize = b.readUInt16LE(0x3a)
  const shnum = b.readUInt16LE(0x3c)
  const section = (i: number) => {
    const at = shoff + i * shentsize
    return {
      type: b.readUInt32LE(at + 4),
      offset: Number(b.readBigUInt64LE(at + 0x18)),
      link: b.readUInt32LE(at + 0x28),
      info: b.readUInt32LE(at + 0x2c),
    }
  }
  const cstr = (at: number) => b.toString('latin1', at, b.indexOf(0, at))
  const out = new Map<string, string[]>()
  for (let i = 0; i < shnum; i++) {
    const s = section(i)
    if (s.type !== SHT_GNU_VERNEED) continue
    const strtab = section(s.link).offset
    // sh_info holds the number of Verneed entries.
    let need = s.offset
    for (let n = 0; n < s.info; n++) {
      const cnt = b.readUInt16LE(need + 2)
      const file = cstr(strtab + b.readUInt32LE(need + 4))
      const names: string[] = []
      let aux = need + b.readUInt32LE(need + 8)
      for (let k = 0; k < cnt; k++) {
        names.push(cstr(strtab + b.readUInt32LE(aux + 8)))
        aux += b.readUInt32LE(aux + 12)
      }
      out.set(file, [...(out.get(file) ?? []), ...names])
      need += b.readUInt32LE(need + 12)
    }
  }
  return out
}

/** The highest `GLIBC_x.y[.z]` version among `versions`, as numbers, or undefined. */
export function highestGlibc(versions: Map<string, string[]>): number[] | undefined {
  let best: number[] | undefined
  for (const names of versions.values())
    for (const name of names) {
      const m = /^GLIBC_(\d+(?:\.\d+)*)$/.exec(name)
      if (!m) continue
      const v = m[1]!.split('.').map(Number)
      if (!best || compareVersions(v, best) > 0) best = v
    }
  return best
}

export function compareVersions(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}
