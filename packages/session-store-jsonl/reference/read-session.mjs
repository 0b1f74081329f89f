#!/usr/bin/env node
// Reference reader for agent-ledger session files, format version 4 (see ../FORMAT.md).
// Plain Node, no dependencies. Prints every event as one JSON line (without "crc").
// Exit codes: 0 clean or torn tail (reported on stderr), 2 damage or refused header, 1 usage.
import { closeSync, openSync, readSync } from 'node:fs'
import { basename, dirname, resolve } from 'node:path'

const MAX_LINE_BYTES = 64 * 1024 * 1024
const MAX_DEPTH = 256
const CORE_TYPES = new Set([
  'turn/start',
  'turn/end',
  'system/message',
  'user/message',
  'assistant/message',
  'tool/call',
  'tool/result',
  'compaction/start',
  'compaction/summary',
  'compaction/end',
  'session/end-seed',
  'session/salvage',
])

// CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, one table lookup per byte.
const TABLE = new Uint32Array(256)
for (let n = 0; n < 256; n += 1) {
  let c = n
  for (let k = 0; k < 8; k += 1) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
  TABLE[n] = c >>> 0
}
function crc32c(bytes) {
  let crc = 0xffffffff
  for (let i = 0; i < bytes.length; i += 1) crc = TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

const SUFFIX = /^,"crc":"[0-9a-f]{8}"\}$/
function checksumOk(line) {
  if (line.length <= 18) return false
  const suffix = line.subarray(line.length - 18).toString('latin1')
  if (!SUFFIX.test(suffix)) return false
  return crc32c(line.subarray(0, line.length - 18)) === Number.parseInt(suffix.slice(8, 16), 16)
}

function depthOver(line, limit) {
  let depth = 0
  let inString = false
  for (let i = 0; i < line.length; i += 1) {
    const b = line[i]
    if (inString) {
      if (b === 0x5c) i += 1
      else if (b === 0x22) inString = false
    } else if (b === 0x22) inString = true
    else if (b === 0x7b || b === 0x5b) {
      if (++depth > limit) return true
    } else if (b === 0x7d || b === 0x5d) depth -= 1
  }
  return false
}

const utf8 = new TextDecoder('utf-8', { fatal: true })
// Checks 2-7 of FORMAT.md section 6: returns { value } or { reason, checksumValid, object? }.
function decode(line) {
  if (line.length > MAX_LINE_BYTES) return { reason: 'too-large', checksumValid: false }
  let text
  try {
    text = utf8.decode(line)
  } catch {
    return { reason: 'utf8', checksumValid: false }
  }
  if (depthOver(line, MAX_DEPTH)) return { reason: 'too-deep', checksumValid: checksumOk(line) }
  let value
  try {
    value = JSON.parse(text)
  } catch {
    return { reason: 'json', checksumValid: false }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { reason: 'not-object', checksumValid: false }
  if (!checksumOk(line)) return { reason: 'checksum', checksumValid: false, object: value }
  delete value.crc
  return { value }
}

// A valid event line glued inside a failed one (a torn line followed by a careless append).
function glued(line) {
  for (let at = line.indexOf('{"seq":', 1); at !== -1; at = line.indexOf('{"seq":', at + 1)) {
    if (decode(line.subarray(at)).value !== undefined) return at
  }
  return -1
}

const own = (object, key) => (Object.hasOwn(object, key) ? object[key] : undefined)

function fail(message) {
  process.stderr.write(`${message}\n`)
  process.exit(2)
}

const path = process.argv[2]
if (path === undefined) {
  process.stderr.write('usage: read-session.mjs <session.v4.jsonl>\n')
  process.exit(1)
}

const expectedId = basename(dirname(resolve(path)))
const fd = openSync(path, 'r')
let position = 0
let carry = []
let carryLength = 0
let lineNumber = 0
let lastSeq = -1
let headerSeen = false
let suspect = null // the first failed line while no later valid line is known
const out = []

function flushOut() {
  if (out.length > 0) process.stdout.write(out.join(''))
  out.length = 0
}

function damage(what, at) {
  flushOut()
  fail(`damaged: ${what} at line ${at.line}, byte offset ${at.offset} (last good seq ${lastSeq})`)
}

function onLine(line, offset) {
  lineNumber += 1
  const at = { line: lineNumber, offset }
  const decoded = decode(line)
  if (suspect !== null) {
    if (decoded.value !== undefined || decoded.checksumValid || glued(line) !== -1) {
      damage(`line failing the ${suspect.reason} check, followed by valid data,`, suspect)
    }
    return
  }
  if (lineNumber === 1) {
    // The header line: its own checks first, checksum included (FORMAT.md section 8). A
    // complete header line failing them is damage: no crash leaves one (section 7).
    if (decoded.value === undefined) damage(`header line failing the ${decoded.reason} check`, at)
    const header = decoded.value
    if (own(header, 'format') !== 'agent-ledger.session') fail('not an agent-ledger header at line 1')
    const version = own(header, 'version')
    if (typeof version === 'number' && version > 4)
      fail(`written by a newer agent-ledger (format version ${version}); upgrade`)
    if (version !== 4) fail('unsupported header version at line 1')
    if (own(header, 'integrity') !== 'crc32c') fail('unsupported integrity scheme at line 1')
    // The id names the session directory the log sits in (section 3).
    if (own(header, 'id') !== expectedId)
      fail(
        `header id ${JSON.stringify(own(header, 'id'))} at line 1 is not the directory's ${JSON.stringify(expectedId)}`,
      )
    headerSeen = true
    return
  }
  if (decoded.value === undefined) {
    if (decoded.reason === 'too-large') damage('line longer than the limit', at)
    if (decoded.checksumValid) damage(`checksummed line failing the ${decoded.reason} check`, at)
    if (glued(line) !== -1) damage(`line failing the ${decoded.reason} check with a valid line glued on`, at)
    suspect = { reason: decoded.reason, ...at }
    return
  }
  const value = decoded.value
  const seq = own(value, 'seq')
  if (!Number.isSafeInteger(seq) || seq < 0) damage('invalid seq', at)
  if (seq !== lastSeq + 1) damage(`seq ${seq} where ${lastSeq + 1} was expected`, at)
  const type = own(value, 'type')
  if (typeof type !== 'string' || (!CORE_TYPES.has(type) && own(value, 'ignorable') !== true)) {
    damage(`unknown event type ${JSON.stringify(type)}`, at)
  }
  lastSeq = seq
  out.push(`${JSON.stringify(value)}\n`)
  if (out.length >= 1000) flushOut()
}

const chunk = Buffer.alloc(1024 * 1024)
for (;;) {
  const count = readSync(fd, chunk, 0, chunk.length, position)
  if (count === 0) break
  const bytes = Buffer.from(chunk.subarray(0, count))
  let start = 0
  for (let nl = bytes.indexOf(0x0a); nl !== -1; nl = bytes.indexOf(0x0a, start)) {
    const piece = bytes.subarray(start, nl)
    const line = carryLength === 0 ? piece : Buffer.concat([...carry, piece])
    onLine(line, position + start - carryLength)
    carry = []
    carryLength = 0
    start = nl + 1
  }
  if (start < count) {
    carry.push(bytes.subarray(start))
    carryLength += count - start
  }
  position += count
}
closeSync(fd)
flushOut()
if (suspect !== null)
  process.stderr.write(
    `torn tail: ${position - suspect.offset} bytes from offset ${suspect.offset} (not events)\n`,
  )
else if (carryLength > 0)
  process.stderr.write(`torn tail: ${carryLength} bytes from offset ${position - carryLength} (not events)\n`)
if (!headerSeen) process.stderr.write('no valid header: an empty session\n')
