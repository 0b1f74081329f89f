import { flag, JSON_OPTION, text } from '../args.ts'
import type { CommandSpec } from '../args.ts'
import { ExitCode, usageError } from '../cli-error.ts'
import { stringifyJson } from '../context.ts'
import { storeEncryption } from '../store-keys.ts'
import { countOf } from '../terminal-text.ts'

const HELP = `Usage: agent-ledger rekey [--key-file F] [--key-store DIR] [--json]

Re-wraps every data key of the key store under the current key (the first of the key file or
AGENT_LEDGER_KEYS), for key rotation: no log is read or rewritten. Afterwards the old keys
can be removed from the key file. A data key whose wrapping key is not in the key file is
reported and left as it is.

Options:
  --key-file F     the key file (default $AGENT_LEDGER_KEY_FILE, else the key set in
                   $AGENT_LEDGER_KEYS): lines keyId:base64-of-32-bytes, the first current
  --key-store DIR  the key store directory (default $AGENT_LEDGER_KEY_STORE)
  --json           the report: {"rewrapped", "current", "unavailable": [{"dataKeyId", "keyId"}]}
  -h, --help       show this help

Exit codes:
  0  every data key is under the current key
  1  some data keys could not be unwrapped (listed)
  2  usage error (no key, no key store, a malformed key file)
`

/** `agent-ledger rekey`: key rotation without rewriting logs. */
export const rekeyCommand: CommandSpec = {
  name: 'rekey',
  summary: 're-wrap the data keys of encrypted sessions under the current key (logs untouched)',
  help: HELP,
  options: { 'key-file': { type: 'string' }, 'key-store': { type: 'string' }, json: JSON_OPTION },
  positionals: [],
  async run(context, args) {
    const encryption = storeEncryption(context.env, context.cwd, {
      keyFile: text(args, 'key-file'),
      keyStore: text(args, 'key-store'),
    })
    if (encryption === undefined) {
      throw usageError(
        'rekey: expected a key file and a key store (--key-file, --key-store or the environment), found neither',
      )
    }
    const report = await encryption.rekey()
    if (flag(args, 'json')) {
      await context.out.write(`${stringifyJson(report)}\n`)
    } else {
      await context.out.write(
        `rekey: re-wrapped ${countOf(report.rewrapped, 'data key')}, ${report.current} already current${report.unavailable.length === 0 ? '' : `; ${report.unavailable.length} could not be unwrapped:`}\n${report.unavailable
          .map((entry) => `  ${entry.dataKeyId}  wrapped under key ${entry.keyId}, not in the key file\n`)
          .join('')}`,
      )
    }
    return report.unavailable.length === 0 ? ExitCode.OK : ExitCode.DAMAGE
  },
}
